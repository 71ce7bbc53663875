from __future__ import annotations

import json
from typing import Any

from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from apps.core import jsonsafe
from apps.raters.forms import label_for_language
from apps.raters.models import BackgroundGroup
from apps.studies.models import Study
from apps.studies.rules import style_covariates_problem
from apps.studies.services import EDITABLE_SETTINGS

CUSTOM_RUBRIC = "custom"
NO_BACKGROUNDS = "-"


def _starting_spec(copy_from: str = "") -> str:
    """A stored rubric (the humor scorecard unless another is chosen) as a custom rubric to
    edit: a copy, never the rubric itself."""
    from apps.studies.models import Rubric
    from apps.studies.rubrics import rubric_spec

    source = (
        Rubric.objects.filter(slug=copy_from).first() or Rubric.objects.filter(slug="humor").first()
    )
    if source is None:
        return ""
    spec = rubric_spec(source)
    spec.pop("builtin", None)
    spec.update(slug="my-rubric", name="My rubric")
    return json.dumps(spec, ensure_ascii=False, indent=1)


class StudyCreateForm(forms.Form):
    slug = forms.SlugField(label=_("Short name (in the rater link)"), max_length=64)
    name = forms.CharField(label=_("Name"), max_length=200)
    rubric = forms.ChoiceField(label=_("Rubric"))
    rubric_spec = forms.CharField(
        label=_("Custom rubric (JSON; starts as a copy of the rubric chosen above it to edit)"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}),
    )
    backgrounds = forms.CharField(
        label=_(
            "Rater background groups (codes, comma-separated; empty: the method's four; - : none)"
        ),
        required=False,
        max_length=2000,
    )

    def __init__(self, *args: Any, copy_from: str = "", **kwargs: Any) -> None:
        from apps.studies.models import Rubric

        super().__init__(*args, **kwargs)
        stored = [
            # A built-in rubric's name is in the catalogue; a researcher's is their own word.
            (rubric.slug, gettext(rubric.name) if rubric.builtin else rubric.name)
            for rubric in Rubric.objects.order_by("-builtin", "slug").only(
                "slug", "name", "builtin"
            )
        ]
        rubric_field = self.fields["rubric"]
        assert isinstance(rubric_field, forms.ChoiceField)
        rubric_field.choices = [
            *stored,
            (CUSTOM_RUBRIC, _("Custom rubric (edit the JSON below)")),
        ]
        # The rubrics a custom one can start from (the page links to each as ?copy=<slug>).
        self.copy_choices = stored
        self.copy_from = copy_from if copy_from in {slug for slug, _ in stored} else "humor"
        self.fields["rubric_spec"].initial = _starting_spec(self.copy_from)

    def clean_rubric_spec(self) -> dict[str, Any] | None:
        if self.cleaned_data.get("rubric") != CUSTOM_RUBRIC:
            return None
        text = self.cleaned_data.get("rubric_spec") or ""
        try:
            spec = jsonsafe.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                _("The custom rubric is not valid JSON: %(error)s") % {"error": exc.msg}
            ) from exc
        except jsonsafe.JsonRejected as exc:
            raise forms.ValidationError(
                _("The custom rubric is not valid JSON: %(error)s") % {"error": str(exc)}
            ) from exc
        if not isinstance(spec, dict):
            raise forms.ValidationError(_("The custom rubric must be a JSON object."))
        return spec

    def clean_backgrounds(self) -> list[tuple[str, dict[str, str]]] | None:
        text = (self.cleaned_data.get("backgrounds") or "").strip()
        if not text:
            return None
        if text == NO_BACKGROUNDS:
            return []
        return [(code.strip(), {}) for code in text.split(",") if code.strip()]


