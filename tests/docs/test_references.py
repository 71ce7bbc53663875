"""The project's Markdown files point only to files that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A backticked name that looks like a file: letters, digits, dots, slashes, dashes; an extension.
REFERENCE = re.compile(r"`([A-Za-z0-9_./-]+\.(?:md|py|json|jsonl|csv|html|toml|txt|yml|cfg))`")
# Names that stand for a file the reader supplies or a command writes, not one in the checkout
# (GEMMA_TERMS.html is copied into the prepared model folder).
NOT_FILES = {"FILE.jsonl", "FILE.csv", "FILE.json", "results.json", "GEMMA_TERMS.html"}


def _markdown_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / name for name in listed]


def _exists(reference: str, markdown: Path) -> bool:
    if any(ch in reference for ch in "*<>") or reference in NOT_FILES:
        return True
    # A path in an installed package (the published test a reference number comes from).
    site = [Path(p) for p in sys.path if p.endswith("site-packages")]
    candidates = [markdown.parent / reference, ROOT / reference, *(s / reference for s in site)]
    if "/" not in reference:
        # A bare file name: somewhere in the checkout (e.g. "test_agreement.py" beside its test).
        return any(
            path.name == reference for path in ROOT.rglob(reference) if ".venv" not in path.parts
        )
    return any(path.exists() for path in candidates)


@pytest.mark.parametrize(
    "markdown", _markdown_files(), ids=lambda path: str(path.relative_to(ROOT))
)
def test_every_file_a_document_names_exists(markdown: Path):
    text = markdown.read_text(encoding="utf-8")
    missing = sorted({ref for ref in REFERENCE.findall(text) if not _exists(ref, markdown)})
    assert missing == [], f"{markdown.relative_to(ROOT)} names files that do not exist: {missing}"
