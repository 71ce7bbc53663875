"""Exclusions: what a study's analysis leaves out, by whom, when and why; never a deletion.

An exclusion names one rater (all their judgments), one judgment, or one item. Undoing it keeps
the row (with who undid it and when), so the history of every analysis choice stays readable.
Rules propose exclusions from the raw data (failed attention checks, speeders, straight-liners,
position-only pair choices, anomalous pair and Turing choices); a researcher confirms or
dismisses them, or a study setting makes them automatic (except anomalous choices, which are
only ever proposed).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from apps.raters.models import Rater
from apps.studies.models import Item, Study


class Rule(models.TextChoices):
    ATTENTION = "attention", _("Failed attention checks")
    SPEEDER = "speeder", _("Speeder")
    STRAIGHT_LINE = "straight_line", _("Straight-liner")
    POSITION = "position", _("Position-only pair choices")
    ANOMALOUS = "anomalous", _("Anomalous choices")


# Rules whose proposals always wait for a researcher, even when a study applies the rules
# automatically: a statistical screen flags some careful raters too (apps/analysis/stats/
# pair_raters.py: about 1-3% of honest raters), so only a person may accept its finding.
PROPOSE_ONLY = frozenset({Rule.ANOMALOUS})


class JudgmentKind(models.TextChoices):
    SCORECARD = "scorecard", _("Scorecard")
    PAIR = "pair", _("Pair")
    TURING = "turing", _("Turing")


class Exclusion(models.Model):
    class Target(models.TextChoices):
        RATER = "rater", _("Rater")
        JUDGMENT = "judgment", _("Judgment")
        ITEM = "item", _("Item")

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="exclusions")
    target = models.CharField(max_length=16, choices=Target.choices)
    rater = models.ForeignKey(
        Rater, null=True, blank=True, on_delete=models.CASCADE, related_name="exclusions"
    )
    item = models.ForeignKey(
        Item, null=True, blank=True, on_delete=models.CASCADE, related_name="exclusions"
    )
    # A judgment lives in one of three tables; kind + primary key name it.
    judgment_kind = models.CharField(max_length=16, choices=JudgmentKind.choices, blank=True)
    judgment_id = models.BigIntegerField(null=True, blank=True)
    reason = models.TextField()
    # A rule's reason as a sentence (apps/core/sentences.py), shown in the reader's language;
    # empty when a researcher wrote the reason (or on rows stored before reasons were so).
    reason_message = models.JSONField(default=dict, blank=True)
    # The rule that proposed it ("" when a researcher excluded by hand), and its evidence.
    rule = models.CharField(max_length=16, choices=Rule.choices, blank=True)
    evidence = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    undone_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    undo_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["study", "-created_at"]
        constraints = [
            models.CheckConstraint(condition=~Q(reason=""), name="exclusion_reason_required"),
            models.CheckConstraint(
                condition=(
                    Q(
                        target="rater",
                        rater__isnull=False,
                        item__isnull=True,
                        judgment_id__isnull=True,
                    )
                    | Q(
                        target="item",
                        item__isnull=False,
                        rater__isnull=True,
                        judgment_id__isnull=True,
                    )
                    | Q(
                        target="judgment",
                        judgment_id__isnull=False,
                        rater__isnull=True,
                        item__isnull=True,
                    )
                    & ~Q(judgment_kind="")
                ),
                name="exclusion_names_one_target",
            ),
            # At most one active exclusion per target; undone ones stay as history.
            models.UniqueConstraint(
                fields=["study", "rater"],
                condition=Q(undone_at__isnull=True, target="rater"),
                name="one_active_rater_exclusion",
            ),
            models.UniqueConstraint(
                fields=["study", "item"],
                condition=Q(undone_at__isnull=True, target="item"),
                name="one_active_item_exclusion",
            ),
            models.UniqueConstraint(
                fields=["study", "judgment_kind", "judgment_id"],
                condition=Q(undone_at__isnull=True, target="judgment"),
                name="one_active_judgment_exclusion",
            ),
        ]
        indexes = [models.Index(fields=["study", "undone_at"])]

    def __str__(self) -> str:
        return f"exclusion of {self.target} in {self.study_id}"

    @property
    def is_active(self) -> bool:
        return self.undone_at is None


class ExclusionProposal(models.Model):
    """A rule's finding about one rater, waiting for a researcher (or applied automatically)."""

    class Status(models.TextChoices):
        OPEN = "open", _("Open")
        CONFIRMED = "confirmed", _("Confirmed")
        DISMISSED = "dismissed", _("Dismissed")

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="exclusion_proposals")
    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="exclusion_proposals")
    rule = models.CharField(max_length=16, choices=Rule.choices)
    evidence = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    exclusion = models.ForeignKey(
        Exclusion, null=True, blank=True, on_delete=models.SET_NULL, related_name="proposals"
    )
    found_at = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["study", "rule", "rater"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "rater", "rule"], name="one_proposal_per_rater_and_rule"
            )
        ]

    def __str__(self) -> str:
        return f"{self.rule} proposal for {self.rater_id}"
