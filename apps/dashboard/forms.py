from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from apps.raters.models import BackgroundGroup
from apps.studies.models import Study
from apps.studies.services import EDITABLE_SETTINGS


class StudyCreateForm(forms.Form):
    slug = forms.SlugField(label=_("Short name (in the rater link)"), max_length=64)
    name = forms.CharField(label=_("Name"), max_length=200)
    rubric = forms.ChoiceField(
        label=_("Rubric"),
        choices=[("humor", _("Humor scorecard")), ("content", _("Content rubric"))],
    )


class StudySettingsForm(forms.ModelForm):
    share_scorecard = forms.FloatField(label=_("Scorecards (share)"), min_value=0, max_value=1)
    share_pair = forms.FloatField(label=_("A/B pairs (share)"), min_value=0, max_value=1)
    share_turing = forms.FloatField(label=_("Turing judgments (share)"), min_value=0, max_value=1)

    class Meta:
        model = Study
        fields = list(EDITABLE_SETTINGS)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        mix = self.instance.task_mix or {}
        for kind in ("scorecard", "pair", "turing"):
            self.fields[f"share_{kind}"].initial = mix.get(kind, 0.0)
        for name in ("prolific_completion_code", "prolific_screenout_code", "description"):
            self.fields[name].required = False

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
                label=group.label.get("en", group.code),
                required=False,
                min_value=0,
                max_value=1_000_000,
                initial=group.quota,
            )

    def quotas(self) -> dict[str, int | None]:
        return {group.code: self.cleaned_data[f"quota_{group.code}"] for group in self.groups}


class ItemsUploadForm(forms.Form):
    file = forms.FileField(label=_("Items file (.jsonl or .csv)"))
