"""`manage.py prepare_models`: convert the packaged causal language model once (idempotent)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from apps.textmodels.prepare import causal_lm_prepare
from apps.textmodels.registry import embedder


class Command(BaseCommand):
    help = (
        "Convert the packaged Gemma 3 270M GGUF into a transformers folder under TEXT_MODEL_DIR "
        "(once: a folder prepared from the same versions is kept) and check that the embedding "
        "model loads."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="convert again even if prepared")

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        prepared = causal_lm_prepare(force=bool(options["force"]))
        what = "converted into" if prepared.converted else "already prepared in"
        self.stdout.write(
            f"causal language model {what} {prepared.path} ({time.monotonic() - started:.0f} s)"
        )
        info = embedder().info
        self.stdout.write(f"embedding model {info.label} loads")
