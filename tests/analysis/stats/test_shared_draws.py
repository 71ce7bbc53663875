"""One set of rater resamples read by two bootstraps (apps.analysis.stats.bootstrap.SharedDraws):
the study's k-rater ICC and the group tables of the primary question draw each batch once, and
what they read does not depend on who drew it, in which thread or order."""

from __future__ import annotations

import threading

import numpy as np

from apps.analysis.stats import bootstrap, report
from apps.analysis.stats.bootstrap import SharedDraws, cluster_draws
from tests.analysis.stats.golden_inputs import golden_inputs


def _calls(monkeypatch) -> list[int]:
    """The number of clusters of each `cluster_draws` call, in order."""
    found: list[int] = []

    def counted(rng, n_clusters, r):
        found.append(n_clusters)
        return cluster_draws(rng, n_clusters, r)

    monkeypatch.setattr(bootstrap, "cluster_draws", counted)
    return found


def test_a_batch_is_its_own_seeds_draws_whoever_reads_it():
    shared = SharedDraws(11)
    batch = shared.source(3)(50, 20, 7)
    expected = cluster_draws(np.random.default_rng([11, 3, 50, 20, 7]), 50, 7)
    assert np.array_equal(batch, expected)
    assert not batch.flags.writeable
    # Each round resamples all 50 clusters.
    assert np.array_equal(batch.sum(axis=0), np.full(7, 50.0))
    other = SharedDraws(11).source(3)
    assert np.array_equal(other(50, 20, 7), batch)
    assert not np.array_equal(SharedDraws(11).source(4)(50, 20, 7), batch)
    assert not np.array_equal(SharedDraws(12).source(3)(50, 20, 7), batch)


def test_a_batch_is_kept_for_the_second_reader_then_let_go(monkeypatch):
    calls = _calls(monkeypatch)
    shared = SharedDraws(5)
    first = shared.batch(0, 40, 0, 10)
    second = shared.batch(0, 40, 0, 10)
    assert second is first
    assert calls == [40]
    # Read twice, it is no longer held: a third read draws it again, the same numbers.
    third = shared.batch(0, 40, 0, 10)
    assert third is not first
    assert np.array_equal(third, first)
    assert calls == [40, 40]


def test_beyond_its_budget_a_batch_is_drawn_again_alike(monkeypatch):
    calls = _calls(monkeypatch)
    shared = SharedDraws(5, budget=8 * 40 * 10)
    kept = shared.batch(0, 40, 0, 10)
    over = shared.batch(0, 40, 10, 10)  # the budget is spent on the first
    assert shared.batch(0, 40, 0, 10) is kept
    again = shared.batch(0, 40, 10, 10)
    assert again is not over
    assert np.array_equal(again, over)
    assert calls == [40, 40, 40]


def test_two_threads_reading_at_once_draw_each_batch_once(monkeypatch):
    calls = _calls(monkeypatch)
    shared = SharedDraws(9)
    read: dict[str, list[np.ndarray]] = {"a": [], "b": []}
    start = threading.Barrier(2)

    def reader(name: str) -> None:
        start.wait()
        source = shared.source(0)
        read[name] = [source(300, first, 25) for first in range(0, 1000, 25)]

    threads = [threading.Thread(target=reader, args=(name,)) for name in read]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 40
    for a, b in zip(read["a"], read["b"], strict=True):
        assert a is b
    alone = SharedDraws(9).source(0)
    assert all(
        np.array_equal(batch, alone(300, first, 25))
        for batch, first in zip(read["a"], range(0, 1000, 25), strict=True)
    )


class _NotShared(SharedDraws):
    """The same resamples, each drawn anew for every reader."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed, readers=1)


def test_the_study_icc_and_the_group_tables_draw_the_primary_questions_raters_once(
    monkeypatch,
):
    calls = _calls(monkeypatch)
    shared = {
        threads: report.compute_results(golden_inputs(), seed=7, rounds=40, threads=threads)
        for threads in (1, 2)
    }
    drawn = len(calls)
    calls.clear()
    monkeypatch.setattr(report, "SharedDraws", _NotShared)
    apart = report.compute_results(golden_inputs(), seed=7, rounds=40, threads=1)
    # 40 rounds of 40 raters are one batch, which the ICC and the group tables each drew; two
    # documents were computed with the batch shared.
    assert drawn == 2 * (len(calls) - 1)
    k_rater = apart["reliability"]["study"]["k_rater"]
    assert k_rater["icc_ci_low"] is not None
    for document in shared.values():
        # What they read does not depend on who drew it: the same document.
        assert document["reliability"]["study"]["k_rater"] == k_rater
        assert document["groups"] == apart["groups"]
