"""The demo's processes under a short stress run (benchmarks/stress_demo.py; its 10-minute
version is the benchmark): raters answering over HTTP, a researcher crawling the pages, an
export and a screening rerun, on SQLite and the embedded broker. No worker dies, nothing is
logged as CRITICAL, no request fails with a 5xx, and every export asked for finishes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from django.conf import settings


def test_a_short_stress_run_of_the_demo_keeps_every_process_and_job_alive(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "benchmarks/stress_demo.py",
            "--minutes",
            "0.75",
            "--raters",
            "3",
            "--folder",
            str(tmp_path),
        ],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(result.stdout[result.stdout.index("{") :])
    assert report["answers"] > 0, report
    assert report["pages"] > 0, report
    assert report["worker_deaths"] == [], report
    assert report["critical_lines"] == [], report
    assert report["server_errors"] == [], report
    assert report["exports"] >= 1, report
    assert report["exports_unfinished"] == {}, report
    assert result.returncode == 0, report
