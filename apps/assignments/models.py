"""Tasks handed to raters: which item (or pair) a rater is shown, in what order, and what became of it.

The server decides every task; the page only shows the one it was given. An assignment is the
claim that stops two raters from over-filling an item's target at the same moment.
"""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Greatest, Least

from apps.raters.models import Rater, RaterSession
from apps.studies.models import Item, Study


class Assignment(models.Model):
    class Kind(models.TextChoices):
        SCORECARD = "scorecard", "Scorecard"
        PAIR = "pair", "A/B pair"
        TURING = "turing", "AI or person?"

    class Status(models.TextChoices):
        PENDING = "pending", "Shown, not answered"
        DONE = "done", "Answered"
        EXPIRED = "expired", "Session ended first"

    # `study` and `session` have no index of their own: the (study, kind, ...) indexes and the
    # unique (session, position) begin with them. `rater` keeps its own: the indexes led by it
    # are partial, and serve only the look-ups their conditions imply.
    study = models.ForeignKey(
        Study, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="assignments")
    session = models.ForeignKey(
        RaterSession, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # Scorecard and Turing tasks show one item; a pair shows `item` on the left and `right_item`
    # on the right, placement drawn at random and kept here.
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    right_item = models.ForeignKey(
        Item, on_delete=models.CASCADE, null=True, blank=True, related_name="right_assignments"
    )
    # 1, 2, 3... within the session: the order the rater saw tasks in.
    position = models.PositiveIntegerField()
    is_attention_check = models.BooleanField(default=False)
    # For attention checks: did the answer fall within the expected answers?
    attention_passed = models.BooleanField(null=True, blank=True)
    # Why this task was chosen (warm-up, adaptive, coverage...), for audit of the assignment rules.
    reason = models.CharField(max_length=32, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["session", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "position"], name="assignment_position_unique"
            ),
            # One open task per rater: the page can only ever be answering one.
            models.UniqueConstraint(
                fields=["rater"],
                condition=Q(status="pending"),
                name="one_pending_assignment_per_rater",
            ),
            # Never the same task twice to one rater.
            models.UniqueConstraint(
                fields=["rater", "kind", "item"],
                condition=Q(right_item__isnull=True),
                name="assignment_single_item_once_per_rater",
            ),
            models.UniqueConstraint(
                "rater",
                Least("item", "right_item"),
                Greatest("item", "right_item"),
                condition=Q(right_item__isnull=False),
                name="assignment_pair_once_per_rater",
            ),
            models.CheckConstraint(
                condition=(Q(kind="pair") & Q(right_item__isnull=False) & ~Q(right_item=F("item")))
                | (~Q(kind="pair") & Q(right_item__isnull=True)),
                name="assignment_pair_has_two_items",
            ),
        ]
        indexes = [
            models.Index(fields=["study", "kind", "item", "status"]),
            models.Index(fields=["study", "kind", "right_item", "status"]),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.position} for {self.rater_id}"
