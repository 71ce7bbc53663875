"""Studies, their rubrics (ordered questions) and the items raters judge."""

from __future__ import annotations

import secrets
from collections.abc import Collection, Iterable
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from apps.core.models import TimeStampedModel


def _new_seed() -> int:
    # 31 bits: fits every database's signed integer and numpy's SeedSequence alike.
    return secrets.randbits(31)


def _default_languages() -> list[str]:
    return ["en", "zh"]


def _default_task_mix() -> dict[str, float]:
    return {"scorecard": 0.6, "pair": 0.3, "turing": 0.1}


class Rubric(TimeStampedModel):
    class Kind(models.TextChoices):
        HUMOR = "humor", "Humor"
        CONTENT = "content", "Content"

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    builtin = models.BooleanField(default=False, help_text="Shipped with LaughLab; not editable.")
    # The question the headline results, leaderboard, LLM judge comparison, FunnyScore
    # calibration and screening target follow (the humor scorecard: funniness). A scale question
    # of this rubric; rubrics.primary_question_default chooses one when a spec names none.
    primary_question = models.CharField(max_length=64, blank=True, default="")

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def mark_changed(rubric_ids: Iterable[int | None]) -> None:
        """Move these rubrics' `updated_at`: their questions changed, and each process keeps a
        rubric's questions under that stamp (selectors.study_questions)."""
        ids = {pk for pk in rubric_ids if pk is not None}
        if ids:
            Rubric.objects.filter(pk__in=ids).update(updated_at=timezone.now())


class QuestionQuerySet(models.QuerySet["Question"]):
    """Bulk writes mark their rubrics changed, as saving one question does (signals.py): a
    bulk write sends no signal. `bulk_update` goes through `update`."""

    def update(self, **kwargs: Any) -> int:
        # Read first: the update may move questions to another rubric, and both have changed.
        rubric_ids = set(self.values_list("rubric_id", flat=True))
        changed = super().update(**kwargs)
        moved_to = kwargs.get("rubric_id", kwargs.get("rubric"))
        if moved_to is not None:
            rubric_ids.add(getattr(moved_to, "pk", moved_to))
        Rubric.mark_changed(rubric_ids)
        return changed

    def bulk_create(
        self,
        objs: Iterable[Any],
        batch_size: int | None = None,
        ignore_conflicts: bool = False,
        update_conflicts: bool = False,
        update_fields: Collection[str] | None = None,
        unique_fields: Collection[str] | None = None,
    ) -> list[Any]:
        created = super().bulk_create(
            objs,
            batch_size=batch_size,
            ignore_conflicts=ignore_conflicts,
            update_conflicts=update_conflicts,
            update_fields=update_fields,
            unique_fields=unique_fields,
        )
        Rubric.mark_changed(question.rubric_id for question in created)
        return created


