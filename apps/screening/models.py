"""Machine screening before the human study: the offense filter, per-item features, the
FunnyScore calibration, screening runs, and the optional LLM judge's verdicts.

Nothing here is human evidence: features, scores and verdicts can always be recomputed. An item's
place in the study (in it, a candidate, screened out, held) is `studies.Item.stage`.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from apps.studies.models import Item, Study


class OffenseTerm(models.Model):
    """A term whose presence holds an item out of the human study until a researcher releases it."""

    language = models.CharField(max_length=16, help_text="'en', 'zh', ...")
    term = models.CharField(max_length=128)
    category = models.CharField(max_length=32, blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["language", "term"]
        constraints = [
            models.UniqueConstraint(fields=["language", "term"], name="offense_term_unique"),
            models.CheckConstraint(condition=~Q(term=""), name="offense_term_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.language}: {self.term}"


class OffenseMatch(models.Model):
    """One occurrence of an offense term in an item, as found by the last scan."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="offense_matches")
    term = models.ForeignKey(
        OffenseTerm, null=True, on_delete=models.SET_NULL, related_name="matches"
    )
    # The text as matched, kept if the term is later edited or deleted.
    matched = models.CharField(max_length=128)
    # Character offset in the scanned text ("text", or "context" for a dialogue turn).
    where = models.CharField(max_length=16, default="text")
    start = models.PositiveIntegerField()
    found_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "where", "start"]

    def __str__(self) -> str:
        return f"{self.item_id}: {self.matched!r}"


class ItemFeatures(models.Model):
    """The L1 features of one item. A feature that could not be computed is None with a reason."""

    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="features")
    # Mean per-token surprisal (nats) of the punchline minus that of the setup.
    surprise = models.FloatField(null=True, blank=True)
    surprise_missing = models.CharField(max_length=200, blank=True)
    # Cosine similarity of the setup's and the punchline's sentence embeddings, in [-1, 1].
    coherence = models.FloatField(null=True, blank=True)
    coherence_missing = models.CharField(max_length=200, blank=True)
    # Sentiment in [-1, 1] and its penalty in [0, 1] (0 unless the item reads as mean-spirited).
    valence = models.FloatField(null=True, blank=True)
    valence_penalty = models.FloatField(null=True, blank=True)
    valence_missing = models.CharField(max_length=200, blank=True)
    # The item text's unit-length sentence embedding, float32 bytes (what the learned L1 and
    # its prior read; see apps.screening.features.embedding), or why there is none.
    embedding = models.BinaryField(null=True, blank=True)
    embedding_missing = models.CharField(max_length=200, blank=True)
    # For a multi-turn reply or a scenario response: the embedding of what it answers (the
    # dialogue turns, or the scenario), which the learned L1 reads beside the item's own.
    context_embedding = models.BinaryField(null=True, blank=True)
    # Which model or package computed each feature: {"surprise": "...", ...}.
    models_used = models.JSONField(default=dict, blank=True)
    # This item's share of its batch's compute time (the L1 tier's cost per item).
    compute_seconds = models.FloatField(null=True, blank=True)
    computed_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "item features"

    def __str__(self) -> str:
        return f"features of {self.item_id}"