class StudySettingsForm(forms.ModelForm):
    # A list in the model; a comma-separated line on the page.
    style_covariates = forms.CharField(
        required=False,
        label=_("Style covariates (item metadata keys)"),
        help_text=_(
            "Comma-separated metadata keys with numbers or yes/no values, added to length, "
            "language, level, the offense flag and being judged human in the style-controlled "
            "boards."
        ),
    )
    share_scorecard = forms.FloatField(label=_("Scorecards (share)"), min_value=0, max_value=1)
    share_pair = forms.FloatField(label=_("A/B pairs (share)"), min_value=0, max_value=1)
    share_turing = forms.FloatField(label=_("Turing judgments (share)"), min_value=0, max_value=1)

    class Meta:
        model = Study
        fields = list(EDITABLE_SETTINGS)
        # The model's own labels, marked here so the set-up page can be translated.
        labels = {
            "name": _("Name"),
            "description": _("Description"),
            "session_minutes": _("Session minutes"),
            "tasks_per_session": _("Tasks per session"),
            "target_scorecards_per_item": _("Target scorecards per item"),
            "pair_appearances_per_item": _("Pair appearances per item"),
            "pair_min_opponents": _("Pair min opponents"),
            "turing_judgments_per_item": _("Turing judgments per item"),
            "attention_check_rate": _("Attention check rate"),
            "adaptive_pairing": _("Adaptive pairing"),
            "allow_cross_language_pairs": _("Allow cross-language pairs"),
            "pair_offers_tie": _("Offer \u201cabout the same\u201d in A/B pairs"),
            "pair_offers_neither": _("Offer \u201cneither\u201d in A/B pairs"),
            "min_items_per_model": _("Min items per model"),
            "min_raters_per_item": _("Min raters per item"),
            "prolific_completion_code": _("Prolific completion code"),
            "prolific_screenout_code": _("Prolific screenout code"),
            "prolific_no_consent_code": _("Prolific code for declining consent"),
            "prolific_bonus_per_attention_pass": _("Prolific bonus per passed attention check"),
            "prolific_bonus_on_completion": _("Prolific bonus for a completed session"),
            "screening_top_k": _("Candidates kept per model by screening (top K)"),
            "exclusion_max_attention_failures": _("Attention-check failures allowed"),
            "exclusion_speeder_seconds": _("Speeder threshold (seconds per task)"),
            "exclusion_straight_line_tasks": _("Straight-line run (scorecards in a row)"),
            "exclusion_position_min_pairs": _("Pairs before the position rule applies"),
            "exclusion_rules_automatic": _("Apply exclusion rules automatically"),
            "exclude_items_not_evidence": _(
                "Leave items that are not evidence out of model comparisons"
            ),
            "culture_fdr": _("Culture test false-discovery rate (q)"),
            "count_held_items": _("Count the ratings of items the offense filter holds"),
        }
        help_texts = {
            "session_minutes": _(
                "The method: sessions work best under 30 minutes, and scores drop after 45. "
                "The quality page tests this study's own drift within sessions."
            ),
            "allow_cross_language_pairs": _(
                "Let raters who read several of the study's languages compare items across "
                "languages in A/B pairs. Off by default: a cross-language pair measures "
                "language, not humor."
            ),
            "pair_offers_tie": _(
                "Ties enter the strengths through a tie model (Davidson or Rao-Kupper, whichever "
                "fits better) and the tie rate is reported. Off by default: a forced choice."
            ),
            "pair_offers_neither": _(
                "Neither is funny, or the rater does not get them: reported as its own rate per "
                "item and model, and no evidence about their order."
            ),
            "prolific_no_consent_code": _(
                "Shown with a link back to Prolific to a participant who declines consent, so "
                "they can return the study without an empty submission."
            ),
            "prolific_bonus_per_attention_pass": _(
                "Builds the bulk-bonus file on the Prolific page: this amount for each attention "
                "check a Prolific participant passed."
            ),
            "prolific_bonus_on_completion": _(
                "Added to the bulk-bonus file for each Prolific participant whose session ended "
                "complete."
            ),
            "screening_top_k": _(
                "A screening run promotes this many candidates per model, by FunnyScore, into "
                "the human study."
            ),
            "exclusion_max_attention_failures": _(
                "A rater who fails more attention checks than this is proposed for exclusion."
            ),
            "exclusion_speeder_seconds": _(
                "A rater whose median time per task is below this is proposed as a speeder."
            ),
            "exclusion_straight_line_tasks": _(
                "This many scorecards in a row with the same answers are proposed as "
                "straight-lining."
            ),
            "exclusion_position_min_pairs": _(
                "A rater who always picks the same side is proposed only after this many pairs."
            ),
            "exclusion_rules_automatic": _(
                "Apply the proposals at once instead of waiting for a researcher to confirm them."
            ),
            "exclude_items_not_evidence": _(
                "Culture-dependent and safety-intercepted items are left out of the model "
                "comparison on the summary page and in the report."
            ),
            "count_held_items": _(
                "Items held by the offense filter after they were rated (or imported with "
                "ratings) keep counting, marked as held on every results page, unless this is "
                "off."
            ),
            "culture_fdr": _(
                "An item below the cross-group agreement line is culture-dependent only when a "
                "permutation test of the raters' groups is a discovery at this false-discovery "
                "rate across items (Benjamini-Hochberg). Greater than 0 and less than 1; 0.1 by "
                "default."
            ),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        mix = self.instance.task_mix or {}
        for kind in ("scorecard", "pair", "turing"):
            self.fields[f"share_{kind}"].initial = mix.get(kind, 0.0)
        for name in (
            "prolific_completion_code",
            "prolific_screenout_code",
            "prolific_no_consent_code",
            "description",
            "prolific_bonus_per_attention_pass",
            "prolific_bonus_on_completion",
        ):
            self.fields[name].required = False
        self.initial["style_covariates"] = ", ".join(self.instance.style_covariates or [])

    def _bonus(self, name: str) -> Any:
        # Left empty: no change (a form that predates the bonus rules keeps them as they are).
        value = self.cleaned_data.get(name)
        return getattr(self.instance, name) if value is None else value

    def clean_prolific_bonus_per_attention_pass(self) -> Any:
        return self._bonus("prolific_bonus_per_attention_pass")

    def clean_prolific_bonus_on_completion(self) -> Any:
        return self._bonus("prolific_bonus_on_completion")

    def clean_style_covariates(self) -> list[str]:
        text = self.cleaned_data.get("style_covariates") or ""
        names = [name.strip() for name in text.split(",") if name.strip()]
        problem = style_covariates_problem(names)
        if problem:
            raise forms.ValidationError(problem)
        return names

    def task_mix(self) -> dict[str, float]:
        return {
            kind: self.cleaned_data[f"share_{kind}"] for kind in ("scorecard", "pair", "turing")
        }


class QuotaForm(forms.Form):
    """One optional quota per background group of the study (blank = no limit)."""

    def __init__(self, *args: Any, study: Study, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.groups = list(BackgroundGroup.objects.filter(study=study).order_by("position", "code"))
        for group in self.groups:
            self.fields[f"quota_{group.code}"] = forms.IntegerField(
                label=label_for_language(group.label, group.code),
                required=False,
                min_value=0,
                max_value=1_000_000,
                initial=group.quota,
            )

    def quotas(self) -> dict[str, int | None]:
        return {group.code: self.cleaned_data[f"quota_{group.code}"] for group in self.groups}


class ItemsUploadForm(forms.Form):
    file = forms.FileField(
        label=_("Items file (.jsonl or .csv)"),
        help_text=_(
            "Items with pictures: a .zip of the items file (.jsonl or .csv) and the pictures its "
            "image_file column names (JPEG, PNG or WebP, up to 5 MB), each with image_alt, what "
            "the picture shows per language."
        ),
    )
    as_candidates = forms.BooleanField(
        label=_("Import as candidates for screening"), required=False
    )


class JudgmentsUploadForm(forms.Form):
    file = forms.FileField(label=_("Judgments file (.jsonl or .csv)"))
