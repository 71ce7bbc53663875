"""`manage.py generate`: the whole path from a prompt file to candidates, and command errors
that name the line, field or argument, with nothing stored."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.generation.models import GenerationOutput, GenerationRun, ModelEndpoint, PromptSet
from apps.studies.models import Item, Study
from apps.studies.services import study_create
from tests.generation.conftest import FakeProvider
from tests.generation.helpers import jsonl, single

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def study(builtin_rubrics: None) -> Study:
    return study_create(slug="cmd", rubric_slug="humor")


def run(*args: Any) -> str:
    out = StringIO()
    call_command("generate", *args, stdout=out)
    return out.getvalue()


def test_from_a_prompt_file_to_candidates(
    study: Study, provider: FakeProvider, tmp_path: Path, fast_backoff: None
) -> None:
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_bytes(jsonl(single("p1", "cats"), single("p2", "REFUSE")))
    assert "2 prompts imported into 'mine'" in run(
        "import-prompts", "cmd", str(prompts), "--set", "mine", "--humor-type", "pun"
    )
    assert "0 prompts imported" in run("import-prompts", "cmd", str(prompts), "--set", "mine")
    assert "example sets" in run("examples", "cmd")
    assert "added" in run("add-model", "cmd", "jester", "--url", provider.url, "--model", "j1")
    assert "changed" in run(
        "add-model", "cmd", "jester", "--url", provider.url, "--model", "j1", "--concurrency", "3"
    )
    assert ModelEndpoint.objects.get(name="jester").max_concurrency == 3
    out = run("run", "cmd", "--sets", "mine", "--models", "jester", "--samples", "2", "--seed", "9")
    status = json.loads(out[out.index("{") :])
    assert status["status"] == "done"
    assert status["models"]["jester"]["generated"] == 2
    assert status["models"]["jester"]["intercepted"] == 2
    assert Item.objects.filter(study=study, stage=Item.Stage.CANDIDATE).count() == 4
    run_id = GenerationRun.objects.get().pk
    with pytest.raises(CommandError, match="already generated"):
        run("resume", "cmd", str(run_id))
    assert '"status": "done"' in run("status", "cmd", str(run_id))


def test_a_bad_prompt_file_names_line_and_field(study: Study, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(
        jsonl(single("p1", "cats"), {"id": "p2", "level": "limerick", "lang": "en", "prompt": "x"})
    )
    with pytest.raises(CommandError) as failed:
        run("import-prompts", "cmd", str(bad), "--set", "bad")
    assert "line 2, field 'level'" in str(failed.value)
    assert not PromptSet.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "cmd", "--sets", "nope", "--models", "m"], "no prompt set named 'nope'"),
        (["run", "nostudy", "--sets", "a", "--models", "m"], "nostudy"),
        (["status", "cmd", "abc"], "RUN must be a run number"),
        (["status", "cmd", "12345"], "no such generation run"),
        (["add-model", "cmd", "m", "--url", "file:///etc/passwd", "--model", "x"], "http://"),
        (["add-model", "cmd", "m", "--url", "http://h/v1"], "model name"),
        (["add-model", "cmd", "m", "--local", "--concurrency", "0"], "max_concurrency"),
        (["import-prompts", "cmd", "/nonexistent.jsonl", "--set", "x"], "does not exist"),
    ],
)
def test_bad_arguments_are_command_errors(study: Study, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert not ModelEndpoint.objects.exists()
    assert not GenerationOutput.objects.exists()


def test_bad_run_settings_are_command_errors(
    study: Study, provider: FakeProvider, tmp_path: Path
) -> None:
    prompts = tmp_path / "p.jsonl"
    prompts.write_bytes(jsonl(single("p1", "cats")))
    run("import-prompts", "cmd", str(prompts), "--set", "s")
    run("add-model", "cmd", "m", "--url", provider.url, "--model", "x")
    with pytest.raises(CommandError, match="temperature"):
        run("run", "cmd", "--sets", "s", "--models", "m", "--temperature", "5")
    assert not GenerationRun.objects.exists()


def test_the_demo_study_starts_with_the_example_prompt_sets(builtin_rubrics: None) -> None:
    call_command("seed_demo", "--skip-aggregate", stdout=StringIO())
    call_command("seed_demo", "--skip-aggregate", stdout=StringIO())  # twice: nothing doubled
    names = set(PromptSet.objects.filter(study__slug="demo").values_list("name", flat=True))
    assert names == {"Example (English)", "示例（中文）"}
