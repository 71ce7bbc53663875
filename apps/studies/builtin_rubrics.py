"""The two rubrics LaughLab ships: plain data, applied by a data migration.

The humor scorecard is ordered on purpose: surprise (how far the ending departs from what was
expected) and coherence (whether the surprise can still be explained) are answered before
funniness, so the rater has analysed the joke before giving an overall verdict.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_noop

HUMOR: dict[str, Any] = {
    "slug": "humor",
    "name": "Humor scorecard",
    "kind": "humor",
    "primary": "funniness",
    "questions": [
        {
            "name": "surprise",
            "kind": "likert",
            "min_value": 1,
            "max_value": 5,
            "prompt": {
                "en": "How surprising is the ending?",
                "zh": "结尾有多出人意料？",
            },
            "anchors": {
                "en": {"1": "Saw it coming", "5": "Completely unexpected"},
                "zh": {"1": "完全猜到了", "5": "完全没想到"},
            },
        },
        {
            "name": "coherence",
            "kind": "likert",
            "min_value": 1,
            "max_value": 5,
            "prompt": {
                "en": "Does the surprise still make sense once you think about it?",
                "zh": "仔细想想，这个意外还说得通吗？",
            },
            "anchors": {
                "en": {"1": "Makes no sense", "5": "Makes perfect sense"},
                "zh": {"1": "完全说不通", "5": "完全说得通"},
            },
        },
        {
            "name": "funniness",
            "kind": "likert",
            "min_value": 1,
            "max_value": 7,
            "after": ["surprise", "coherence"],
            "prompt": {"en": "How funny is it?", "zh": "有多好笑？"},
            "anchors": {
                "en": {"1": "Not funny at all", "4": "A knowing smile", "7": "Laughed out loud"},
                "zh": {"1": "一点也不好笑", "4": "会心一笑", "7": "笑出声来"},
            },
        },
        {
            "name": "offensive",
            "kind": "binary",
            "min_value": 0,
            "max_value": 1,
            "prompt": {
                "en": "Is it offensive?",
                "zh": "这个内容是否冒犯？",
            },
            "anchors": {"en": {"0": "No", "1": "Yes"}, "zh": {"0": "否", "1": "是"}},
        },
    ],
}

CONTENT: dict[str, Any] = {
    "slug": "content",
    "name": "Content rubric",
    "kind": "content",
    "primary": "overall",
    "questions": [
        {
            "name": "fluency",
            "kind": "likert",
            "min_value": 1,
            "max_value": 5,
            "prompt": {"en": "How fluent and well-formed is the text?", "zh": "文字是否流畅通顺？"},
            "anchors": {
                "en": {"1": "Hard to read", "5": "Reads naturally"},
                "zh": {"1": "难以阅读", "5": "自然流畅"},
            },
        },
        {
            "name": "informativeness",
            "kind": "likert",
            "min_value": 1,
            "max_value": 5,
            "prompt": {
                "en": "How much useful information does it give?",
                "zh": "提供了多少有用信息？",
            },
            "anchors": {
                "en": {"1": "Nothing new", "5": "Very informative"},
                "zh": {"1": "没有新信息", "5": "信息量很大"},
            },
        },
        {
            "name": "originality",
            "kind": "likert",
            "min_value": 1,
            "max_value": 5,
            "prompt": {"en": "How original is it?", "zh": "内容有多原创？"},
            "anchors": {
                "en": {"1": "Formulaic", "5": "Fresh and original"},
                "zh": {"1": "千篇一律", "5": "新颖独到"},
            },
        },
        {
            # The verdict the per-type weights are fitted on ("rated good" = 4 or 5). Asked
            # last and separately, so "good" is the rater's judgment, not a sum of the three.
            "name": "overall",
            "kind": "likert",
            "min_value": 1,
            "max_value": 5,
            "prompt": {
                "en": "Overall, how good is this text for what it sets out to do?",
                "zh": "总体而言，就其写作目的来看，这篇文字写得有多好？",
            },
            "anchors": {
                "en": {"1": "Poor", "5": "Excellent"},
                "zh": {"1": "很差", "5": "非常好"},
            },
            "after": ["fluency", "informativeness", "originality"],
        },
    ],
}

# The humor scorecard with "I don't get it" on funniness (HaHackathon's and the humor arenas'
# practice): a rater who does not understand a joke says so instead of inventing a number.
HUMOR_NOT_UNDERSTOOD: dict[str, Any] = {
    **HUMOR,
    "slug": "humor-not-understood",
    # The name is translated where it is shown (a built-in rubric's name is in the catalogue).
    "name": gettext_noop("Humor scorecard with “I don't get it”"),
    "questions": [
        {**question, "not_understood": True} if question["name"] == "funniness" else question
        for question in HUMOR["questions"]
    ],
}

# The humor scorecard with the method's behavioural signals after funniness: would the rater
# retell the joke to a friend, and would they reply to it or ask a follow-up (是否复述给朋友、
# 是否主动追问). apps/analysis/stats/signals.py reads them by these names.
HUMOR_SIGNALS: dict[str, Any] = {
    **HUMOR,
    "slug": "humor-signals",
    "name": gettext_noop("Humor scorecard with retelling and follow-up"),
    "questions": [
        *HUMOR["questions"],
        {
            "name": "retell",
            "kind": "binary",
            "min_value": 0,
            "max_value": 1,
            "after": ["funniness"],
            "prompt": {
                "en": "Would you retell this to a friend?",
                "zh": "您会把它讲给朋友听吗？",
            },
            "anchors": {"en": {"0": "No", "1": "Yes"}, "zh": {"0": "不会", "1": "会"}},
        },
        {
            "name": "follow_up",
            "kind": "binary",
            "min_value": 0,
            "max_value": 1,
            "after": ["funniness"],
            "prompt": {
                "en": "Would you reply to it, or ask a follow-up?",
                "zh": "您会回应它，或者追问下去吗？",
            },
            "anchors": {"en": {"0": "No", "1": "Yes"}, "zh": {"0": "不会", "1": "会"}},
        },
    ],
}

BUILTIN_RUBRICS: list[dict[str, Any]] = [HUMOR, CONTENT, HUMOR_NOT_UNDERSTOOD, HUMOR_SIGNALS]


def install_builtin_rubrics(apps: Any) -> None:
    """Create or refresh the built-in rubrics through an app registry (a migration's or the live one).

    Run by the data migration, and again after every `migrate` or `flush` (post_migrate), the way
    Django recreates content types, so a database emptied by a test run or an admin keeps them.
    """
    Rubric = apps.get_model("studies", "Rubric")
    Question = apps.get_model("studies", "Question")
    # An early migration's registry lacks fields added since: set only what the model has.
    fields = {f.name for f in Rubric._meta.get_fields()}
    question_fields = {f.name for f in Question._meta.get_fields()}
    for spec in BUILTIN_RUBRICS:
        defaults = {"name": spec["name"], "kind": spec["kind"], "builtin": True}
        if "primary_question" in fields:
            defaults["primary_question"] = spec["primary"]
        rubric, _ = Rubric.objects.update_or_create(slug=spec["slug"], defaults=defaults)
        by_name = {}
        for position, question in enumerate(spec["questions"], start=1):
            by_name[question["name"]], _ = Question.objects.update_or_create(
                rubric=rubric,
                name=question["name"],
                defaults={
                    "position": position,
                    "kind": question["kind"],
                    "min_value": question["min_value"],
                    "max_value": question["max_value"],
                    "required": question.get("required", True),
                    "prompt": question["prompt"],
                    "anchors": question.get("anchors", {}),
                    **(
                        {"allow_not_understood": question.get("not_understood", False)}
                        if "allow_not_understood" in question_fields
                        else {}
                    ),
                },
            )
        for question in spec["questions"]:
            by_name[question["name"]].answered_after.set(
                [by_name[name] for name in question.get("after", [])]
            )
