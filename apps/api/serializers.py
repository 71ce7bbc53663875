"""Input and output serializers of the researcher API. They check shapes and types only: the rules
of a study (ranges, quotas, what may open) live in the services, which answer with the same
`{"code", "message", "field"}` errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.reverse import reverse

from apps.exclusions.models import Exclusion, JudgmentKind
from apps.imports.models import ImportKind
from apps.reports.models import ExportFormat, ExportJob, ExportLanguage
from apps.studies.models import Item, Rubric, Study

# Fields named like a Field or Serializer attribute (source, label, context, errors) carry a
# type: ignore: DRF's metaclass takes declared fields off the class, so nothing is shadowed.


def _small(help_text: str = "") -> serializers.IntegerField:
    """PositiveSmallIntegerField holds 0..32767 everywhere; the study rules narrow it further."""
    return serializers.IntegerField(
        min_value=0, max_value=32767, required=False, help_text=help_text or None
    )


_LANGUAGE = r"^[a-z]{2,3}(-[a-z0-9]{2,8})*$"


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know: a misspelt setting is an error, never silently dropped."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = sorted(str(name) for name in set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({unknown[0]: ["is not a known field"]})
        return super().to_internal_value(data)


# --- errors (documentation of what apps.core.api.exception_handler returns) ---------------------


@extend_schema_field(
    {
        "anyOf": [
            {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "line": {"type": "integer"},
                        "field": {"type": "string"},
                        "message": {"type": "string"},
                    },
                    "required": ["line", "field", "message"],
                },
                "description": "A rejected import: every bad line (line 0 = the whole file).",
            },
            {"type": "object", "description": "A request that was not well formed, by field."},
        ]
    }
)
class _ImportErrorsField(serializers.JSONField):
    pass


class ImportErrorOut(serializers.Serializer):
    code = serializers.CharField(help_text="`import_rejected` for bad lines, else `invalid`.")
    message = serializers.CharField()
    field = serializers.CharField(required=False)
    errors = _ImportErrorsField(required=False)  # type: ignore[assignment]


# --- studies -------------------------------------------------------------------------------------


class StudySummaryOut(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=Study.Status.choices)
    rubric = serializers.CharField(source="rubric.slug")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class BackgroundGroupOut(serializers.Serializer):
    code = serializers.CharField()
    label = serializers.DictField(child=serializers.CharField(), help_text="Per language.")  # type: ignore[assignment]
    quota = serializers.IntegerField(allow_null=True, help_text="null = no limit")
    filled = serializers.IntegerField(help_text="Places taken by enrolment.")


class TaskMixSerializer(StrictSerializer):
    scorecard = serializers.FloatField(min_value=0, required=False)
    pair = serializers.FloatField(min_value=0, required=False)
    turing = serializers.FloatField(min_value=0, required=False)


class StudyOut(StudySummaryOut):
    description = serializers.CharField()
    languages = serializers.ListField(child=serializers.CharField())
    session_minutes = serializers.IntegerField()
    tasks_per_session = serializers.IntegerField()
    target_scorecards_per_item = serializers.IntegerField()
    pair_appearances_per_item = serializers.IntegerField()
    pair_min_opponents = serializers.IntegerField()
    turing_judgments_per_item = serializers.IntegerField()
    attention_check_rate = serializers.FloatField()
    adaptive_pairing = serializers.BooleanField()
    allow_cross_language_pairs = serializers.BooleanField()
    pair_offers_tie = serializers.BooleanField()
    pair_offers_neither = serializers.BooleanField()
    style_covariates = serializers.ListField(child=serializers.CharField())
    min_items_per_model = serializers.IntegerField()
    min_raters_per_item = serializers.IntegerField()
    culture_fdr = serializers.FloatField(
        help_text="False-discovery rate q of the culture-dependence test across items."
    )
    prolific_completion_code = serializers.CharField()
    prolific_screenout_code = serializers.CharField()
    prolific_no_consent_code = serializers.CharField()
    prolific_bonus_per_attention_pass = serializers.DecimalField(max_digits=6, decimal_places=2)
    prolific_bonus_on_completion = serializers.DecimalField(max_digits=6, decimal_places=2)
    task_mix = TaskMixSerializer()
    random_seed = serializers.IntegerField()
    groups = BackgroundGroupOut(many=True, source="background_groups.all")


class BackgroundIn(StrictSerializer):
    code = serializers.SlugField(max_length=64)
    labels = serializers.DictField(
        child=serializers.CharField(max_length=200),
        required=False,
        help_text='Per language: {"en": ..., "zh": ...}; the code where missing.',
    )


class StudyCreateIn(StrictSerializer):
    slug = serializers.SlugField(
        max_length=64, help_text="Lowercase letters, digits and hyphens; in the rater link."
    )
    rubric = serializers.SlugRelatedField(
        slug_field="slug",
        queryset=Rubric.objects.all(),
        required=False,
        help_text="A stored rubric: `humor`, `content` or a custom one. Give this or `rubric_spec`.",
    )
    rubric_spec = serializers.JSONField(
        required=False,
        help_text="A custom rubric to create with the study: {slug, name, kind, questions: [{name, "
        "kind, min_value, max_value, prompt: {en, zh}, anchors, answered_after}]}. "
        "GET /api/v1/rubrics/{slug}/ gives a stored one's spec to copy and edit.",
    )
    backgrounds = serializers.ListField(
        child=BackgroundIn(),
        required=False,
        max_length=50,
        help_text="The study's rater background groups; default: the method's four. Imported "
        "judgments may also say `unknown`.",
    )
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    description = serializers.CharField(max_length=20_000, required=False, allow_blank=True)
    languages = serializers.ListField(
        child=serializers.RegexField(_LANGUAGE, max_length=16),
        min_length=1,
        max_length=20,
        required=False,
        help_text='Languages raters may choose, e.g. `["en", "zh"]`.',
    )


class RubricOut(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.CharField()
    builtin = serializers.BooleanField()
    questions = serializers.ListField(child=serializers.DictField())


class StudyConfigureIn(StrictSerializer):
    """Every field optional; the study rules check the result as a whole."""

    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(max_length=20_000, required=False, allow_blank=True)
    session_minutes = _small("1 to 240.")
    tasks_per_session = _small("1 to 500.")
    target_scorecards_per_item = _small()
    pair_appearances_per_item = _small()
    pair_min_opponents = _small("From 1 to pair_appearances_per_item.")
    turing_judgments_per_item = _small()
    attention_check_rate = serializers.FloatField(required=False, help_text="0 to 0.5.")
    adaptive_pairing = serializers.BooleanField(required=False)
    allow_cross_language_pairs = serializers.BooleanField(
        required=False,
        help_text="A/B pairs across languages for raters who read several; off by default. "
        "Needs a study with several languages.",
    )
    pair_offers_tie = serializers.BooleanField(
        required=False, help_text='Offer "about the same" in A/B pairs; off by default.'
    )
    pair_offers_neither = serializers.BooleanField(
        required=False, help_text='Offer "neither" in A/B pairs; off by default.'
    )
    style_covariates = serializers.ListField(
        child=serializers.CharField(max_length=64, trim_whitespace=False),
        required=False,
        max_length=8,
        help_text="Item metadata keys (numbers or yes/no) the style-controlled boards add to "
        "their covariates.",
    )
    min_items_per_model = _small()
    min_raters_per_item = _small()
    culture_fdr = serializers.FloatField(
        required=False,
        help_text="False-discovery rate q of the culture-dependence test across items "
        "(Benjamini-Hochberg): greater than 0 and less than 1; 0.1 by default.",
    )
    prolific_completion_code = serializers.CharField(
        max_length=64, required=False, allow_blank=True
    )
    prolific_screenout_code = serializers.CharField(max_length=64, required=False, allow_blank=True)
    prolific_no_consent_code = serializers.CharField(
        max_length=64, required=False, allow_blank=True
    )
    # Strings in JSON (as DRF writes decimals); the range is the study's rule, checked by the
    # service with the same message as the set-up page.
    prolific_bonus_per_attention_pass = serializers.DecimalField(
        max_digits=12,
        decimal_places=6,
        required=False,
        coerce_to_string=True,
        help_text="Bonus per passed attention check, 0 to 100, to the cent.",
    )
    prolific_bonus_on_completion = serializers.DecimalField(
        max_digits=12,
        decimal_places=6,
        required=False,
        coerce_to_string=True,
        help_text="Bonus for a completed session, 0 to 100, to the cent.",
    )
    task_mix = TaskMixSerializer(
        required=False,
        help_text="Replaces the whole mix: a kind left out gets share 0. Not all zero.",
    )
    quotas = serializers.DictField(
        child=serializers.IntegerField(min_value=0, max_value=1_000_000, allow_null=True),
        required=False,
        help_text="Per background group code; null = no limit. Never below places taken.",
    )


# --- items ---------------------------------------------------------------------------------------


class ItemOut(serializers.Serializer):
    id = serializers.CharField(source="external_id")
    text = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    level = serializers.ChoiceField(choices=Item.Level.choices)
    humor_type = serializers.CharField()
    topic = serializers.CharField()
    lang = serializers.CharField(source="language")
    meta = serializers.DictField(help_text="The item's own metadata, as imported.")


class ItemPageOut(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = ItemOut(many=True)


class StudyPageOut(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = StudySummaryOut(many=True)


class _ContextTurn(serializers.Serializer):
    role = serializers.CharField()
    text = serializers.CharField()


class ItemLine(serializers.Serializer):
    """One item of the `import_items` interchange format (documentation only: the import checks
    each line itself, so every problem is reported by its position and field)."""

    id = serializers.CharField(max_length=128)
    text = serializers.CharField(max_length=20_000)
    source = serializers.CharField(max_length=128, help_text="Model name, or `human`.")  # type: ignore[assignment]
    level = serializers.ChoiceField(choices=Item.Level.choices, required=False)
    humor_type = serializers.CharField(max_length=64, required=False)
    topic = serializers.CharField(max_length=128, required=False)
    lang = serializers.CharField(max_length=16, required=False)
    context = _ContextTurn(many=True, required=False, help_text="Required for multi_turn.")  # type: ignore[assignment]
    scenario = serializers.CharField(required=False, help_text="Required for scenario.")
    explanation = serializers.CharField(required=False)
    safety_intercepted = serializers.BooleanField(required=False)
    generation = serializers.DictField(required=False)
    content_type = serializers.ChoiceField(
        choices=[c for c in Item.ContentType.values if c], required=False
    )
    attention_check = serializers.BooleanField(required=False)
    attention_expected = serializers.DictField(required=False)


@extend_schema_field(ItemLine(many=True))
class ItemLinesField(serializers.ListField):
    """Any JSON values: the import validates each one and names its position and field."""

    child = serializers.JSONField()


class ItemsJsonIn(StrictSerializer):
    items = ItemLinesField(allow_empty=False)


class ItemsFileIn(serializers.Serializer):
    file = serializers.FileField(
        help_text="A .jsonl or .csv file in the import_items format, or a .zip of one and its "
        "pictures."
    )


class ImportSummaryOut(serializers.Serializer):
    created = serializers.IntegerField()
    unchanged = serializers.IntegerField(help_text="Already in the study with the same content.")
    total = serializers.IntegerField()
    held = serializers.IntegerField(
        help_text="New items the offense filter held out of the human study until released."
    )


# --- judgments and import jobs -------------------------------------------------------------------


class JudgmentLine(serializers.Serializer):
    """One judgment of the `import_judgments` interchange format (documentation only: the import
    checks each line itself and names its position and field). Scorecards carry the rubric's
    questions as further fields (`surprise`, `coherence`, `funniness`, ...)."""

    kind = serializers.ChoiceField(choices=["score", "pair", "turing"])
    rater = serializers.CharField(max_length=128)
    background = serializers.CharField(
        max_length=64, help_text="One of the study's background groups, or `unknown`."
    )
    item = serializers.CharField(max_length=128, required=False, help_text="score, turing")
    left = serializers.CharField(max_length=128, required=False, help_text="pair")
    right = serializers.CharField(max_length=128, required=False, help_text="pair")
    winner = serializers.CharField(
        max_length=128,
        required=False,
        help_text="pair: the chosen item (left or right); empty for a tie or neither.",
    )
    outcome = serializers.ChoiceField(
        choices=["left", "right", "tie", "neither"],
        required=False,
        help_text="pair: the side chosen, or 'tie' (about the same) / 'neither'. Optional when "
        "`winner` is given; must agree with it.",
    )
    guess = serializers.ChoiceField(choices=["ai", "human"], required=False, help_text="turing")
    seconds_into_session = serializers.FloatField(required=False)
    submitted_at = serializers.DateTimeField(required=False)
    meta = serializers.DictField(required=False, help_text="Kept and exported unchanged.")


@extend_schema_field(JudgmentLine(many=True))
class JudgmentLinesField(serializers.ListField):
    """Any JSON values: the import validates each one and names its position and field."""

    child = serializers.JSONField()


class JudgmentsJsonIn(StrictSerializer):
    judgments = JudgmentLinesField(allow_empty=False)


class JudgmentsFileIn(serializers.Serializer):
    file = serializers.FileField(help_text="A .jsonl or .csv file in the import_judgments format.")


class ImportWarningOut(serializers.Serializer):
    code = serializers.CharField(help_text="`positional_rater_ids`, ...")
    message = serializers.CharField()
    params = serializers.DictField(help_text="The numbers the message is made of.")


class _JudgmentCounts(serializers.Serializer):
    score = serializers.IntegerField()
    pair = serializers.IntegerField()
    turing = serializers.IntegerField()


class JudgmentImportSummaryOut(serializers.Serializer):
    created = _JudgmentCounts(help_text="New judgments, by kind.")
    unchanged = serializers.IntegerField(help_text="Already stored with the same content.")
    raters_created = serializers.IntegerField()
    warnings = ImportWarningOut(many=True)


@extend_schema_field(
    {
        "type": "object",
        "description": "A done job's summary: for items `{created, unchanged, held}`, for "
        "judgments `{created: {score, pair, turing}, unchanged, raters_created, warnings}`; "
        "`{}` before it is done.",
    }
)
class _JobSummaryField(serializers.JSONField):
    pass


class _LineErrorOut(serializers.Serializer):
    line = serializers.IntegerField(help_text="0 = the whole file.")
    field = serializers.CharField()
    message = serializers.CharField()


class ImportJobOut(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    kind = serializers.ChoiceField(choices=ImportKind.choices)
    status = serializers.ChoiceField(choices=["queued", "running", "done", "failed"])
    stage = serializers.ChoiceField(choices=["waiting", "reading", "storing", "finished"])
    filename = serializers.CharField()
    size = serializers.IntegerField(help_text="Bytes uploaded.")
    lines_total = serializers.IntegerField()
    lines_read = serializers.IntegerField()
    percent = serializers.IntegerField(min_value=0, max_value=100)
    summary = _JobSummaryField()
    warnings = ImportWarningOut(many=True, help_text="A done judgments import's warnings.")
    error = serializers.CharField(help_text="Why it failed (nothing was stored); empty otherwise.")
    errors = _LineErrorOut(many=True, help_text="A failed job's bad lines (the first 1000).")  # type: ignore[assignment]
    error_count = serializers.IntegerField(help_text="All bad lines of a failed job.")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    status_url = serializers.SerializerMethodField()

    @extend_schema_field(serializers.URLField())
    def get_status_url(self, job: Any) -> str:
        return reverse(
            "api:import", args=[job.study.slug, job.pk], request=self.context.get("request")
        )


# --- progress ------------------------------------------------------------------------------------


class _ProgressGroup(serializers.Serializer):
    code = serializers.CharField()
    label = serializers.DictField(child=serializers.CharField())  # type: ignore[assignment]
    quota = serializers.IntegerField(allow_null=True)
    filled = serializers.IntegerField()
    enrolled = serializers.IntegerField()
    imported = serializers.IntegerField()
    percent = serializers.IntegerField(allow_null=True)


class _ProgressSessions(serializers.Serializer):
    active = serializers.IntegerField()
    completed = serializers.IntegerField()
    timed_out = serializers.IntegerField()
    withdrawn = serializers.IntegerField()
    returned = serializers.IntegerField(help_text="Returned on Prolific; their places given back.")
    imported = serializers.IntegerField()


class _ProgressScorecards(serializers.Serializer):
    target = serializers.IntegerField()
    done = serializers.IntegerField()
    items_at_target = serializers.IntegerField()
    min = serializers.IntegerField()
    left = serializers.IntegerField()


class _ProgressPairs(serializers.Serializer):
    target = serializers.IntegerField()
    min_opponents = serializers.IntegerField()
    done = serializers.IntegerField()
    items_at_target = serializers.IntegerField()
    left = serializers.IntegerField()


class _ProgressTuring(serializers.Serializer):
    target = serializers.IntegerField()
    done = serializers.IntegerField()
    left = serializers.IntegerField()


class _ProgressEstimate(serializers.Serializer):
    tasks_left = serializers.IntegerField()
    sessions_left = serializers.IntegerField()
    per_hour = serializers.IntegerField(help_text="Judgments collected in the last hour.")
    hours_left = serializers.FloatField(allow_null=True)


class _ProgressCoverage(serializers.Serializer):
    groups = serializers.ListField(child=serializers.CharField())
    per_group_target = serializers.IntegerField()


class ProgressOut(serializers.Serializer):
    """The dashboard's progress numbers; the per-item coverage heat map stays on the page."""

    groups = _ProgressGroup(many=True)
    sessions = _ProgressSessions()
    items = serializers.IntegerField()
    scorecards = _ProgressScorecards()
    pairs = _ProgressPairs()
    turing = _ProgressTuring()
    estimate = _ProgressEstimate()
    coverage = _ProgressCoverage()


