"""The software a result was computed with: Python, the statistics libraries and LaughLab itself.

Stored with every result and printed in the report's reproducibility block, so a reader knows
which versions to install to get the same numbers from the same input, seed and rounds.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from django.conf import settings

# The packages whose versions can change a number (the statistics) or its layout (Django).
PACKAGES = ("django", "numpy", "scipy", "choix")
COMMIT = re.compile(r"^[0-9a-f]{7,40}$")


def _package(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def _laughlab() -> str:
    """The version in pyproject.toml (the checkout is not installed as a package)."""
    installed = _package("laughlab")
    if installed:
        return installed
    try:
        text = (Path(settings.BASE_DIR) / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return ""
    match = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
    return match.group(1) if match else ""


def _commit() -> str:
    """The deployment's commit: LAUGHLAB_COMMIT when the image sets it, else the checkout's HEAD,
    else "" (a copy without its history)."""
    given = os.environ.get("LAUGHLAB_COMMIT", "").strip().lower()
    if COMMIT.match(given):
        return given
    try:
        found = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    head = found.stdout.strip()
    return head if found.returncode == 0 and COMMIT.match(head) else ""


@lru_cache(maxsize=1)
def software_versions() -> dict[str, str]:
    """{"python": "3.12.3", "django": ..., "numpy": ..., "scipy": ..., "choix": ...,
    "laughlab": "0.1.0", "commit": "<sha or empty>"}; read once per process."""
    versions = {"python": platform.python_version()}
    versions.update({name: _package(name) for name in PACKAGES})
    versions["laughlab"] = _laughlab()
    versions["commit"] = _commit()
    return versions
