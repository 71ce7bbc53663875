"""The demo's task worker is supervised: a worker that dies is started again, with the reason
logged, and stopping the demo stops it."""

from __future__ import annotations

import logging
import sys
import time

from apps.demo.supervisor import Supervised


def test_a_child_that_dies_is_started_again_with_its_exit_code_logged(caplog):
    child = Supervised(
        [sys.executable, "-c", "import sys; sys.exit(3)"],
        name="task worker",
        base_delay=0.05,
        max_delay=0.2,
    )
    with caplog.at_level(logging.WARNING, logger="apps.demo.supervisor"):
        child.start()
        deadline = time.monotonic() + 20
        while child.restarts < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        child.stop(timeout=5)
    assert child.restarts >= 3
    assert "the task worker (pid" in caplog.text
    assert "exited with code 3" in caplog.text
    assert "runs again" in caplog.text


def test_stopping_ends_a_running_child_and_does_not_restart_it():
    child = Supervised(
        [sys.executable, "-c", "import time; time.sleep(60)"], name="task worker", base_delay=0.05
    )
    child.start()
    first = child.process
    assert first is not None
    assert first.poll() is None
    child.stop(timeout=5)
    assert first.poll() is not None
    time.sleep(0.3)
    assert child.process is first
    assert child.restarts == 0