class Question(models.Model):
    class Kind(models.TextChoices):
        LIKERT = "likert", "Likert scale"
        BINARY = "binary", "Binary flag"
        CHOICE = "choice", "Single choice"
        SLIDER = "slider", "Slider (continuous)"

    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="questions")
    name = models.SlugField(max_length=64, help_text="Stable key used in imports and exports.")
    position = models.PositiveSmallIntegerField(help_text="Order on the scorecard, from 1.")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # Likert and binary answers are integers in [min_value, max_value]; a choice question stores
    # the index of the chosen option; a slider's answers are min_value + k * step (scales.py).
    min_value = models.SmallIntegerField(default=1)
    max_value = models.SmallIntegerField(default=5)
    # A slider's step (e.g. 1/32 = 0.03125, 0.01, 1); null for the integer kinds.
    step = models.FloatField(null=True, blank=True)

    class Entry(models.TextChoices):
        AUTO = "", "Points up to 11, else a number field with a slider"
        POINTS = "points", "A row of points"
        FIELD = "field", "A number field with a slider"

    # How a likert question is shown to raters: the study's choice, or by its width.
    entry = models.CharField(max_length=8, choices=Entry.choices, blank=True, default="")
    required = models.BooleanField(default=True)
    # Offers "I don't get it": stored as its own outcome (judgments.NotUnderstood), never as a
    # number, left out of means and agreement and reported as a rate. Never on a question
    # others depend on (their order rule needs a value).
    allow_not_understood = models.BooleanField(default=False)
    # Per language: {"en": "How surprising ...?", "zh": "..."}.
    prompt = models.JSONField(default=dict)
    # Per language, per scale point: {"en": {"1": "Not at all", "7": "Laughed out loud"}}.
    anchors = models.JSONField(default=dict, blank=True)
    # Choice questions: [{"en": "...", "zh": "..."}, ...]; index = stored value.
    choices = models.JSONField(default=list, blank=True)
    answered_after = models.ManyToManyField(
        "self",
        symmetrical=False,
        blank=True,
        related_name="unlocks",
        help_text="Questions that must be answered before this one (the server enforces it).",
    )

    objects = QuestionQuerySet.as_manager()

    class Meta:
        ordering = ["rubric", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["rubric", "name"], name="question_name_unique_in_rubric"
            ),
            models.UniqueConstraint(
                fields=["rubric", "position"], name="question_position_unique_in_rubric"
            ),
            # Any integer scale (0-based, 1-based, -3..3, 0..100), within the bound every stored
            # answer keeps (rubrics.SCALE_LIMIT).
            models.CheckConstraint(
                condition=Q(min_value__gte=-1000)
                & Q(max_value__lte=1000)
                & Q(min_value__lt=F("max_value")),
                name="question_scale_within_bounds",
            ),
            models.CheckConstraint(
                condition=(Q(kind="slider") & Q(step__gt=0)) | (~Q(kind="slider") & Q(step=None)),
                name="question_step_only_for_sliders",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rubric.slug}.{self.name}"