# --- results -------------------------------------------------------------------------------------


class _BradleyTerryRow(serializers.Serializer):
    item = serializers.CharField()
    score = serializers.FloatField(allow_null=True, help_text="Log-strength, centred to mean 0.")
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)


class ResultDocumentOut(serializers.Serializer):
    """The results document of DESIGN.md (the keys below are always present; more may be)."""

    study = serializers.CharField()
    seed = serializers.IntegerField()
    rounds = serializers.IntegerField()
    input_hash = serializers.CharField()
    computed_at = serializers.DateTimeField()
    bradley_terry = _BradleyTerryRow(many=True)
    agreement = serializers.DictField(help_text="Per question.")
    items = serializers.ListField(
        child=serializers.DictField(), help_text="Per item (with its `meta`, as imported)."
    )
    groups = serializers.DictField(help_text="By source, level, humor type and background.")
    warnings = serializers.ListField(child=serializers.JSONField())


class RecomputeOut(serializers.Serializer):
    status = serializers.CharField()
    message = serializers.CharField()


# --- exports -------------------------------------------------------------------------------------


class ExportCreateIn(StrictSerializer):
    format = serializers.ChoiceField(choices=ExportFormat.choices)
    language = serializers.ChoiceField(
        choices=ExportLanguage.choices,
        required=False,
        help_text="Language of the report and of the tables' labels and warning texts; by "
        "default the request's language (Accept-Language).",
    )