class FunnyScoreCalibration(models.Model):
    """One L1 scorer of a study, for one scope. By kind:

    - defaults: FunnyScore = a·Surprise + b·Coherence − c·ValencePenalty with the documented
      coefficients (used before anything better is available);
    - prior: the shipped prior (`apps.screening.prior`), read from the item's embedding;
    - features: the same formula with a, b, c and the intercept fitted on the study's ratings;
    - learned: the learned L1 (`apps.screening.learned`) fitted on the study's ratings, its
      parameters in `model`.
    """

    class Kind(models.TextChoices):
        DEFAULTS = "defaults", _("Documented FunnyScore defaults")
        PRIOR = "prior", _("Prior trained on public crowd ratings")
        FEATURES = "features", _("FunnyScore fitted on the study's ratings")
        LEARNED = "learned", _("Learned L1 fitted on the study's ratings")

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="calibrations")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.FEATURES)
    # The learned L1's parameters (RidgeModel.to_json), or the prior's version: {"prior": "..."}.
    model = models.JSONField(default=dict, blank=True)
    # Repeated cross-validation on the study's rated items (learned.Validation.to_json), with
    # each item's averaged held-out prediction under "held_out": {item id: value}.
    validation = models.JSONField(default=dict, blank=True)
    # "all", or "humor_type:<type>" / "level:<level>" where that slice had enough items.
    scope = models.CharField(max_length=100, default="all")
    a = models.FloatField()
    b = models.FloatField()
    c = models.FloatField()
    intercept = models.FloatField(default=0.0)
    # True for the documented defaults, used before any fit.
    is_default = models.BooleanField(default=False)
    n_items = models.PositiveIntegerField(default=0)
    r2 = models.FloatField(null=True, blank=True)
    cv_spearman = models.FloatField(null=True, blank=True)
    # 95% interval of the cross-validated rho (Fisher z, Bonett-Wright variance).
    cv_spearman_low = models.FloatField(null=True, blank=True)
    cv_spearman_high = models.FloatField(null=True, blank=True)
    # 95% t intervals of the coefficients: {"a": [low, high], ..., "intercept": [...]}.
    intervals = models.JSONField(default=dict, blank=True)
    # Whether the fit meets the rules for replacing the defaults (enough items, a cross-validated
    # rho interval above 0), and if not, why.
    applicable = models.BooleanField(default=True)
    not_applicable_reason = models.CharField(max_length=500, blank=True)
    # The same reasons as sentences (apps/core/sentences.py), shown in the reader's language.
    not_applicable_message = models.JSONField(default=list, blank=True)
    # Whether it scores items: an applicable fit at once; another only when a researcher chose
    # so explicitly (who and when are kept). The defaults score wherever no fit is applied.
    applied = models.BooleanField(default=True)
    applied_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    applied_at = models.DateTimeField(null=True, blank=True)
    # sha256 of the (features, human mean funniness) rows the fit used.
    data_hash = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "scope", "-created_at"]

    def __str__(self) -> str:
        return f"FunnyScore {self.scope} of {self.study_id}"

    @property
    def coefficients_shown(self) -> list[tuple[str, float, list[float] | None]]:
        """(name, value, [low, high] or None) for a, b, c and the intercept, for pages."""
        intervals = self.intervals if isinstance(self.intervals, dict) else {}
        return [
            (name, float(getattr(self, name)), intervals.get(name))
            for name in ("a", "b", "c", "intercept")
        ]


class ScreeningRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="screening_runs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    top_k = models.PositiveSmallIntegerField()
    # The sieve's stages (see apps.screening.services.runs): L1 passes at most `l1_keep`
    # candidates per model and level to the judge (0 = every scored one), and only those with a
    # FunnyScore of at least `l1_min_score` (None = no minimum); the judge (`judge_model`, ""
    # when none was configured at the start) drops those it rates below `judge_min` funniness.
    l1_keep = models.PositiveIntegerField(default=0)
    l1_min_score = models.FloatField(null=True, blank=True)
    judge_model = models.CharField(max_length=200, blank=True)
    judge_min = models.FloatField(null=True, blank=True)
    batch_size = models.PositiveIntegerField()
    batches_total = models.PositiveIntegerField(default=0)
    batches_done = models.PositiveIntegerField(default=0)
    judge_batches_total = models.PositiveIntegerField(default=0)
    judge_batches_done = models.PositiveIntegerField(default=0)
    # A rerun re-decides this earlier run's candidates with new K and thresholds, from the
    # stored features and verdicts.
    rerun_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reruns"
    )
    # Candidates imported after this moment wait for the next run (a rerun keeps its source's).
    pool_cutoff = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["study", "-created_at"]

    def __str__(self) -> str:
        return f"screening run {self.pk} of {self.study_id}"


