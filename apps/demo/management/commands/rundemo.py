from __future__ import annotations

import os
import signal
import sys
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.core.links import public_base, rater_links
from apps.demo.server import PooledRunserver
from apps.demo.supervisor import Supervised


def banner(*, host: str, port: int, worker_pid: int) -> str:
    """What the demo prints at start: the same links its pages show (apps.core.links)."""
    base = public_base(host=host, port=port)
    jokes = rater_links(base=base, slug="demo")["rater"]
    articles = rater_links(base=base, slug="demo-content")["rater"]
    pictures = rater_links(base=base, slug="demo-pictures")["rater"]
    return "\n".join(
        [
            "",
            "LaughLab is running.",
            f"  Researcher login: {base}/studies/  "
            f"(user {settings.DEMO_RESEARCHER_USERNAME!r}, password {settings.DEMO_RESEARCHER_PASSWORD!r})",
            f"  Admin:            {base}/admin/  (user 'admin', same password)",
            f"  Rater link:       {jokes}  (jokes)",
            f"                    {articles}  (articles)",
            f"                    {pictures}  (captions for pictures)",
            f"  Task worker:      pid {worker_pid} ({settings.CELERY_BROKER_URL.split(':')[0]} broker)",
            "Press Ctrl-C to stop.",
            "",
        ]
    )


class Command(BaseCommand):
    help = "Run the web server with a Celery worker (and its beat) beside it; stop both together."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--host", default="127.0.0.1")

    def handle(self, *args: Any, **options: Any) -> None:
        port, host = options["port"], options["host"]
        if not 1 <= port <= 65535:
            raise CommandError(f"--port must be from 1 to 65535, got {port}")
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        # Two workers: one for raters' and researchers' work (with the beat), one for calls to
        # outside models and heavy compute, so a slow model endpoint never holds up results
        # or exports (config/settings.py, CELERY_TASK_ROUTES).
        common = [
            "--pool=solo",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel=WARNING",
        ]
        celery = [sys.executable, "-m", "celery", "-A", "config", "worker"]
        worker = Supervised(
            [
                *celery,
                "-Q",
                "rater,research",
                "-n",
                "demo-main@%h",
                "--beat",
                "--schedule",
                str(settings.VAR_DIR / "celerybeat-schedule"),
                *common,
            ],
            name="task worker",
            env={**os.environ},
        )
        external = Supervised(
            [*celery, "-Q", "external", "-n", "demo-external@%h", *common],
            name="external-call worker",
            env={**os.environ},
        )
        worker.start()
        external.start()
        assert worker.pid is not None
        self.stdout.write(banner(host=host, port=port, worker_pid=worker.pid))
        # A SIGTERM (not only Ctrl-C) must reach the `finally` below, or the worker outlives us.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            # Django's server, with a fixed pool of request threads (apps/demo/server.py).
            call_command(
                PooledRunserver(), f"{host}:{port}", use_reloader=False, use_threading=False
            )
        finally:
            worker.stop(timeout=10)
            external.stop(timeout=10)
