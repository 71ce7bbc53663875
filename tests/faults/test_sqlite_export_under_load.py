"""On the demo's SQLite, an export finishes while raters answer: its progress is never written
on the connection that streams the rows (whose read snapshot goes stale as others commit, so
SQLite refuses it a write at once, "database is locked", whatever the busy timeout).

The export runs in its own process on a SQLite file, with the lease thread a worker has, while
a second connection commits a write every few milliseconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

SCRIPT = Path(__file__).with_name("sqlite_export_load.py")


def test_a_raw_export_on_sqlite_finishes_while_others_write(tmp_path: Path) -> None:
    env = dict(os.environ)
    # The demo's setting: SQLite and the embedded broker (a folder), no Redis.
    env.pop("REDIS_URL", None)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="1",
        DATABASE_URL=f"sqlite:///{tmp_path / 'load.sqlite3'}",
        LAUGHLAB_VAR_DIR=str(tmp_path),
        MEDIA_ROOT=str(tmp_path / "media"),
        CELERY_TASK_ALWAYS_EAGER="0",
        EXPORT_LEASE_SECONDS="2",
        LOG_LEVEL="ERROR",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SCRIPT.read_text(encoding="utf-8")],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["writes"] >= 10, outcome  # the writes really overlapped the export
    assert (outcome["status"], outcome["error"]) == ("done", ""), outcome
