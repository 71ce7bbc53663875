"""An aggregation computed with two threads is the same document as with one: the reliability
section runs beside the rest, from its own seed (apps.analysis.stats.report.compute_results)."""

from __future__ import annotations

import json
import threading

import pytest

from apps.analysis.stats import boards, reliability, report
from apps.analysis.stats.report import compute_study_document
from tests.analysis.stats.golden_inputs import golden_inputs


def _text(document: dict) -> str:
    # NaN is not equal to itself; as text the two documents compare whole.
    return json.dumps(document, sort_keys=True, default=str)


def test_two_threads_give_the_same_document_as_one():
    one = compute_study_document(golden_inputs(), seed=7, rounds=40, threads=1)
    two = compute_study_document(golden_inputs(), seed=7, rounds=40, threads=2)
    assert one["reliability"]["study"] is not None
    assert _text(two) == _text(one)
    assert list(two) == list(one)


def _threads_calling(monkeypatch, module, name: str) -> list[threading.Thread]:
    """The thread of each call of `module.name`, in order."""
    threads: list[threading.Thread] = []
    original = getattr(module, name)

    def spy(*args, **kwargs):
        threads.append(threading.current_thread())
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return threads


def test_the_reliability_section_runs_in_its_own_thread_only_when_asked(monkeypatch):
    threads = _threads_calling(monkeypatch, report, "reliability_section")
    report.compute_results(golden_inputs(), seed=7, rounds=20, threads=1)
    report.compute_results(golden_inputs(), seed=7, rounds=20, threads=2)
    assert threads[0] is threading.current_thread()
    assert threads[1] is not threading.current_thread()


def test_an_error_in_the_other_thread_reaches_the_caller(monkeypatch):
    def broken(*args, **kwargs):
        raise FloatingPointError("the reliability section failed")

    monkeypatch.setattr(report, "reliability_section", broken)
    with pytest.raises(FloatingPointError, match="reliability section failed"):
        report.compute_results(golden_inputs(), seed=7, rounds=20, threads=2)


def test_the_k_rater_reliability_runs_beside_the_split_halves_when_asked(monkeypatch):
    threads = _threads_calling(monkeypatch, reliability, "_k_rater_by_group")
    inputs = golden_inputs()
    one = boards.reliability_section(inputs, seed=3, rounds=20, threads=1)
    two = boards.reliability_section(inputs, seed=3, rounds=20, threads=2)
    assert threads[0] is threading.current_thread()
    assert threads[1] is not threading.current_thread()
    assert _text(two) == _text(one)


def test_the_groups_bootstraps_run_beside_the_studys_when_asked(monkeypatch):
    """With two threads the study's own k-rater bootstrap and shared draws run in one worker,
    its groups' bootstraps in the other (or in the first, when it gets to one not started): the
    golden study's three models are three groups beside the study."""
    import time

    threads: list[threading.Thread] = []
    original = reliability._k_rater_without_empirical

    def spy(*args, **kwargs):
        threads.append(threading.current_thread())
        if len(threads) == calls_alone + 1:
            # The study's own bootstrap, first in its worker: long enough for the other
            # worker to start on a group, however busy the machine.
            time.sleep(0.3)
        return original(*args, **kwargs)

    inputs = golden_inputs()
    calls_alone = 10**6
    monkeypatch.setattr(reliability, "_k_rater_without_empirical", spy)
    one = boards.reliability_section(inputs, seed=3, rounds=20, threads=1)
    calls_alone = len(threads)
    two = boards.reliability_section(inputs, seed=3, rounds=20, threads=2)
    assert calls_alone == len(threads) - calls_alone >= 3
    assert len({id(thread) for thread in threads[calls_alone:]}) == 2
    assert _text(two) == _text(one)
