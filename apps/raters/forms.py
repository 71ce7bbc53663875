from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from apps.raters.models import AgeBand, BackgroundGroup
from apps.studies import languages
from apps.studies.models import Study

AGE_LABELS = {
    AgeBand.UNDISCLOSED: _("Prefer not to say"),
}


def label_for_language(labels: dict[str, str], fallback: str) -> str:
    language = (get_language() or "en").lower()
    key = "zh" if language.startswith("zh") else "en"
    return labels.get(key) or labels.get("en") or fallback


class EnrollForm(forms.Form):
    background = forms.ChoiceField(
        label=_("Which best describes your work?"), widget=forms.RadioSelect
    )
    age_band = forms.ChoiceField(label=_("Your age"), choices=())
    consent = forms.BooleanField(
        label=_("I have read the information above and agree to take part."),
        error_messages={"required": _("You need to agree before taking part.")},
    )

    def __init__(self, *args: Any, study: Study, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if study.asks_languages:
            # Only asked when the study has several languages: tasks come in the ones chosen.
            self.fields["languages"] = forms.MultipleChoiceField(
                label=_("Which of these languages do you read well enough to judge humor?")
                if study.rubric.kind == "humor"
                else _("Which of these languages do you read well enough to judge writing?"),
                help_text=_("You will only be shown texts in the languages you choose."),
                choices=[(code, languages.name(code)) for code in study.languages],
                initial=languages.from_interface(get_language(), study.languages),
                widget=forms.CheckboxSelectMultiple,
                error_messages={"required": _("Choose at least one language you read.")},
            )
            self.order_fields(["languages", "background", "age_band", "consent"])
        groups = BackgroundGroup.objects.filter(study=study).order_by("position", "code")
        background = self.fields["background"]
        age_band = self.fields["age_band"]
        assert isinstance(background, forms.ChoiceField)
        assert isinstance(age_band, forms.ChoiceField)
        background.choices = [(g.code, label_for_language(g.label, g.code)) for g in groups]
        age_band.choices = [
            (value, AGE_LABELS.get(AgeBand(value), label)) for value, label in AgeBand.choices
        ]
