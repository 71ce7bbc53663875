from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.studies.rubrics import SCALE_LIMIT


class _Common(serializers.Serializer):
    assignment = serializers.IntegerField(min_value=1)
    idempotency_key = serializers.CharField(min_length=8, max_length=64)
    active_ms = serializers.IntegerField(min_value=0, max_value=21_600_000)


# How many forms a rater page keeps for showing later tasks in place (rater.js): one per kind
# of task, and room for a rubric changed during the session.
MAX_KEPT_LAYOUTS = 8


class _WithNext(serializers.Serializer):
    with_next = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Answer with the next task too (`task`), for the page to show in place, so "
        "the next page is not a request of its own.",
    )
    layout = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        max_length=200,
        help_text="The answering page's `data-layout`: a next task of the same layout comes as "
        "its items alone (`task.content`), any other as its whole form (`task.form`).",
    )
    layouts = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        default=list,
        max_length=MAX_KEPT_LAYOUTS,
        help_text="The other layouts whose form the page keeps, unanswered, from earlier tasks "
        f"(at most {MAX_KEPT_LAYOUTS}): a next task of one of them comes as its items alone too, "
        "and the page rebuilds the form from its copy.",
    )


class AnswerSerializer(serializers.Serializer):
    # Only the bound every scale lies within: the service checks each answer against its own
    # question's points (apps/studies/scales.py; a slider's may be a fraction) and names it.
    value = serializers.FloatField(
        min_value=-SCALE_LIMIT, max_value=SCALE_LIMIT, required=False, allow_null=True
    )
    # "I don't get it", on a question that offers it: then no value.
    not_understood = serializers.BooleanField(required=False, default=False)
    at_ms = serializers.IntegerField(min_value=0, max_value=21_600_000)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("not_understood"):
            if attrs.get("value") is not None:
                raise serializers.ValidationError(
                    "an answer is a value or not_understood, not both"
                )
        elif attrs.get("value") is None:
            raise serializers.ValidationError("value is required (or not_understood: true)")
        return attrs


class ScorecardIn(_Common, _WithNext):
    answers = serializers.DictField(child=AnswerSerializer(), allow_empty=False)

    def validate_answers(self, value: dict[str, Any]) -> dict[str, Any]:
        if len(value) > 20:
            raise serializers.ValidationError("too many answers")
        return value


class EarlyAnswersIn(serializers.Serializer):
    assignment = serializers.IntegerField(min_value=1)
    active_ms = serializers.IntegerField(min_value=0, max_value=21_600_000)
    answers = serializers.DictField(child=AnswerSerializer(), allow_empty=False)

    def validate_answers(self, value: dict[str, Any]) -> dict[str, Any]:
        if len(value) > 20:
            raise serializers.ValidationError("too many answers")
        return value


class EarlyAnswersOut(serializers.Serializer):
    received = serializers.ListField(
        child=serializers.CharField(), help_text="The questions whose answers were stored"
    )
    unlocked = serializers.ListField(
        child=serializers.CharField(),
        help_text="Questions now open: every one of their prerequisites has arrived",
    )


class PairIn(_Common, _WithNext):
    winner = serializers.ChoiceField(
        choices=["left", "right", "tie", "neither"],
        help_text="The side chosen; 'tie' (about the same) and 'neither' only where the study "
        "offers them.",
    )


class TuringIn(_Common, _WithNext):
    guess = serializers.ChoiceField(choices=["ai", "human"])


class ExplanationIn(_WithNext):
    response = serializers.IntegerField(min_value=1)
    verdict = serializers.ChoiceField(choices=["yes", "no", "unsure"])


class NextTaskOut(serializers.Serializer):
    kind = serializers.CharField()
    id = serializers.IntegerField(help_text="The assignment (the scorecard, for an explanation)")
    layout = serializers.CharField(
        help_text="What the page shows besides the items; shown in place only on a page of the "
        "same kind and layout"
    )
    content = serializers.CharField(
        required=False,
        help_text="For a task of the answering page's layout: its items, as the task page "
        "renders them (HTML)",
    )
    form = serializers.CharField(
        required=False,
        help_text="For any other task (another kind, a self-explanation to judge): its whole "
        "form, as the task page renders it (HTML)",
    )
    progress = serializers.CharField(help_text="The session's progress (HTML)")


class SubmitOut(serializers.Serializer):
    kind = serializers.CharField()
    replayed = serializers.BooleanField()
    next = serializers.CharField(help_text="Page to show next")
    task = NextTaskOut(
        required=False,
        allow_null=True,
        help_text="With `with_next`: the next task, or null when the next page is no task "
        "(the end, a closed study): then load `next`.",
    )
