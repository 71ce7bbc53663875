"""Raters (anonymous participants), their background groups with quotas, and their sessions."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q

from apps.core.models import TimeStampedModel
from apps.studies.models import Study

DEFAULT_BACKGROUNDS: list[tuple[str, dict[str, str]]] = [
    ("technical", {"en": "Technical", "zh": "技术"}),
    ("content_operations", {"en": "Content / operations", "zh": "内容 / 运营"}),
    ("administrative_support", {"en": "Administrative support", "zh": "行政支持"}),
    ("traditional_industries", {"en": "Traditional industries", "zh": "传统行业"}),
]

# What an imported judgment says when the rater's background is not known. Such raters belong
# to no group: cross-group figures leave them out and say how many there are.
UNKNOWN_BACKGROUND = "unknown"


class AgeBand(models.TextChoices):
    AGE_18_24 = "18-24", "18–24"
    AGE_25_34 = "25-34", "25–34"
    AGE_35_44 = "35-44", "35–44"
    AGE_45_54 = "45-54", "45–54"
    AGE_55_64 = "55-64", "55–64"
    AGE_65_PLUS = "65+", "65+"
    UNDISCLOSED = "undisclosed", "Prefer not to say"


class BackgroundGroup(models.Model):
    """A rater background with an enrolment quota (None = no limit)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="background_groups")
    code = models.SlugField(max_length=64)
    label = models.JSONField(default=dict, help_text='Per language: {"en": ..., "zh": ...}.')
    position = models.PositiveSmallIntegerField(default=0)
    quota = models.PositiveIntegerField(null=True, blank=True)
    # Places held by enrolled raters; a returned or timed-out session gives its place back. In a
    # study with one language, the raters holding one, only ever changed by a conditional UPDATE
    # (`filled < quota` to take, `filled - 1` to give back). In a study with several, the quota
    # counts per language (up to `quota` raters of the group for each language) and this is the
    # places held in the group's fullest language, set under the group's row lock.
    filled = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["study", "position", "code"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "code"], name="background_code_unique_in_study"
            ),
            models.CheckConstraint(
                condition=Q(quota__isnull=True) | Q(filled__lte=F("quota")),
                name="background_filled_within_quota",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug}/{self.code}"


class Rater(TimeStampedModel):
    class Origin(models.TextChoices):
        ENROLLED = "enrolled", "Enrolled in the browser"
        IMPORTED = "imported", "Imported with judgments"

    # Indexed by the unique (study, external id), not on its own.
    study = models.ForeignKey(
        Study, on_delete=models.CASCADE, related_name="raters", db_index=False
    )
    external_id = models.CharField(
        max_length=128, help_text="Prolific PID, imported id or generated."
    )
    # None: unknown (imported raters whose background was not recorded).
    background = models.ForeignKey(
        BackgroundGroup,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="raters",
    )
    age_band = models.CharField(max_length=16, choices=AgeBand.choices, default=AgeBand.UNDISCLOSED)
    # The interface language the rater enrolled in.
    language = models.CharField(max_length=16, blank=True)
    # The study's languages this rater reads and is given work in, e.g. ["en", "zh"]. Empty: not
    # stated (imported without it, or enrolled before raters were asked): no restriction.
    languages = models.JSONField(default=list, blank=True)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.ENROLLED)
    consent_at = models.DateTimeField(null=True, blank=True)
    prolific_study_id = models.CharField(max_length=64, blank=True)
    prolific_session_id = models.CharField(max_length=64, blank=True)
    # Enrolled through a Prolific link (a PROLIFIC_PID): only such a rater is shown Prolific's
    # completion code and its way back; anyone else has no Prolific submission to complete.
    from_prolific = models.BooleanField(default=False)
    # When the rater's place in their group's quota was given back (their session was returned
    # or timed out): set once, by a conditional UPDATE, so a place is never given back twice.
    place_released_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study", "external_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "external_id"], name="rater_id_unique_in_study"
            ),
            models.CheckConstraint(
                condition=Q(origin="imported") | Q(consent_at__isnull=False),
                name="enrolled_rater_has_consent",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug}/{self.external_id}"


class RaterSession(models.Model):
    class EndReason(models.TextChoices):
        COMPLETED = "completed", "Completed"
        TIMED_OUT = "timed_out", "Timed out"
        WITHDRAWN = "withdrawn", "Withdrawn"
        # Returned on Prolific: said by the rater on our page, or marked by the researcher.
        RETURNED = "returned", "Returned"
        IMPORTED = "imported", "Imported"

    # Indexed by its unique constraint (one session per rater), not on its own.
    rater = models.ForeignKey(
        Rater, on_delete=models.CASCADE, related_name="sessions", db_index=False
    )
    started_at = models.DateTimeField()
    deadline = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.CharField(max_length=16, choices=EndReason.choices, blank=True)

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            # A participant who comes back resumes their session; never a second one.
            models.UniqueConstraint(fields=["rater"], name="one_session_per_rater"),
            models.CheckConstraint(
                condition=Q(deadline__gt=F("started_at")), name="session_deadline_after_start"
            ),
            models.CheckConstraint(
                condition=(Q(ended_at__isnull=True) & Q(end_reason=""))
                | (Q(ended_at__isnull=False) & ~Q(end_reason="")),
                name="session_end_has_reason",
            ),
        ]

    def __str__(self) -> str:
        return f"session of {self.rater}"
