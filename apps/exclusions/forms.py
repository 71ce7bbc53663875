from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from apps.exclusions.models import Exclusion, JudgmentKind
from apps.exclusions.services import MAX_REASON


class ExcludeForm(forms.Form):
    target = forms.ChoiceField(label=_("Leave out"), choices=Exclusion.Target.choices)
    judgment_kind = forms.ChoiceField(
        label=_("Judgment kind (for a judgment)"),
        choices=[("", "—"), *JudgmentKind.choices],
        required=False,
    )
    subject = forms.CharField(
        label=_("Rater id, item id, or judgment number"), max_length=200, strip=True
    )
    reason = forms.CharField(
        label=_("Reason (required)"),
        max_length=MAX_REASON,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 2}),
    )


class DecisionForm(forms.Form):
    """Undo an exclusion, or confirm or dismiss a proposal: the row's number and a reason."""

    id = forms.IntegerField(min_value=1, max_value=2**62)
    reason = forms.CharField(max_length=MAX_REASON, strip=True, required=False)
