from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.analysis.services import study_aggregate
from apps.content.services.evaluation import content_evaluation_request
from apps.core.commands import command_errors
from apps.generation.services import prompt_set_examples_install
from apps.judgments.services import study_judgments_import
from apps.screening.selectors import screening_run_latest
from apps.screening.services.calibration import funnyscore_calibrate_request
from apps.screening.services.judge import judge_verdicts_load
from apps.screening.services.runs import screening_run_start
from apps.studies.models import Study, StudyMembership
from apps.studies.services import (
    study_create,
    study_items_import,
    study_member_add,
    study_quotas_set,
)

DEMO_DIR = Path(settings.BASE_DIR) / "fixtures" / "demo"
CONTENT_DEMO_DIR = Path(settings.BASE_DIR) / "fixtures" / "demo_content"
CONTENT_SLUG = "demo-content"
# Captions for pictures drawn by the project (fixtures/demo_pictures, CC0): no judgments.
PICTURES_DIR = Path(settings.BASE_DIR) / "fixtures" / "demo_pictures"
PICTURES_SLUG = "demo-pictures"
PICTURES_DEMO_SEED = 20261203
# Fixed seeds: every install of the demo draws the same bootstrap rounds and gives a rater link
# with the same participant id the same sequence of tasks (the kind and the items are drawn
# from the study's seed, the rater's id and the position).
DEMO_SEED = 20261129
CONTENT_DEMO_SEED = 20261130
# Places per background group for raters who enrol through the rater link; in these two-language
# studies they count per language (up to this many readers of each language per group).
DEMO_QUOTAS: dict[str, int | None] = {
    "technical": 10,
    "content_operations": 10,
    "administrative_support": 10,
    "traditional_industries": 10,
}


