"""A finished `manage.py` command has closed its database connections and leaves its objects out
of the interpreter's exit-time cycle collections (`manage._leave_without_collecting`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings as django_settings

# Registered by the command, so it runs after `main` has returned, as the interpreter exits.
AT_EXIT = """
import atexit, gc
from django.db import connections

connections["default"].ensure_connection()
assert connections["default"].connection is not None


def report():
    closed = all(connection.connection is None for connection in connections.all())
    print(f"frozen={gc.get_freeze_count() > 0} closed={closed}", flush=True)


atexit.register(report)
print("command done", flush=True)
"""


def _manage(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    env.update(DEBUG="1", LAUGHLAB_VAR_DIR=str(tmp_path))
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=django_settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_a_finished_command_exits_with_its_objects_frozen_and_connections_closed(
    tmp_path: Path,
) -> None:
    result = _manage(tmp_path, "shell", "--no-imports", "-c", AT_EXIT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == ["command done", "frozen=True closed=True"]


def test_a_failing_command_still_fails_with_its_message(tmp_path: Path) -> None:
    result = _manage(tmp_path, "aggregate", "some-study", "--rounds", "many")
    assert result.returncode == 2
    assert "--rounds" in result.stderr
    assert "many" in result.stderr
