"""Run in its own process by test_sqlite_export_under_load.py, on a SQLite file as the demo
uses it: a raw export streams while another connection commits writes the whole time (raters
answering). Prints the job's final status and error as JSON."""

from __future__ import annotations

import json
import threading
import time

from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from apps.judgments.services import study_judgments_import
from apps.raters.models import Rater
from apps.reports import services
from apps.reports.models import ExportJob
from apps.studies.models import Item
from apps.studies.services import study_create


def main() -> None:
    call_command("migrate", verbosity=0)
    study = study_create(slug="load", rubric_slug="humor", name="Load", backgrounds=[])
    Item.objects.bulk_create(
        Item(study=study, external_id=f"j{i:03d}", text=f"joke {i}", source="gpt-x")
        for i in range(200)
    )
    lines = [
        json.dumps(
            {
                "kind": "score",
                "rater": f"r{r:03d}",
                "background": "unknown",
                "item": f"j{i:03d}",
                "surprise": 1 + (r + i) % 5,
                "coherence": 1 + (r * i) % 5,
                "funniness": 1 + (r + 2 * i) % 7,
                "offensive": 0,
            }
        )
        for r in range(60)
        for i in range(200)
    ]
    study_judgments_import(study=study, data="\n".join(lines).encode(), filename="j.jsonl")
    rater = Rater.objects.filter(study=study).first()
    assert rater is not None
    stop = threading.Event()
    writes = [0]

    def raters_answering() -> None:
        # Another connection committing small writes all the time, as rater requests do.
        try:
            while not stop.is_set():
                Rater.objects.filter(pk=rater.pk).update(updated_at=timezone.now())
                writes[0] += 1
                time.sleep(0.002)
        finally:
            connection.close()

    writer = threading.Thread(target=raters_answering, daemon=True)
    writer.start()
    job = services.export_job_create(study=study, user=None, fmt="raw")
    started = time.monotonic()
    services.export_job_run(job_id=job.pk)
    seconds = time.monotonic() - started
    stop.set()
    writer.join(timeout=10)
    job = ExportJob.objects.get(pk=job.pk)
    print(
        json.dumps(
            {
                "status": job.status,
                "error": job.error,
                "progress": job.progress,
                "writes": writes[0],
                "seconds": round(seconds, 2),
            }
        )
    )


main()
