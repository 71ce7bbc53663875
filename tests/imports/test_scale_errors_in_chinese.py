"""An answer off its question's scale is refused with a sentence a page shows in its reader's
language; the English text the API and scripts read is unchanged."""

from __future__ import annotations

import pytest
from django.utils import translation

from apps.studies import scales


def test_an_off_scale_answer_reads_in_chinese_and_its_english_is_unchanged():
    wrong = scales.problem_sentence(kind="likert", low=1, high=7, step=None, value=9)
    assert wrong is not None
    assert wrong.english() == "must be from 1 to 7, got 9"
    assert scales.problem(kind="likert", low=1, high=7, step=None, value=9) == wrong.english()
    with translation.override("zh-hans"):
        assert wrong.text() == "必须在 1 到 7 之间，收到的是 9"


def test_a_slider_value_off_its_steps_names_the_step_in_both_languages():
    wrong = scales.problem_sentence(kind="slider", low=-10, high=10, step=1 / 32, value=0.219)
    assert wrong is not None
    assert wrong.english() == "must lie on the scale's steps of 1/32 from -10 to 10, got 0.219"
    with translation.override("zh-hans"):
        text = wrong.text()
    assert "1/32" in text
    assert "0.219" in text
    assert "步长" in text
    assert scales.problem_sentence(kind="slider", low=-10, high=10, step=1 / 32, value=0.25) is None


def test_a_fraction_on_an_integer_scale_and_a_non_finite_value_are_refused():
    assert scales.problem(kind="likert", low=1, high=5, step=None, value=2.5) == (
        "must be an integer from 1 to 5, got 2.5"
    )
    with translation.override("zh-hans"):
        nan = scales.problem_sentence(kind="likert", low=1, high=5, step=None, value=float("nan"))
        assert nan is not None
        assert nan.text() == "必须是有限的数，收到的是 nan"


def test_a_json_value_refused_inside_a_line_reads_in_chinese_with_its_path():
    from apps.core import jsonsafe
    from apps.core.errors import LineError
    from apps.core.lines import read_records

    data = b'{"item": "j1", "meta": {"a": [1, 1e999]}}\n'
    errors = [e for e in read_records(data, filename="items.jsonl") if isinstance(e, LineError)]
    assert errors, "the out-of-range number was not refused"
    error = errors[0]
    assert error.message == "meta.a[1] must be a finite number (1e999 is out of range)"
    with translation.override("zh-hans"):
        assert error.text == "meta.a[1] 必须是有限的数（1e999 超出范围）"
    with pytest.raises(jsonsafe.JsonRejected) as refused:
        jsonsafe.loads("[" * 100 + "]" * 100)
    assert refused.value.message == "is nested more than 32 levels deep"
    with translation.override("zh-hans"):
        assert refused.value.sentence.text() == "嵌套超过 32 层"


def test_a_nul_character_in_an_imported_line_is_said_in_chinese():
    from apps.core.errors import LineError
    from apps.core.lines import read_records

    data = b'{"item": "j1", "text": "a\\u0000b"}\n'
    errors = [e for e in read_records(data, filename="items.jsonl") if isinstance(e, LineError)]
    assert [(e.field, e.message) for e in errors] == [("text", "contains a NUL character")]
    with translation.override("zh-hans"):
        assert errors[0].text == "含有 NUL 字符"


def test_a_prompt_line_refused_at_its_level_is_said_in_chinese():
    from apps.core.lines import Record
    from apps.generation.prompts import parse_prompts

    record = Record(line=3, fields={"id": "p1", "level": "scenario", "lang": "en"})
    _rows, errors = parse_prompts([record])
    scenario = next(e for e in errors if e.field == "scenario")
    assert scenario.message == "is required at the scenario level (the situation)"
    with translation.override("zh-hans"):
        assert scenario.text == "在情景层级为必填（情景描述）"