class Command(BaseCommand):
    help = (
        "Load the demo studies (jokes from fixtures/demo, articles from fixtures/demo_content, "
        "with their judgments; captions for pictures from fixtures/demo_pictures) and a "
        "researcher login. Idempotent."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--slug", default="demo")
        parser.add_argument(
            "--skip-aggregate", action="store_true", help="Do not compute results now"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["slug"]
        if slug in (CONTENT_SLUG, PICTURES_SLUG):
            raise CommandError(f"{slug!r} is another demo study's slug; choose another --slug")
        aggregate = not options["skip_aggregate"]
        with command_errors():
            study = Study.objects.filter(slug=slug).first()
            if study is None:
                study = study_create(
                    slug=slug,
                    rubric_slug="humor",
                    name="Demo: jokes by laughter-7b, quipster-v2 and people",
                    status=Study.Status.OPEN,
                    prolific_completion_code="LAUGHDEMO",
                    random_seed=DEMO_SEED,
                    # Above what the imported judgments already reach, so the rater link
                    # still has scorecards, Turing judgments and (adaptive) pairs to give.
                    target_scorecards_per_item=30,
                    turing_judgments_per_item=10,
                    adaptive_pairing=True,
                    # Three-way pairs: raters may answer "about the same" or "neither".
                    pair_offers_tie=True,
                    pair_offers_neither=True,
                    tasks_per_session=30,
                    # A session of 30 tasks meets an attention check about every seventh task.
                    attention_check_rate=0.15,
                )
                study_quotas_set(study=study, quotas=DEMO_QUOTAS)
            self._load(study, DEMO_DIR, "Demo study", aggregate=aggregate)
            # The generation page starts from the example prompt sets (English and Chinese).
            prompt_set_examples_install(study=study)
            self._screening(study, aggregate=aggregate)
            content = Study.objects.filter(slug=CONTENT_SLUG).first()
            if content is None:
                content = study_create(
                    slug=CONTENT_SLUG,
                    rubric_slug="content",
                    name="Demo: generated articles in three genres",
                    status=Study.Status.OPEN,
                    prolific_completion_code="CONTENTDEMO",
                    random_seed=CONTENT_DEMO_SEED,
                    # The imported judgments give 15-17 scorecards per article and 2-3 Turing
                    # guesses; these targets leave the rater link tasks of every kind. An
                    # article takes about 45 s to read and score, so a session plans fewer.
                    target_scorecards_per_item=20,
                    turing_judgments_per_item=5,
                    adaptive_pairing=True,
                    tasks_per_session=20,
                    attention_check_rate=0.15,
                )
                study_quotas_set(study=content, quotas=DEMO_QUOTAS)
            self._load(content, CONTENT_DEMO_DIR, "Content demo study", aggregate=aggregate)
            if aggregate:
                # Its metrics need the embedding model: the task worker computes them (a
                # minute or so after start) rather than holding up the demo's start.
                content_evaluation_request(study=content)
                self.stdout.write(
                    f"Content evaluation of {CONTENT_SLUG!r} queued for the task worker"
                )
            pictures = self._pictures()
        self._ensure_accounts([study, content, pictures])

    def _load(self, study: Study, folder: Path, label: str, *, aggregate: bool) -> None:
        items = study_items_import(
            study=study, data=(folder / "items.jsonl").read_bytes(), filename="items.jsonl"
        )
        # Gold items a rater meets at the study's attention-check rate, one per language at
        # least; they test raters and are never part of the results.
        checks = study_items_import(
            study=study,
            data=(folder / "attention_checks.jsonl").read_bytes(),
            filename="attention_checks.jsonl",
        )
        judgments = study_judgments_import(
            study=study,
            data=(folder / "judgments.jsonl").read_bytes(),
            filename="judgments.jsonl",
        )
        if aggregate:
            study_aggregate(study=study)
        self.stdout.write(
            f"{label} {study.slug!r}: {items.created} items added ({items.unchanged} present), "
            f"{judgments.total_created} judgments added ({judgments.unchanged} present), "
            f"{checks.created} attention checks added ({checks.unchanged} present)"
        )

    def _pictures(self) -> Study:
        """The picture demo: its folder zipped as a researcher would upload it, imported into
        an open study whose pairs compare captions of the same picture."""
        study = Study.objects.filter(slug=PICTURES_SLUG).first()
        if study is None:
            study = study_create(
                slug=PICTURES_SLUG,
                rubric_slug="humor",
                name="Demo: captions for pictures",
                status=Study.Status.OPEN,
                random_seed=PICTURES_DEMO_SEED,
                tasks_per_session=12,
                attention_check_rate=0,
            )
            study_quotas_set(study=study, quotas=DEMO_QUOTAS)
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as out:
            out.write(PICTURES_DIR / "items.jsonl", "items.jsonl")
            for picture in sorted((PICTURES_DIR / "pictures").glob("*.png")):
                out.write(picture, f"pictures/{picture.name}")
        items = study_items_import(
            study=study, data=archive.getvalue(), filename="demo_pictures.zip"
        )
        self.stdout.write(
            f"Picture demo study {study.slug!r}: {items.created} captions added "
            f"({items.unchanged} present)"
        )
        return study

    def _screening(self, study: Study, *, aggregate: bool) -> None:
        """Candidates in Chinese and English for the screening pages (two of them hit the offense
        lists and are held), a simulated judge's verdicts for the LLM judge page, and, for the
        task worker, a first screening run over the candidates."""
        candidates = study_items_import(
            study=study,
            data=(DEMO_DIR / "candidates.jsonl").read_bytes(),
            filename="candidates.jsonl",
            as_candidates=True,
        )
        verdicts = judge_verdicts_load(
            study=study,
            data=(DEMO_DIR / "judge_verdicts.jsonl").read_bytes(),
            seed=study.random_seed,
            rounds=settings.BOOTSTRAP_ROUNDS,
        )
        self.stdout.write(
            f"Screening candidates of {study.slug!r}: {candidates.created} added "
            f"({candidates.unchanged} present); {verdicts} simulated judge verdicts"
        )
        if aggregate and screening_run_latest(study=study) is None:
            # The features need the text models: the task worker computes them.
            run = screening_run_start(study=study, user=None, top_k=3)
            self.stdout.write(
                f"Screening run {run.pk} of {study.slug!r} queued for the task worker"
            )
            # So the screening page opens with the sieve audit and both kinds of calibration:
            # the worker computes the rated items' features, then fits and validates.
            rated = funnyscore_calibrate_request(study=study)
            self.stdout.write(
                f"Calibration of {study.slug!r} on its {rated} rated items queued for the task "
                "worker"
            )

    def _ensure_accounts(self, studies: list[Study]) -> None:
        """A researcher who owns the demo studies, and an admin who sees everything."""
        User = get_user_model()
        password = settings.DEMO_RESEARCHER_PASSWORD
        researcher, created = User.objects.get_or_create(username=settings.DEMO_RESEARCHER_USERNAME)
        if created:
            researcher.set_password(password)
            researcher.save(update_fields=["password"])
            self.stdout.write(f"Created researcher login {researcher.get_username()!r}")
        for study in studies:
            study_member_add(study=study, user=researcher, role=StudyMembership.Role.OWNER)
        admin, created = User.objects.get_or_create(
            username="admin", defaults={"is_staff": True, "is_superuser": True}
        )
        if created:
            admin.set_password(password)
            admin.save(update_fields=["password"])
            self.stdout.write("Created admin login 'admin'")
