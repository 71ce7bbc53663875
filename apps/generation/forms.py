"""Forms of the generation pages. They check types and shapes; the services check the rules."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from apps.generation.messages import DEFAULT_EXPLANATION_PROMPTS
from apps.generation.models import ModelEndpoint
from apps.studies.models import Item


class PromptSetUploadForm(forms.Form):
    name = forms.CharField(label=_("Prompt set name"), max_length=120)
    humor_type = forms.CharField(
        label=_("Humor type of the set (optional)"), max_length=64, required=False
    )
    file = forms.FileField(label=_("Prompts file (.jsonl or .csv)"))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Beside the model form on the overview page, which also has a name: ids of its own.
        kwargs.setdefault("auto_id", "upload_%s")
        super().__init__(*args, **kwargs)


class PromptSetForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=120)
    humor_type = forms.CharField(
        label=_("Humor type of the set (optional)"), max_length=64, required=False
    )
    description = forms.CharField(
        label=_("Description"), required=False, widget=forms.Textarea(attrs={"rows": 2})
    )


def _turns(text: str) -> list[dict[str, str]]:
    """'user: ...' / 'assistant: ...' lines; a line without a role continues the turn before."""
    turns: list[dict[str, str]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        role, sep, rest = line.partition(":")
        if sep and role.strip().lower() in ("user", "assistant"):
            turns.append({"role": role.strip().lower(), "text": rest.strip()})
        elif turns:
            turns[-1]["text"] += "\n" + line
        else:
            raise forms.ValidationError(
                _("Each turn starts with 'user:' or 'assistant:' (line: %(line)s)"),
                params={"line": line[:40]},
            )
    return turns


class PromptForm(forms.Form):
    id = forms.CharField(label=_("Prompt id"), max_length=64)
    level = forms.ChoiceField(label=_("Level"), choices=Item.Level.choices)
    lang = forms.CharField(label=_("Language"), max_length=16, initial="en")
    topic = forms.CharField(label=_("Topic"), max_length=128, required=False)
    prompt = forms.CharField(
        label=_("Instruction (a topic word or an opening line)"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    context = forms.CharField(
        label=_("Dialogue history (multi-turn): one turn per line"),
        # The role words are the format's, typed as they are in any interface language.
        help_text=_("Each turn starts with <code>user:</code> or <code>assistant:</code>."),
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
    )
    scenario = forms.CharField(
        label=_("Scenario"), required=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    constraints = forms.CharField(
        label=_("Constraints (scenario): one per line"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    humor_type = forms.CharField(label=_("Humor type (optional)"), max_length=64, required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Below the prompt set's own form, which also has a humor type: ids of its own.
        kwargs.setdefault("auto_id", "prompt_%s")
        super().__init__(*args, **kwargs)

    def clean_context(self) -> list[dict[str, str]]:
        return _turns(self.cleaned_data.get("context") or "")

    def clean_constraints(self) -> list[str]:
        text = self.cleaned_data.get("constraints") or ""
        return [line.strip() for line in text.splitlines() if line.strip()]

    def as_fields(self) -> dict[str, Any]:
        """The prompt as a JSONL line's fields (the service checks it like an imported line)."""
        return dict(self.cleaned_data)

    @staticmethod
    def initial_for(prompt: Any) -> dict[str, Any]:
        return {
            "id": prompt.external_id,
            "level": prompt.level,
            "lang": prompt.language,
            "topic": prompt.topic,
            "prompt": prompt.text,
            "context": "\n".join(f"{t['role']}: {t['text']}" for t in prompt.context or []),
            "scenario": prompt.scenario,
            "constraints": "\n".join(prompt.constraints or []),
            "humor_type": prompt.humor_type,
        }


class EndpointForm(forms.Form):
    name = forms.CharField(label=_("Name (the source in results)"), max_length=100)
    kind = forms.ChoiceField(label=_("Kind"), choices=ModelEndpoint.Kind.choices)
    url = forms.CharField(label=_("Endpoint URL"), max_length=500, required=False)
    model = forms.CharField(label=_("Model"), max_length=200, required=False)
    max_concurrency = forms.IntegerField(
        label=_("Calls at once"), min_value=1, max_value=64, initial=2
    )
    timeout_seconds = forms.FloatField(
        label=_("Timeout (s)"), min_value=0.1, max_value=600, initial=60
    )
    max_retries = forms.IntegerField(label=_("Retries"), min_value=0, max_value=10, initial=3)
    send_seed = forms.BooleanField(label=_("Send the seed"), required=False, initial=True)


class RunForm(forms.Form):
    prompt_sets = forms.TypedMultipleChoiceField(
        label=_("Prompt sets"), coerce=int, widget=forms.CheckboxSelectMultiple
    )
    endpoints = forms.TypedMultipleChoiceField(
        label=_("Models"), coerce=int, widget=forms.CheckboxSelectMultiple
    )
    samples_per_prompt = forms.IntegerField(
        label=_("Samples per prompt"), min_value=1, max_value=50, initial=1
    )
    temperature = forms.FloatField(label=_("Temperature"), min_value=0, max_value=2, initial=1.1)
    top_p = forms.FloatField(label=_("top_p"), min_value=0.01, max_value=1, initial=0.9)
    max_tokens = forms.IntegerField(label=_("Max tokens"), min_value=1, max_value=4096, initial=256)
    seed = forms.IntegerField(
        label=_("Seed (optional)"), min_value=0, max_value=2**31 - 1, required=False
    )
    explain = forms.BooleanField(
        label=_("Ask for a self-explanation"), required=False, initial=True
    )
    explanation_en = forms.CharField(
        label=_("Explanation prompt (English)"),
        max_length=2000,
        initial=DEFAULT_EXPLANATION_PROMPTS["en"],
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    explanation_zh = forms.CharField(
        label=_("Explanation prompt (Chinese)"),
        max_length=2000,
        initial=DEFAULT_EXPLANATION_PROMPTS["zh"],
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    humor_type = forms.CharField(
        label=_("Humor type for every output (optional)"), max_length=64, required=False
    )
    api_key = forms.CharField(
        label=_("API key (optional; never shown again)"),
        max_length=500,
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
    )

    def __init__(self, *args: Any, prompt_sets: Any = (), endpoints: Any = (), **kwargs: Any):
        super().__init__(*args, **kwargs)
        sets_field = self.fields["prompt_sets"]
        models_field = self.fields["endpoints"]
        assert isinstance(sets_field, forms.TypedMultipleChoiceField)
        assert isinstance(models_field, forms.TypedMultipleChoiceField)
        sets_field.choices = [(s.pk, s.name) for s in prompt_sets]
        models_field.choices = [(e.pk, e.name) for e in endpoints]


class ResumeForm(forms.Form):
    api_key = forms.CharField(
        label=_("API key (if the run came with one)"),
        max_length=500,
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
    )
