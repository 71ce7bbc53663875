"""Warnings are stored as codes with parameters and read in the reader's language; a study of
thousands of items has a handful of warnings, the per-item ones summarised as counts."""

from __future__ import annotations

from django.utils import translation

from apps.analysis import labels
from apps.analysis.stats.diagnostics import sample_size_warnings

STORED = [
    {
        "code": "too_few_items",
        "scope": "study",
        "subject": "model-a",
        "params": {"model": "model-a", "n": 7, "min": 30},
        "message": "model-a has 7 rated items; at least 30 are needed before its scores can be compared.",
        "value": 7,
        "threshold": 30,
    },
    {
        "code": "controversial_question",
        "scope": "study",
        "subject": "funniness",
        "params": {"question": "funniness", "measure": "ordinal", "value": 0.31, "threshold": 0.4},
        "message": "...",
        "value": 0.31,
        "threshold": 0.4,
    },
    {
        "code": "too_few_raters",
        "scope": "items",
        "flag": "too_few_raters",
        "subject": "items",
        "params": {"count": 15089, "min": 15},
        "message": "...",
        "value": 15089,
        "threshold": 15,
    },
]


def test_a_stored_warning_reads_in_english_and_in_chinese():
    with translation.override("en"):
        english = labels.warning_text(STORED[1])
    with translation.override("zh-hans"):
        chinese = labels.warning_text(STORED[1])
    assert english == (
        "Agreement on funniness (ordinal Krippendorff's alpha) is 0.31, below 0.40: "
        "too controversial to rank on."
    )
    assert (
        chinese
        == "好笑程度 的一致性（有序 Krippendorff α）为 0.31，低于 0.40：争议过大，不宜用于排名。"
    )
    with translation.override("zh-hans"):
        assert labels.warning_text(STORED[0]) == (
            "model-a 只有 7 个已评分条目；至少需要 30 个，其分数才能比较。"
        )


def test_results_stored_before_parameters_still_read_from_subject_value_and_threshold():
    old = {"code": "too_few_items", "subject": "m", "message": "x", "value": 3, "threshold": 30}
    with translation.override("zh-hans"):
        assert labels.warning_text(old) == "m 只有 3 个已评分条目；至少需要 30 个，其分数才能比较。"
    assert labels.warning_text({"code": "from_the_future", "message": "kept"}) == "kept"


def test_study_level_warnings_come_first_and_per_item_flags_are_counts():
    items = [{"flags": ["too_few_raters"]}] * 15089 + [{"flags": ["controversial"]}] * 9079
    shown = labels.study_warnings(list(reversed(STORED)), items)
    assert [w["code"] for w in shown["study"]] == ["controversial_question", "too_few_items"]
    assert [(w["code"], w["flag"]) for w in shown["items"]] == [
        ("too_few_raters", "too_few_raters")
    ]
    assert shown["flags"] == [
        {"flag": "controversial", "label": "controversial", "count": 9079},
        {"flag": "too_few_raters", "label": "too few raters", "count": 15089},
    ]


def test_per_item_warnings_of_older_results_are_counted_never_listed():
    old = sample_size_warnings({}, {f"j{i}": 3 for i in range(500)})
    assert len(old) == 500
    assert all(w["params"]["min"] == 15 for w in old)
    shown = labels.study_warnings(old, [{"flags": ["too_few_raters"]}] * 500)
    assert shown["study"] == []
    assert shown["items"] == []
    assert shown["flags"][0]["count"] == 500


def test_the_export_form_keeps_code_params_and_an_english_message():
    with translation.override("zh-hans"):
        exported = labels.warning_export(STORED[0])
    assert exported["code"] == "too_few_items"
    assert exported["params"] == {"model": "model-a", "n": 7, "min": 30}
    assert exported["message"].startswith("model-a has 7 rated items")
    assert exported["text"].startswith("model-a 只有 7 个")
