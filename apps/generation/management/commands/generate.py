"""`manage.py generate ...`: prompt sets, models and runs from the command line."""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from apps.core.commands import command_errors, read_input_file
from apps.core.errors import NotFound
from apps.generation import selectors
from apps.generation.models import GenerationRun, ModelEndpoint, PromptSet
from apps.generation.services import (
    endpoint_save,
    generation_run_cancel,
    generation_run_resume,
    generation_run_start,
    prompt_set_examples_install,
    prompt_set_import,
)
from apps.studies.models import Study
from apps.studies.selectors import study_get_by_slug


def _names(value: str) -> list[str]:
    names = [name.strip() for name in value.split(",") if name.strip()]
    if not names:
        raise CommandError("give at least one name (comma-separated)")
    return names


def _run_id(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise CommandError(f"RUN must be a run number, not {value!r}") from None


class Command(BaseCommand):
    help = "Generate the jokes under test: prompt sets, models, runs (see the README)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)

        imp = sub.add_parser("import-prompts", help="Import a prompt set from JSONL or CSV")
        imp.add_argument("study")
        imp.add_argument("file")
        imp.add_argument("--set", required=True, dest="set_name", help="Prompt set name")
        imp.add_argument("--humor-type", default="", help="Humor type of the whole set")

        ex = sub.add_parser("examples", help="Add the built-in example sets (English, Chinese)")
        ex.add_argument("study")

        model = sub.add_parser("add-model", help="Add or change a model the study asks")
        model.add_argument("study")
        model.add_argument("name", help="The model's name in results (the items' source)")
        kind = model.add_mutually_exclusive_group(required=True)
        kind.add_argument("--url", help="OpenAI-compatible base URL, e.g. https://host/v1")
        kind.add_argument("--local", action="store_true", help="The worker's local model")
        model.add_argument("--model", default="", help="Model name sent to the endpoint")
        model.add_argument("--concurrency", type=int, default=None)
        model.add_argument("--timeout", type=float, default=None)
        model.add_argument("--retries", type=int, default=None)
        model.add_argument("--no-seed", action="store_true", help="Do not send the seed")

        run = sub.add_parser("run", help="Start a run (Celery work; --wait follows it)")
        run.add_argument("study")
        run.add_argument("--sets", required=True, help="Prompt set names, comma-separated")
        run.add_argument("--models", required=True, help="Model names, comma-separated")
        run.add_argument("--samples", type=int, default=1)
        run.add_argument("--temperature", type=float, default=1.1)
        run.add_argument("--top-p", type=float, default=0.9)
        run.add_argument("--max-tokens", type=int, default=256)
        run.add_argument("--seed", type=int, default=None)
        run.add_argument("--no-explain", action="store_true")
        run.add_argument("--explain-prompt-en", default="")
        run.add_argument("--explain-prompt-zh", default="")
        run.add_argument("--humor-type", default="")
        run.add_argument("--wait", action="store_true", help="Wait until the run is done")

        for name, text in (
            ("status", "Show a run's progress per model"),
            ("cancel", "Cancel a run"),
            ("resume", "Resume a run (waiting and failed outputs)"),
        ):
            action = sub.add_parser(name, help=text)
            action.add_argument("study")
            action.add_argument("run")
            if name in ("resume", "status"):
                action.add_argument("--wait", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        with command_errors():
            study = study_get_by_slug(slug=options["study"])
            getattr(self, "_" + options["action"].replace("-", "_"))(study, options)

    def _import_prompts(self, study: Study, options: dict[str, Any]) -> None:
        summary = prompt_set_import(
            study=study,
            name=options["set_name"],
            data=read_input_file(options["file"]),
            filename=options["file"],
            humor_type=options["humor_type"],
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"{summary.created} prompts imported into {summary.prompt_set.name!r}, "
                f"{summary.unchanged} already present"
            )
        )

    def _examples(self, study: Study, options: dict[str, Any]) -> None:
        sets = prompt_set_examples_install(study=study)
        self.stdout.write(self.style.SUCCESS("example sets: " + ", ".join(s.name for s in sets)))

    def _add_model(self, study: Study, options: dict[str, Any]) -> None:
        existing = ModelEndpoint.objects.filter(study=study, name=options["name"].strip()).first()
        values: dict[str, Any] = {
            "name": options["name"],
            "kind": ModelEndpoint.Kind.LOCAL if options["local"] else ModelEndpoint.Kind.CHAT,
            "url": options["url"] or "",
            "model": options["model"],
            "max_concurrency": options["concurrency"],
            "timeout_seconds": options["timeout"],
            "max_retries": options["retries"],
            "send_seed": not options["no_seed"],
        }
        endpoint = endpoint_save(study=study, values=values, endpoint=existing)
        verb = "changed" if existing else "added"
        self.stdout.write(self.style.SUCCESS(f"model {endpoint.name!r} {verb}"))

    def _lookup(self, study: Study, model: type[Any], names: list[str], what: str) -> list[int]:
        found = dict(model.objects.filter(study=study, name__in=names).values_list("name", "pk"))
        missing = [name for name in names if name not in found]
        if missing:
            raise NotFound(f"no {what} named {missing[0]!r} in study {study.slug!r}")
        return [found[name] for name in names]

    def _run(self, study: Study, options: dict[str, Any]) -> None:
        set_ids = self._lookup(study, PromptSet, _names(options["sets"]), "prompt set")
        model_ids = self._lookup(study, ModelEndpoint, _names(options["models"]), "model")
        with transaction.atomic():
            run = generation_run_start(
                study=study,
                prompt_set_ids=set_ids,
                endpoint_ids=model_ids,
                samples_per_prompt=options["samples"],
                temperature=options["temperature"],
                top_p=options["top_p"],
                max_tokens=options["max_tokens"],
                seed=options["seed"],
                explain=not options["no_explain"],
                explanation_prompts={
                    "en": options["explain_prompt_en"],
                    "zh": options["explain_prompt_zh"],
                },
                humor_type=options["humor_type"],
            )
        self.stdout.write(self.style.SUCCESS(f"run {run.pk} started"))
        if options["wait"]:
            self._follow(run)
        else:
            self._status_line(run)

    def _get_run(self, study: Study, options: dict[str, Any]) -> GenerationRun:
        return selectors.run_get(study=study, run_id=_run_id(options["run"]))

    def _status(self, study: Study, options: dict[str, Any]) -> None:
        run = self._get_run(study, options)
        if options.get("wait"):
            self._follow(run)
        else:
            self._status_line(run)

    def _cancel(self, study: Study, options: dict[str, Any]) -> None:
        run = generation_run_cancel(run=self._get_run(study, options))
        self.stdout.write(self.style.SUCCESS(f"run {run.pk} cancelled"))

    def _resume(self, study: Study, options: dict[str, Any]) -> None:
        with transaction.atomic():
            run = generation_run_resume(run=self._get_run(study, options))
        self.stdout.write(self.style.SUCCESS(f"run {run.pk} resumed"))
        if options.get("wait"):
            self._follow(run)

    def _follow(self, run: GenerationRun) -> None:
        while True:
            run.refresh_from_db()
            if run.status != GenerationRun.Status.RUNNING:
                break
            time.sleep(2)
        self._status_line(run)

    def _status_line(self, run: GenerationRun) -> None:
        run.refresh_from_db()
        progress = selectors.run_progress(run=run)
        summary = {
            "run": run.pk,
            "status": run.status,
            "models": {
                m.name: {
                    "generated": m.done,
                    "intercepted": m.intercepted,
                    "failed": m.failed,
                    "waiting": m.waiting + m.running,
                    "errors": [f"{e.prompt_id}#{e.sample}: {e.error}" for e in m.errors[:5]],
                }
                for m in progress.models
            },
        }
        self.stdout.write(json.dumps(summary, ensure_ascii=False, indent=2))
