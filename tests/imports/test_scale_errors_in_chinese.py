"""An answer off its question's scale is refused with a sentence a page shows in its reader's
language; the English text the API and scripts read is unchanged."""

from __future__ import annotations

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
