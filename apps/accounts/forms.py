"""The account page's form: shapes only; the service checks the rules."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from apps.accounts.services import NAME_MAX_LENGTH


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        label=_("Name"),
        max_length=NAME_MAX_LENGTH,
        help_text=_("What the token is for, e.g. the script or the machine that uses it."),
    )
    studies = forms.TypedMultipleChoiceField(
        label=_("Limit to these studies (none chosen: all your studies)"),
        coerce=int,
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )

    def __init__(self, *args: Any, studies: Any = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["studies"]
        assert isinstance(field, forms.TypedMultipleChoiceField)
        field.choices = [(study.pk, study.name or study.slug) for study in studies]
