"""A `manage.py` command's exit, with its objects frozen and as before, alternating.

    .venv/bin/python benchmarks/bench_command_exit.py                  # `manage.py check`, 8 pairs
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/laughlab_bench_import \\
        .venv/bin/python benchmarks/bench_command_exit.py --pairs 6 -- aggregate bench-crowd

Each run is a fresh interpreter that runs one command either as `manage.py` does now
(`manage.main`: the command, then `gc.freeze()`, so that the interpreter's exit skips its cycle
collections) or as it did before (the command alone). The runs alternate, so both see the
machine alike. Each reports when its command returned (a line on stderr); the exit is the
time from there to the end of the process, as its parent sees it. CPU time (user + system) is
the whole process's.

The command runs in this process's environment, with `DEBUG=1` and `LOG_LEVEL=WARNING` unless
set. For the crowd set's aggregation, run `bench_import.py --postgres --only crowd` first: it
leaves its database (`laughlab_bench_import`, study `bench-crowd`) behind.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import os, sys, time
sys.path.insert(0, {root!r})
sys.argv = ["manage.py", *{args!r}]
import manage
if {frozen!r}:
    manage.main()
else:
    from django.core.management import execute_from_command_line
    execute_from_command_line(sys.argv)
sys.stderr.write(f"returned {{time.time():.6f}}\\n")
"""


def run_once(args: list[str], *, frozen: bool, env: dict[str, str]) -> tuple[float, float, float]:
    """(wall seconds, seconds from the command's return to the process's end, CPU seconds)."""
    start = time.time()
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(root=str(ROOT), args=args, frozen=frozen)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    end = time.time()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{errors[-2000:]}")
    returned = [line for line in errors.splitlines() if line.startswith("returned ")]
    return end - start, end - float(returned[-1].split()[1]), usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("command", nargs="*", default=["check"], help="after --")
    options = parser.parse_args()
    if options.pairs < 1:
        parser.error("--pairs must be at least 1")
    env = {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "1",
        "LOG_LEVEL": "WARNING",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        **os.environ,
    }
    found: dict[bool, list[tuple[float, float, float]]] = {True: [], False: []}
    for _ in range(options.pairs):
        for frozen in (False, True):
            found[frozen].append(run_once(options.command, frozen=frozen, env=env))
    print(f"manage.py {' '.join(options.command)}: {options.pairs} alternating pairs, medians")
    print(f"{'':24}{'wall s':>8}{'exit s':>8}{'CPU s':>8}")
    for frozen, label in ((False, "as before"), (True, "objects frozen at the end")):
        wall, exit_, cpu = (statistics.median(run[k] for run in found[frozen]) for k in range(3))
        print(f"{label:24}{wall:8.3f}{exit_:8.3f}{cpu:8.3f}")
    ratios = [new[0] / old[0] for old, new in zip(found[False], found[True], strict=True)]
    print(
        f"wall time, frozen / before, pair by pair: median {statistics.median(ratios):.3f} "
        f"(range {min(ratios):.3f}-{max(ratios):.3f})"
    )


if __name__ == "__main__":
    main()
