"""The web process entry point: what it does once, at start-up, for every request after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import gc, json, sys
import config.wsgi
print(json.dumps({
    "frozen": gc.get_freeze_count(),
    "tracked": len(gc.get_objects()),
    "views_loaded": "apps.assignments.views" in sys.modules,
}))
"""


def test_start_up_objects_are_frozen_so_full_collections_skip_them():
    # A fresh interpreter, as a gunicorn worker is: freezing is process-wide.
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    # The URL configuration (and so every view module) was loaded before the freeze...
    assert probe["views_loaded"] is True
    # ...and the tens of thousands of objects Django and the libraries left behind are out of
    # the collector's reach, so a full pass walks only what requests create.
    assert probe["frozen"] > 50_000
    assert probe["tracked"] < probe["frozen"] / 10
