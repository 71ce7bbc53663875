"""Whose CPU a load phase used, read from /proc before and after it (Linux only).

On a machine where the server, PostgreSQL and the client share the cores, a phase's throughput
is bound by their sum; this says how that sum divides: gunicorn's processes, PostgreSQL's, the
client's (a child process that has exited by the end: the children's times of this process),
the Celery worker's when there is one, and the cores busy overall (/proc/stat).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def _processes() -> dict[int, tuple[int, str, float, float]]:
    """pid -> (parent pid, command line, own CPU seconds, reaped children's CPU seconds)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        fields = stat.rsplit(")", 1)[1].split()
        own = (int(fields[11]) + int(fields[12])) / _TICK
        reaped = (int(fields[13]) + int(fields[14])) / _TICK
        found[int(entry.name)] = (int(fields[1]), command, own, reaped)
    return found


def _busy_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle and iowait
    return (sum(values) - idle) / _TICK, sum(values) / _TICK


def _tree(processes: dict[int, tuple[int, str, float, float]], root: int) -> set[int]:
    members = {root}
    grew = True
    while grew:
        grew = False
        for pid, (parent, *_rest) in processes.items():
            if parent in members and pid not in members:
                members.add(pid)
                grew = True
    return members & processes.keys()


@dataclass
class Snapshot:
    server: float
    postgres: float
    worker: float
    client: float
    busy: float
    total: float


@dataclass
class CpuSplit:
    """`start()` before the phase, `stop()` after it; `summary()` says how the CPU divided."""

    server_pid: int
    worker_pid: int | None = None
    taken: list[Snapshot] = field(default_factory=list)

    def _take(self) -> Snapshot:
        processes = _processes()

        def cpu(pids: set[int]) -> float:
            # A process's own time and that of its children it has reaped (a restarted
            # gunicorn worker, an exited PostgreSQL backend).
            return sum(processes[p][2] + processes[p][3] for p in pids)

        server = _tree(processes, self.server_pid) if self.server_pid in processes else set()
        worker = (
            _tree(processes, self.worker_pid)
            if self.worker_pid is not None and self.worker_pid in processes
            else set()
        )
        # The postmaster (its command is the server binary, whatever its path) and its
        # backends and helpers.
        postmasters = [
            pid
            for pid, (_parent, command, *_rest) in processes.items()
            if command.split(" ", 1)[0].endswith("/postgres") or command.startswith("postgres -D")
        ]
        postgres = set().union(*(_tree(processes, pid) for pid in postmasters))
        times = os.times()
        busy, total = _busy_seconds()
        return Snapshot(
            server=cpu(server),
            postgres=cpu(postgres),
            worker=cpu(worker),
            client=times.children_user + times.children_system,
            busy=busy,
            total=total,
        )

    def start(self) -> None:
        self.taken = [self._take()]

    def stop(self) -> None:
        self.taken.append(self._take())

    def summary(self, seconds: float) -> str:
        before, after = self.taken
        cores = (after.total - before.total) / max(seconds, 1e-9)
        parts = {
            "gunicorn": after.server - before.server,
            "PostgreSQL": after.postgres - before.postgres,
            "client": after.client - before.client,
        }
        if self.worker_pid is not None:
            parts["Celery worker"] = after.worker - before.worker
        named = ", ".join(f"{name} {used / seconds:.2f}" for name, used in parts.items())
        return (
            f"CPU over the load phase (cores): {(after.busy - before.busy) / seconds:.2f} busy of "
            f"{cores:.0f}; {named}"
        )
