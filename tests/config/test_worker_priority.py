"""A `celery worker` runs below the web server's priority (WORKER_NICE, and Linux's idle
scheduling class with WORKER_IDLE_CLASS), so an aggregation on shared cores does not delay
raters' requests; a worker started inside another process (the tests' own) leaves that
process's priority alone."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from celery.contrib.testing.worker import start_worker

from config.celery import app

ROOT = Path(__file__).resolve().parents[2]


def _worker(tmp_path: Path, nice: str, idle_class: str = "0") -> subprocess.Popen[bytes]:
    env = {
        k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY"}
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="1",
        WORKER_NICE=nice,
        WORKER_IDLE_CLASS=idle_class,
        # The embedded broker in a folder of this test's own: no service needed.
        CELERY_BROKER_DIR=str(tmp_path / "broker"),
        LAUGHLAB_VAR_DIR=str(tmp_path),
    )
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo"]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "INFO"]
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=(tmp_path / "worker.log").open("ab"),
        stderr=subprocess.STDOUT,
    )


def _priority_once_ready(worker: subprocess.Popen[bytes], log: Path) -> int:
    """The worker's nice value once it says it is ready (it is set before that)."""
    deadline = time.monotonic() + 90
    while "ready." not in log.read_text(errors="replace"):
        assert worker.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.1)
    return os.getpriority(os.PRIO_PROCESS, worker.pid)


def _stop(worker: subprocess.Popen[bytes]) -> None:
    worker.terminate()
    try:
        worker.wait(timeout=20)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()


def test_a_celery_worker_runs_below_the_web_servers_priority(tmp_path: Path) -> None:
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    lowered = _worker(tmp_path, "7")
    try:
        assert _priority_once_ready(lowered, tmp_path / "worker.log") == min(ours + 7, 19)
    finally:
        _stop(lowered)
    (tmp_path / "worker.log").unlink()
    same = _worker(tmp_path, "0")
    try:
        assert _priority_once_ready(same, tmp_path / "worker.log") == ours
    finally:
        _stop(same)


def _policies(pid: int) -> set[int]:
    """The scheduling policy of every thread of a process."""
    return {os.sched_getscheduler(int(tid)) for tid in os.listdir(f"/proc/{pid}/task")}


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux's idle scheduling class")
def test_a_celery_worker_computes_in_the_idle_class_unless_told_not_to(tmp_path: Path) -> None:
    ours = os.sched_getscheduler(0)
    assert ours != os.SCHED_IDLE
    idle = _worker(tmp_path, "10", idle_class="1")
    try:
        _priority_once_ready(idle, tmp_path / "worker.log")
        # Every thread of the ready worker, those started after the switch included.
        assert _policies(idle.pid) == {os.SCHED_IDLE}
    finally:
        _stop(idle)
    (tmp_path / "worker.log").unlink()
    plain = _worker(tmp_path, "10", idle_class="0")
    try:
        _priority_once_ready(plain, tmp_path / "worker.log")
        assert _policies(plain.pid) == {ours}
    finally:
        _stop(plain)


def test_a_worker_started_inside_another_process_leaves_its_priority_alone() -> None:
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    policy = os.sched_getscheduler(0) if hasattr(os, "sched_getscheduler") else None
    with start_worker(app, pool="solo", perform_ping_check=False):
        assert os.getpriority(os.PRIO_PROCESS, 0) == ours
    assert os.getpriority(os.PRIO_PROCESS, 0) == ours
    if policy is not None:
        assert os.sched_getscheduler(0) == policy
