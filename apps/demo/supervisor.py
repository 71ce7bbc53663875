"""Keeping the demo's task worker alive: `rundemo` runs it as a supervised child process.

A worker that dies (an unrecoverable error in its consumer loop, an out-of-memory kill) is
started again after a pause that doubles with each quick death (1 s, 2 s, 4 s … at most 60 s)
and falls back to the first once it has run for a minute; every death is logged with its exit
code, so a dead worker is never silent.
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from collections.abc import Sequence

logger = logging.getLogger(__name__)


class Supervised:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        name: str,
        env: dict[str, str] | None = None,
        base_delay: float = 1.0,
        max_delay: float = 60.0,
        healthy_after: float = 60.0,
    ) -> None:
        self.argv = list(argv)
        self.name = name
        self.env = env
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.healthy_after = healthy_after
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def start(self) -> None:
        self.process = subprocess.Popen(self.argv, env=self.env)
        self._thread = threading.Thread(
            target=self._watch, name=f"supervise {self.name}", daemon=True
        )
        self._thread.start()

    def _watch(self) -> None:
        delay = self.base_delay
        started = _now()
        while not self._stopping.is_set():
            process = self.process
            assert process is not None
            code = process.poll()
            if code is None:
                if self._stopping.wait(0.5):
                    return
                continue
            if self._stopping.is_set():
                return
            ran = _now() - started
            if ran >= self.healthy_after:
                delay = self.base_delay
            logger.warning(
                "the %s (pid %s) exited with code %s after %.0f s; starting it again in %.0f s",
                self.name,
                process.pid,
                code,
                ran,
                delay,
            )
            if self._stopping.wait(delay):
                return
            self.process = subprocess.Popen(self.argv, env=self.env)
            self.restarts += 1
            started = _now()
            logger.warning("the %s runs again (pid %s)", self.name, self.process.pid)
            delay = min(self.max_delay, delay * 2)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop watching, then stop the child (SIGTERM, then SIGKILL after `timeout`)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _now() -> float:
    return time.monotonic()