class Study(TimeStampedModel):
    class Status(models.TextChoices):
        DRAFT = "draft", _("Draft")
        OPEN = "open", _("Open")
        CLOSED = "closed", _("Closed")

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="studies")
    languages = models.JSONField(default=_default_languages)
    session_minutes = models.PositiveSmallIntegerField(default=30)
    # Tasks a session plans for (the progress bar's 100%); the session also ends at its deadline.
    tasks_per_session = models.PositiveSmallIntegerField(default=40)
    target_scorecards_per_item = models.PositiveSmallIntegerField(default=15)
    pair_appearances_per_item = models.PositiveSmallIntegerField(default=3)
    pair_min_opponents = models.PositiveSmallIntegerField(default=2)
    turing_judgments_per_item = models.PositiveSmallIntegerField(default=10)
    task_mix = models.JSONField(default=_default_task_mix)
    attention_check_rate = models.FloatField(default=0.05)
    adaptive_pairing = models.BooleanField(default=False)
    # A/B pairs put two items of one language side by side unless this is on (a rater who reads
    # both languages may then be shown one of each); a cross-language pair measures language.
    allow_cross_language_pairs = models.BooleanField(
        default=False,
        help_text="Let raters who read several of the study's languages compare items across "
        "languages in A/B pairs. Off by default: a cross-language pair measures language, not "
        "humor.",
    )
    # A/B pairs force a choice unless these are on. A tie is evidence that two items are close
    # (fitted by a tie model); "neither" says nothing about their order and is its own rate.
    pair_offers_tie = models.BooleanField(
        default=False,
        help_text='Offer "about the same" in A/B pairs. Ties enter the strengths through a '
        "tie model (Davidson or Rao-Kupper, whichever fits better). Off by default: a forced "
        "choice.",
    )
    pair_offers_neither = models.BooleanField(
        default=False,
        help_text='Offer "neither" in A/B pairs (neither is funny, or the rater does not get '
        "them). Reported as its own rate per item and model; no evidence about the order.",
    )
    # Numeric item metadata keys the style-controlled boards add to the built-in covariates.
    style_covariates = models.JSONField(
        default=list,
        blank=True,
        help_text="Item metadata keys (numbers or yes/no) added to the style-controlled boards' "
        "covariates beside length, language, level, the offense flag and being judged human.",
    )
    min_items_per_model = models.PositiveSmallIntegerField(default=30)
    min_raters_per_item = models.PositiveSmallIntegerField(default=15)
    # Exclusion rules (apps.exclusions): thresholds, and whether their proposals apply themselves.
    exclusion_max_attention_failures = models.PositiveSmallIntegerField(default=1)
    exclusion_speeder_seconds = models.FloatField(default=3.0)
    exclusion_straight_line_tasks = models.PositiveSmallIntegerField(default=5)
    exclusion_position_min_pairs = models.PositiveSmallIntegerField(default=10)
    exclusion_rules_automatic = models.BooleanField(default=False)
    # Leave culture-dependent and safety-intercepted items out of model comparisons by default.
    exclude_items_not_evidence = models.BooleanField(default=True)
    # Items the offense filter held after people rated them (or imported with ratings): their
    # ratings count, marked "held" wherever they do, unless the study leaves them out.
    count_held_items = models.BooleanField(default=True)
    # False-discovery rate of the culture-dependence test across items (Benjamini-Hochberg).
    culture_fdr = models.FloatField(
        default=0.1,
        help_text="False-discovery rate q of the culture-dependence test across items "
        "(Benjamini-Hochberg): greater than 0 and less than 1.",
    )
    # Screening: candidates promoted into the human study per model (source), by FunnyScore.
    screening_top_k = models.PositiveSmallIntegerField(default=20)
    prolific_completion_code = models.CharField(max_length=64, blank=True)
    prolific_screenout_code = models.CharField(max_length=64, blank=True)
    # Shown to a Prolific participant who declines consent, so they can leave with a code.
    prolific_no_consent_code = models.CharField(max_length=64, blank=True)
    # Bonus rules for Prolific's bulk bonus (amounts in the study's Prolific currency).
    prolific_bonus_per_attention_pass = models.DecimalField(
        max_digits=6, decimal_places=2, default=Decimal("0.00")
    )
    prolific_bonus_on_completion = models.DecimalField(
        max_digits=6, decimal_places=2, default=Decimal("0.00")
    )
    random_seed = models.BigIntegerField(default=_new_seed)

    class Meta:
        verbose_name_plural = "studies"
        constraints = [
            models.CheckConstraint(
                condition=Q(session_minutes__gte=1) & Q(session_minutes__lte=240),
                name="study_session_minutes_range",
                violation_error_message="The session length must be from 1 to 240 minutes.",
            ),
            models.CheckConstraint(
                condition=Q(attention_check_rate__gte=0) & Q(attention_check_rate__lte=0.5),
                name="study_attention_check_rate_range",
                violation_error_message="The attention-check rate must be from 0 to 0.5.",
            ),
            models.CheckConstraint(
                condition=Q(pair_min_opponents__gte=1)
                & Q(pair_min_opponents__lte=F("pair_appearances_per_item")),
                name="study_pair_opponents_within_appearances",
                violation_error_message="Pairs need at least one opponent and no more opponents than appearances.",
            ),
            models.CheckConstraint(condition=Q(random_seed__gte=0), name="study_seed_nonnegative"),
            models.CheckConstraint(
                condition=Q(prolific_bonus_per_attention_pass__gte=0)
                & Q(prolific_bonus_on_completion__gte=0),
                name="study_prolific_bonuses_nonnegative",
                violation_error_message="Bonus amounts cannot be negative.",
            ),
            models.CheckConstraint(
                condition=Q(culture_fdr__gt=0) & Q(culture_fdr__lt=1),
                name="study_culture_fdr_open_unit_interval",
                violation_error_message="The culture test's false-discovery rate must be greater "
                "than 0 and less than 1.",
            ),
            models.CheckConstraint(
                condition=Q(tasks_per_session__gte=1) & Q(tasks_per_session__lte=500),
                name="study_tasks_per_session_range",
                violation_error_message="Tasks per session must be from 1 to 500.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def asks_languages(self) -> bool:
        """Raters say which of the study's languages they read only when it has several."""
        return len(self.languages) > 1

    def clean(self) -> None:
        # The admin's form; the services check the same rules (study_create, study_configure).
        from apps.studies.languages import languages_problem

        problem = languages_problem(self.languages)
        if problem:
            raise ValidationError({"languages": problem})
        if self.allow_cross_language_pairs and not self.asks_languages:
            raise ValidationError(
                {"allow_cross_language_pairs": CROSS_LANGUAGE_NEEDS_LANGUAGES},
            )
        from apps.studies.rules import study_settings_problem

        settings_problem = study_settings_problem(self)
        if settings_problem:
            raise ValidationError({settings_problem[0]: settings_problem[1]})


CROSS_LANGUAGE_NEEDS_LANGUAGES = _("Cross-language pairs need a study with several languages.")


class Item(TimeStampedModel):
    class Level(models.TextChoices):
        SINGLE = "single", _("Single joke")
        MULTI_TURN = "multi_turn", _("Multi-turn reply")
        SCENARIO = "scenario", _("Scenario response")

    class ContentType(models.TextChoices):
        NONE = "", "—"
        NEWS = "news", "News"
        ANALYSIS = "analysis", "Analysis"
        CREATIVE = "creative", "Creative"

    class Stage(models.TextChoices):
        # Only items in the study stage are put in front of raters.
        STUDY = "study", _("In the human study")
        CANDIDATE = "candidate", _("Candidate, awaiting screening")
        DROPPED = "dropped", _("Screened out")
        HELD = "held", _("Held by the offense filter")

    HUMAN_SOURCE = "human"

    # Indexed by the unique (study, external id) and the (study, ...) indexes, not on its own.
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items", db_index=False)
    stage = models.CharField(max_length=16, choices=Stage.choices, default=Stage.STUDY)
    # The stage an item held by the offense filter goes back to when released.
    held_from_stage = models.CharField(max_length=16, choices=Stage.choices, blank=True)
    # A researcher released this item from the offense filter's hold; a re-scan keeps it out.
    offense_released_at = models.DateTimeField(null=True, blank=True)
    offense_released_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    external_id = models.CharField(max_length=128)
    text = models.TextField()
    source = models.CharField(max_length=128, help_text="Model name, or 'human'.")
    level = models.CharField(max_length=16, choices=Level.choices, default=Level.SINGLE)
    humor_type = models.CharField(max_length=64, blank=True)
    topic = models.CharField(max_length=128, blank=True)
    language = models.CharField(max_length=16, default="en")
    context = models.JSONField(
        default=list, blank=True, help_text="Dialogue turns before the item."
    )
    scenario = models.TextField(blank=True)
    explanation = models.TextField(blank=True, help_text="The model's own 'why this is funny'.")
    safety_intercepted = models.BooleanField(default=False)
    generation = models.JSONField(default=dict, blank=True)
    content_type = models.CharField(
        max_length=16, choices=ContentType.choices, default=ContentType.NONE, blank=True
    )
    is_attention_check = models.BooleanField(default=False)
    # For an attention check: the answers a careful rater gives, {"funniness": [1, 2]}.
    attention_expected = models.JSONField(default=dict, blank=True)
    # The researcher's own data about the item (dataset, split, original id, ...): stored as
    # imported and exported unchanged; LaughLab reads nothing from it.
    meta = models.JSONField(default=dict, blank=True)
    # A picture shown with the item (a cartoon and its caption): its storage name (Django's
    # storage API, named by the hash of its bytes), that hash, and its description for screen
    # readers per language ({"en": ..., "zh": ...}). Empty: a text item.
    image = models.CharField(max_length=255, blank=True)
    image_sha256 = models.CharField(max_length=64, blank=True)
    image_alt = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["study", "external_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "external_id"], name="item_id_unique_in_study"
            ),
            models.CheckConstraint(condition=~Q(text=""), name="item_text_not_empty"),
            models.CheckConstraint(condition=~Q(source=""), name="item_source_not_empty"),
        ]
        indexes = [
            models.Index(fields=["study", "topic"]),
            models.Index(fields=["study", "source"]),
            models.Index(fields=["study", "stage"]),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug}/{self.external_id}"

    @property
    def is_human(self) -> bool:
        return self.source == self.HUMAN_SOURCE


class StudyMembership(models.Model):
    """Who may see and edit a study besides admins: its owner and the researchers added to it."""

    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        MEMBER = "member", "Member"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="study_memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "user"], name="one_membership_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.study.slug} ({self.role})"
