"""A researcher's API tokens. Only a hash of each key is stored: the key is shown once, when the
token is made, and a copy of the database (a backup, a leaked dump) holds nothing that opens the
API."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from apps.studies.models import Study


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    # sha256 of the key, hex. The key is 256 random bits, so a plain hash is enough: there is
    # nothing to guess that a slow, salted hash would protect.
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Limited to `studies` (those the user may still see). A flag and not "an empty list means
    # all": a limited token whose studies are all deleted must see none, not every study.
    limited = models.BooleanField(default=False)
    studies = models.ManyToManyField(Study, blank=True, related_name="+")

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(condition=~Q(name=""), name="api_token_name_not_empty"),
            models.UniqueConstraint(
                fields=["user", "name"],
                condition=Q(revoked_at__isnull=True),
                name="api_token_name_unique_while_active",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} / {self.name}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