class ScreeningOutcome(models.Model):
    """What a run decided for one candidate, at which stage, and why."""

    class Stage(models.TextChoices):
        OFFENSE = "offense", _("Offense filter")
        L1 = "l1", _("L1 FunnyScore")
        JUDGE = "judge", _("LLM judge")
        TOP_K = "top_k", _("Top K")
        INTERCEPTED = "intercepted", _("Intercepted by a guardrail")

    run = models.ForeignKey(ScreeningRun, on_delete=models.CASCADE, related_name="outcomes")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="screening_outcomes")
    funny_score = models.FloatField(null=True, blank=True)
    # Rank by FunnyScore within the item's model and level, 1 = best; None when not scored.
    l1_rank = models.PositiveIntegerField(null=True, blank=True)
    # The judge's funniness, or why there is none ("" when the judge stage did not see it).
    judge_score = models.FloatField(null=True, blank=True)
    judge_status = models.CharField(max_length=16, blank=True)
    # Rank among the candidates that passed every sieve, within model and level.
    rank = models.PositiveIntegerField(null=True, blank=True)
    # The stage that decided (the last one the candidate reached).
    stage = models.CharField(max_length=16, choices=Stage.choices, default=Stage.TOP_K)
    kept = models.BooleanField()
    # In English, for the exports and the API.
    reason = models.CharField(max_length=300)
    # The same reason as a sentence id and parameters (apps/core/sentences.py), shown in the
    # reader's language; empty on outcomes decided before reasons were stored so.
    reason_message = models.JSONField(default=dict, blank=True)
    calibration = models.ForeignKey(
        FunnyScoreCalibration, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["run", "item__source", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["run", "item"], name="screening_outcome_unique")
        ]

    def __str__(self) -> str:
        return f"{self.item_id} in run {self.run_id}"


class JudgeVerdict(models.Model):
    """The LLM judge's scorecard for one item, or why there is none."""

    class Status(models.TextChoices):
        OK = "ok", _("Scored")
        TIMEOUT = "timeout", _("Timed out")
        HTTP_ERROR = "http_error", _("HTTP error")
        MALFORMED = "malformed", _("Malformed reply")

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judge_verdicts")
    model_name = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices)
    # {"funniness": 4, ...} on the rubric's scales; empty unless status is ok.
    scores = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    raw_reply = models.TextField(blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["item", "model_name"]
        constraints = [
            models.UniqueConstraint(fields=["item", "model_name"], name="judge_verdict_unique")
        ]

    def __str__(self) -> str:
        return f"{self.model_name} on {self.item_id}: {self.status}"


class StudyJudgeConfig(models.Model):
    """The LLM judge a study's runs ask, when the study has one of its own; without one the
    deployment's LLM_JUDGE_* settings are used. No API key is stored here: a key comes only
    from the server's settings, for the URL it was configured for (apps.screening.llm_judge)."""

    MAX_PARALLELISM = 8
    MAX_TIMEOUT_SECONDS = 120.0

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="judge_config")
    url = models.CharField(max_length=500)
    model = models.CharField(max_length=200)
    timeout_seconds = models.FloatField(default=30.0)
    # Calls to the judge in flight at once for a run.
    parallelism = models.PositiveSmallIntegerField(default=1)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=~Q(url="") & ~Q(model=""), name="study_judge_config_url_and_model"
            ),
            models.CheckConstraint(
                condition=Q(timeout_seconds__gt=0) & Q(timeout_seconds__lte=120),
                name="study_judge_config_timeout_range",
            ),
            models.CheckConstraint(
                condition=Q(parallelism__gte=1) & Q(parallelism__lte=8),
                name="study_judge_config_parallelism_range",
            ),
        ]

    def __str__(self) -> str:
        return f"judge of {self.study_id}: {self.model}"


class JudgeComparison(models.Model):
    """The judge against the humans, per humor type; computed after a judge run, read by pages."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="judge_comparisons")
    model_name = models.CharField(max_length=200)
    # {"overall": {...}, "by_humor_type": [{"humor_type", "n", "mean_diff", "ci", "rho", ...}]}
    payload = models.JSONField()
    seed = models.BigIntegerField()
    rounds = models.PositiveIntegerField()
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "model_name"], name="judge_comparison_unique")
        ]

    def __str__(self) -> str:
        return f"{self.model_name} vs humans in {self.study_id}"


class ScreeningTiers(models.Model):
    """L1 / L2 / L3 against the humans for a humor study (agreement, cost per item); computed by
    `apps.screening.services.tiers`, read by the LLM judge page."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="screening_tiers")
    # {"question": "funniness", "tiers": [{"tier", "label", "agreement", "items_per_second", ...}]}
    payload = models.JSONField()
    seed = models.BigIntegerField()
    rounds = models.PositiveIntegerField()
    computed_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "screening tiers"

    def __str__(self) -> str:
        return f"tiers of {self.study_id}"