class ExportJobOut(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    format = serializers.ChoiceField(choices=ExportFormat.choices)
    language = serializers.ChoiceField(choices=ExportLanguage.choices)
    status = serializers.ChoiceField(choices=ExportJob.Status.choices)
    progress = serializers.IntegerField(min_value=0, max_value=100, help_text="Percent done.")
    size = serializers.IntegerField(allow_null=True, help_text="Bytes, once done.")
    error = serializers.CharField(help_text="Why it failed; empty otherwise.")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    download_url = serializers.SerializerMethodField()

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_download_url(self, job: ExportJob) -> str | None:
        if job.status != ExportJob.Status.DONE:
            return None
        return reverse(
            "api:export-download",
            args=[job.study.slug, job.pk],
            request=self.context.get("request"),
        )


# --- exclusions ------------------------------------------------------------------------------


class ExclusionIn(StrictSerializer):
    target = serializers.ChoiceField(choices=Exclusion.Target.choices)
    subject = serializers.CharField(
        max_length=200, help_text="The rater's or item's id, or the judgment's number."
    )
    judgment_kind = serializers.ChoiceField(
        choices=JudgmentKind.choices, required=False, default="", help_text="For a judgment."
    )
    reason = serializers.CharField(max_length=2000)


class ProlificReturnsIn(StrictSerializer):
    participant_ids = serializers.ListField(
        child=serializers.CharField(max_length=64, allow_blank=False),
        min_length=1,
        max_length=10_000,
        help_text="Prolific participant ids whose submissions were returned or timed out.",
    )


class ProlificReturnsOut(serializers.Serializer):
    returned = serializers.IntegerField(help_text="Sessions ended as returned by this call.")
    already = serializers.IntegerField(help_text="Ids whose session had already ended.")


class ProlificBonusOut(serializers.Serializer):
    participant_id = serializers.CharField()
    attention_passed = serializers.IntegerField()
    completed = serializers.BooleanField()
    amount = serializers.DecimalField(max_digits=10, decimal_places=2)


class ExclusionUndoIn(StrictSerializer):
    reason = serializers.CharField(max_length=2000, required=False, default="", allow_blank=True)


class ExclusionOut(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    target = serializers.ChoiceField(choices=Exclusion.Target.choices)
    subject = serializers.SerializerMethodField()
    judgment_kind = serializers.CharField()
    reason = serializers.CharField()
    rule = serializers.CharField(help_text="The rule that proposed it; empty when by hand.")
    evidence = serializers.DictField()
    created_by = serializers.CharField(source="created_by.username", default=None, allow_null=True)
    created_at = serializers.DateTimeField()
    active = serializers.BooleanField(source="is_active")
    undone_by = serializers.CharField(source="undone_by.username", default=None, allow_null=True)
    undone_at = serializers.DateTimeField(allow_null=True)
    undo_reason = serializers.CharField()

    def get_subject(self, exclusion: Exclusion) -> str:
        if exclusion.rater is not None:
            return exclusion.rater.external_id
        if exclusion.item is not None:
            return exclusion.item.external_id
        return str(exclusion.judgment_id)
