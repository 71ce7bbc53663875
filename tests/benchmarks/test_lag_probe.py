"""The load benchmark's results-lag probe: each judgment's wait, and its bounds, from the runs'
claims, starts and ends (benchmarks/load/run_load.py, `LagProbe.waits`). The lag figures the
benchmark's README reports are computed here, so the arithmetic is tested, not trusted."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from tests.benchmark_modules import benchmark_module


@pytest.fixture(scope="module")
def run_load() -> ModuleType:
    return benchmark_module("load/run_load.py")


def _probe(
    run_load: ModuleType, runs: dict[float, float], stored: list[float], claims: set[float]
) -> Any:
    """A probe that saw these runs, judgments and claims (each claim seen when it was made)."""
    probe = run_load.LagProbe("postgres://unused", 1)
    probe.runs = runs
    probe.durations = [end - start - 0.5 for start, end in runs.items()]
    probe.stored = sorted(stored)
    probe.claims = {claim: claim for claim in claims}
    probe.samples = [0.0]
    probe.since = 0.0
    return probe


def test_a_judgment_waits_for_the_first_run_that_started_after_it(run_load: ModuleType) -> None:
    # Runs 100-104 and 112-115 (start -> results stored), claimed 10 s before they started;
    # judgments stored at 95, 100.5 and 113.
    probe = _probe(run_load, {100.0: 104.0, 112.0: 115.0}, [95.0, 100.5, 113.0], {90.0, 102.0})
    found = probe.waits(debounce=10.0)
    # 95 is read by the run of 100 (done at 104); 100.5 came after that run started, so the
    # run of 112 includes it; 113 is after the last run's start: no finished run has it yet.
    assert found.waits == pytest.approx([9.0, 14.5])
    assert found.from_start == pytest.approx([9.0 - (10.0 + 4.0), 14.5 - (10.0 + 3.0)])
    # Due at claim + 10: the bound is the run's end minus its claim, so the excess is the
    # claim's time after the judgment's (1.5 s: the run of 112 was claimed 1.5 s late).
    assert found.from_due == pytest.approx([90.0 - 95.0, 102.0 - 100.5])
    assert found.pending == 1
    summary = probe.summary(10.0)
    assert "its run from its start to its results stored: 1 -> BEYOND, the worst by 1.500 s" in (
        summary
    )
    assert "(the judgment stored at second 100.5; its run claimed 102.0, started 112.0" in summary


def test_waits_within_one_debounce_and_their_runs_whole_time_are_within(
    run_load: ModuleType,
) -> None:
    # The judgment of 100.5 claims a run due at 110.5, which takes 3 s: 13 s waited, within
    # 10 s + 3 s by nothing to spare; a run's start exactly at a judgment's time reads it.
    probe = _probe(run_load, {100.0: 104.0, 110.5: 113.5}, [100.0, 100.5], {90.0, 100.5})
    found = probe.waits(debounce=10.0)
    assert found.waits == pytest.approx([4.0, 13.0])
    assert max(found.from_start) == pytest.approx(0.0)
    assert found.pending == 0
    summary = probe.summary(10.0)
    assert "from its start to its results stored: 0 -> WITHIN, the closest 0.000 s within" in (
        summary
    )
    assert "4.0 s the longest from start to results stored" in summary
    # Each run was claimed exactly a debounce before it started.
    assert "started after their claim + the debounce: p50 0.000 s, max 0.000 s" in summary


def test_a_run_the_worker_started_late_counts_against_its_start_not_its_due_time(
    run_load: ModuleType,
) -> None:
    # Claimed at 101.5 by the judgment stored then, due at 111.5, started 0.5 s late at 112.
    probe = _probe(run_load, {100.0: 104.0, 112.0: 115.0}, [101.5], {89.9, 101.5})
    found = probe.waits(debounce=10.0)
    assert found.from_start == pytest.approx([0.5])
    assert found.from_due == pytest.approx([0.0])
    summary = probe.summary(10.0)
    assert "claim + the debounce: p50 0.300 s, max 0.500 s" in summary
    assert "from when it was due to its results stored: 0 -> WITHIN" in summary


def test_a_claim_dated_before_the_last_runs_start_belongs_to_the_next_run(
    run_load: ModuleType,
) -> None:
    # The run of 110 was claimed at 100; a judgment submitted at 109.9 and stored at 110.2,
    # after that run started, claimed the next, dated by its submission, seen at 110.5.
    probe = _probe(run_load, {110.0: 113.0, 119.9: 123.0}, [110.2], set())
    probe.claims = {100.0: 100.2, 109.9: 110.5}
    found = probe.waits(debounce=10.0)
    assert found.from_due == pytest.approx([109.9 - 110.2])
    assert "claim + the debounce: p50 0.000 s, max 0.000 s" in probe.summary(10.0)


def test_no_run_after_any_judgment_is_said_so(run_load: ModuleType) -> None:
    probe = _probe(run_load, {100.0: 104.0}, [101.0, 102.0], {90.0})
    assert probe.summary(10.0) == "no run finished after a judgment of the phase (2 judgments)"


@pytest.mark.django_db
def test_the_worker_log_count_reads_the_line_a_served_claim_logs(
    run_load: ModuleType, demo_study: Any, settings: Any, caplog: Any, tmp_path: Any
) -> None:
    # The count of messages whose moved claim was served is read off the worker's log: the
    # line the service writes is the one the benchmark looks for.
    import logging
    from datetime import timedelta

    from apps.analysis.models import AggregationState
    from apps.analysis.services import study_aggregate, study_aggregate_queued

    settings.AGGREGATE_DEBOUNCE_SECONDS = 10
    study_aggregate(study=demo_study, rounds=20)
    started = AggregationState.objects.get(study=demo_study).last_started_at
    claimed = started - timedelta(seconds=9.9)
    with caplog.at_level(logging.INFO, logger="apps.analysis.services"):
        assert (
            study_aggregate_queued(
                study=demo_study, claim=(claimed, claimed + timedelta(milliseconds=3))
            )
            is None
        )
    [line] = [r.getMessage() for r in caplog.records if r.name == "apps.analysis.services"]
    assert run_load.served_messages(tmp_path) == 0  # no log yet
    (tmp_path / run_load.WORKER_LOG).write_text(
        f"[2026-12-07 16:00:00,000: INFO/ForkPoolWorker-1] {line}\nanother line\n"
    )
    assert run_load.served_messages(tmp_path) == 1
