"""Generation runs end to end against the stand-in provider: outputs with their parameters,
self-explanations, guardrail interceptions, failures after retries, candidates with provenance,
and cancelling and resuming without asking twice."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from apps.core.errors import Conflict, DomainError, NotFound
from apps.generation.models import GenerationOutput, GenerationRun
from apps.generation.selectors import run_progress
from apps.generation.services import (
    EMPTY_OUTPUT_TEXT,
    generation_lane_work,
    generation_run_cancel,
    generation_run_resume,
    generation_run_start,
    output_claim,
)
from apps.screening.models import OffenseMatch
from apps.studies.models import Item, Study
from apps.studies.services import study_create
from tests.generation.conftest import API_KEY, FakeProvider
from tests.generation.helpers import make_endpoint, make_set, single

pytestmark = pytest.mark.django_db
Capture = Callable[..., Any]


@pytest.fixture
def study() -> Study:
    return study_create(slug="gen", rubric_slug="humor")


def start(study: Study, sets: list[Any], endpoints: list[Any], **kw: Any) -> GenerationRun:
    return generation_run_start(
        study=study,
        prompt_set_ids=[s.pk for s in sets],
        endpoint_ids=[e.pk for e in endpoints],
        **kw,
    )


def test_a_run_lands_every_output_as_a_candidate_with_its_provenance(
    study: Study,
    provider: FakeProvider,
    fast_backoff: None,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    prompts = make_set(
        study,
        single("p1", "Tell a joke about cats."),
        {
            "id": "p2",
            "level": "multi_turn",
            "lang": "zh",
            "topic": "健身",
            "context": [
                {"role": "user", "text": "我办了健身卡。"},
                {"role": "assistant", "text": "恭喜！"},
                {"role": "user", "text": "可我找不到出口。"},
            ],
        },
        {
            "id": "p3",
            "level": "scenario",
            "lang": "en",
            "topic": "work",
            "scenario": "A colleague lost a project.",
            "constraints": ["be kind"],
            "humor_type": "scenario_response",
        },
        humor_type="pun",
    )
    model = make_endpoint(study, provider.url)
    with django_capture_on_commit_callbacks(execute=True):
        run = start(study, [prompts], [model], samples_per_prompt=2, seed=100, api_key=API_KEY)
    run.refresh_from_db()
    assert run.status == GenerationRun.Status.DONE
    assert run.api_key == ""  # wiped once done
    outputs = list(run.outputs.order_by("prompt__external_id", "sample_index"))
    assert len(outputs) == 6
    assert {o.status for o in outputs} == {GenerationOutput.Status.DONE}
    first = outputs[0]
    assert first.seed == 100
    assert outputs[1].seed == 101
    assert first.finish_reason == "stop"
    assert (first.prompt_tokens, first.completion_tokens) == (21, 13)
    assert first.latency_ms is not None
    assert first.request["temperature"] == 1.1
    assert first.request["top_p"] == 0.9
    assert first.explanation == "It is funny because the ending flips the setup."

    items = Item.objects.filter(study=study).order_by("external_id")
    assert items.count() == 6
    assert {i.stage for i in items} == {Item.Stage.CANDIDATE}
    item = first.item
    assert item is not None
    assert item.source == "jester-1"
    assert item.level == "single"
    assert item.topic == "cats"
    assert item.humor_type == "pun"  # from the set
    assert item.explanation == first.explanation
    assert item.generation["prompt"] == "p1"
    assert item.generation["prompt_set"] == "set"
    assert item.generation["model"] == "jester-1"
    assert item.generation["temperature"] == 1.1
    assert item.generation["seed"] == 100
    assert item.generation["finish_reason"] == "stop"
    multi = Item.objects.get(pk=outputs[2].item_id)
    assert multi.level == "multi_turn"
    assert multi.language == "zh"
    assert len(multi.context) == 3
    scenario = Item.objects.get(pk=outputs[4].item_id)
    assert scenario.scenario == "A colleague lost a project."
    assert scenario.humor_type == "scenario_response"  # the prompt's own label wins

    # The explanation was asked in a follow-up turn after the joke itself.
    follow_ups = [
        r
        for r in provider.requests
        if len(r["messages"]) > 2 and r["messages"][-2]["role"] == "assistant"
    ]
    assert follow_ups
    assert follow_ups[0]["messages"][-2]["content"].startswith("A joke for:")
    # The key went out in the header only, and is stored nowhere.
    assert all(r["headers"]["Authorization"] == f"Bearer {API_KEY}" for r in provider.requests)
    assert API_KEY not in str(list(GenerationOutput.objects.values()))
    assert API_KEY not in str(list(Item.objects.values()))


def test_the_researchers_label_overrides_the_set_and_explanations_can_be_off(
    study: Study, provider: FakeProvider, django_capture_on_commit_callbacks: Capture
) -> None:
    prompts = make_set(study, single("p1", "cats", humor_type="pun"))
    model = make_endpoint(study, provider.url)
    with django_capture_on_commit_callbacks(execute=True):
        run = start(study, [prompts], [model], explain=False, humor_type="absurd")
    output = run.outputs.get()
    assert output.item is not None
    assert output.item.humor_type == "absurd"
    assert output.explanation == ""
    assert output.item.explanation == ""
    assert len(provider.requests) == 1


def test_guardrail_interceptions_are_kept_flagged_with_their_reason(
    study: Study, provider: FakeProvider, django_capture_on_commit_callbacks: Capture
) -> None:
    prompts = make_set(
        study,
        single("refuse", "REFUSE"),
        single("filter", "FILTER"),
        single("empty", "EMPTY"),
        single("deflect", "DEFLECT", lang="zh", topic="猫"),
        single("fine", "cats"),
    )
    model = make_endpoint(study, provider.url)
    with django_capture_on_commit_callbacks(execute=True):
        run = start(study, [prompts], [model])
    by_prompt = {o.prompt.external_id: o for o in run.outputs.select_related("prompt", "item")}
    expected = {
        "refuse": "refusal",
        "filter": "content_filter",
        "empty": "empty",
        "deflect": "pattern",
    }
    for pid, reason in expected.items():
        output = by_prompt[pid]
        assert output.status == GenerationOutput.Status.INTERCEPTED
        assert output.intercept_reason == reason
        assert output.item is not None
        assert output.item.safety_intercepted
        assert output.item.stage == Item.Stage.CANDIDATE
        assert output.item.generation["intercept_reason"] == reason
        assert output.explanation == ""  # nothing to explain
    assert by_prompt["deflect"].intercept_detail == "哈哈你懂的"
    assert by_prompt["empty"].item.text == EMPTY_OUTPUT_TEXT
    assert by_prompt["refuse"].intercept_detail == "I can't write that."
    assert not by_prompt["fine"].item.safety_intercepted
    progress = run_progress(run=run)
    row = progress.models[0]
    assert (row.done, row.intercepted, row.failed, row.waiting) == (1, 4, 0, 0)


def test_failures_after_retries_are_stored_per_model_and_resuming_retries_only_them(
    study: Study,
    provider: FakeProvider,
    fast_backoff: None,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    prompts = make_set(
        study, single("ok", "cats"), single("bad", "ALWAYS500"), single("junk", "GARBAGE")
    )
    model = make_endpoint(study, provider.url, max_retries=2)
    with django_capture_on_commit_callbacks(execute=True):
        run = start(study, [prompts], [model], explain=False)
    run.refresh_from_db()
    assert run.status == GenerationRun.Status.DONE
    bad = run.outputs.get(prompt__external_id="bad")
    assert bad.status == GenerationOutput.Status.FAILED
    assert bad.item is None
    assert bad.attempts == 3
    assert "HTTP 500" in bad.error
    junk = run.outputs.get(prompt__external_id="junk")
    assert junk.status == GenerationOutput.Status.FAILED
    assert junk.attempts == 1
    row = run_progress(run=run).models[0]
    assert (row.done, row.failed) == (1, 2)
    assert {e.prompt_id for e in row.errors} == {"bad", "junk"}
    calls_before = len(provider.requests)
    with django_capture_on_commit_callbacks(execute=True):
        generation_run_resume(run=run)
    # Only the two failed outputs were asked again (3 + 1 calls); the good one was not.
    assert len(provider.requests) - calls_before == 4
    assert run.outputs.count() == 3
    assert Item.objects.filter(study=study).count() == 1


def test_a_flaky_endpoint_is_retried_with_backoff_until_it_answers(
    study: Study,
    provider: FakeProvider,
    fast_backoff: None,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    provider.failures["FLAKY429"] = 1
    provider.failures["FLAKY500"] = 2
    prompts = make_set(study, single("a", "FLAKY429 cats"), single("b", "FLAKY500 dogs"))
    model = make_endpoint(study, provider.url, max_retries=3)
    with django_capture_on_commit_callbacks(execute=True):
        run = start(study, [prompts], [model], explain=False)
    attempts = dict(run.outputs.values_list("prompt__external_id", "attempts"))
    assert attempts == {"a": 2, "b": 3}
    assert set(run.outputs.values_list("status", flat=True)) == {GenerationOutput.Status.DONE}


def test_a_cancelled_run_stops_and_resumes_without_duplicating_outputs(
    study: Study, provider: FakeProvider, django_capture_on_commit_callbacks: Capture
) -> None:
    prompts = make_set(study, *[single(f"p{n}", f"joke {n}") for n in range(4)])
    model = make_endpoint(study, provider.url)
    run = start(study, [prompts], [model], explain=False)  # work not queued (no commit here)
    # One worker does two outputs, then the researcher cancels.
    for _ in range(2):
        claim = output_claim(run_id=run.pk, endpoint_id=model.pk)
        assert claim.output_id is not None
        from apps.generation.services import output_generate

        output_generate(output_id=claim.output_id)
    generation_run_cancel(run=run)
    assert generation_lane_work(run_id=run.pk, endpoint_id=model.pk, budget_seconds=60) == (
        "finished"
    )
    assert run.outputs.filter(status=GenerationOutput.Status.DONE).count() == 2
    assert len(provider.requests) == 2
    with pytest.raises(Conflict):
        generation_run_cancel(run=run)
    with django_capture_on_commit_callbacks(execute=True):
        generation_run_resume(run=run)
    run.refresh_from_db()
    assert run.status == GenerationRun.Status.DONE
    assert run.outputs.count() == 4
    assert len(provider.requests) == 4  # the two generated before were not asked again
    assert Item.objects.filter(study=study).count() == 4
    with pytest.raises(Conflict):
        generation_run_resume(run=run)


def test_the_concurrency_limit_holds_over_every_run_on_the_endpoint(
    study: Study, provider: FakeProvider
) -> None:
    prompts = make_set(study, *[single(f"p{n}", f"joke {n}") for n in range(3)])
    model = make_endpoint(study, provider.url, max_concurrency=2)
    run_a = start(study, [prompts], [model], explain=False)
    run_b = start(study, [prompts], [model], explain=False)
    assert output_claim(run_id=run_a.pk, endpoint_id=model.pk).output_id is not None
    assert output_claim(run_id=run_b.pk, endpoint_id=model.pk).output_id is not None
    third = output_claim(run_id=run_a.pk, endpoint_id=model.pk)
    assert third.output_id is None
    assert third.busy


def test_a_redelivered_output_is_stored_once(study: Study, provider: FakeProvider) -> None:
    from apps.generation.services import output_generate

    prompts = make_set(study, single("p1", "cats"))
    model = make_endpoint(study, provider.url)
    run = start(study, [prompts], [model], explain=False)
    claim = output_claim(run_id=run.pk, endpoint_id=model.pk)
    assert output_generate(output_id=claim.output_id) == GenerationOutput.Status.DONE
    assert output_generate(output_id=claim.output_id) is None
    assert Item.objects.filter(study=study).count() == 1


def test_candidates_go_through_the_offense_filter(
    study: Study, provider: FakeProvider, django_capture_on_commit_callbacks: Capture
) -> None:
    prompts = make_set(study, single("p1", "shit happens"))
    model = make_endpoint(study, provider.url)
    with django_capture_on_commit_callbacks(execute=True):
        run = start(study, [prompts], [model], explain=False)
    item = run.outputs.get().item
    assert item is not None
    assert item.stage == Item.Stage.HELD
    assert OffenseMatch.objects.filter(item=item).exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"samples_per_prompt": 0}, "samples_per_prompt"),
        ({"samples_per_prompt": 51}, "samples_per_prompt"),
        ({"temperature": -0.1}, "temperature"),
        ({"temperature": 2.5}, "temperature"),
        ({"top_p": 0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"seed": -1}, "seed"),
        ({"humor_type": "x" * 65}, "humor_type"),
        ({"api_key": "bad\nkey"}, "api_key"),
        ({"explanation_prompts": {"en": 3}}, "explanation"),
    ],
)
def test_bad_run_settings_are_refused_and_nothing_is_stored(
    study: Study, provider: FakeProvider, change: dict[str, Any], field: str
) -> None:
    prompts = make_set(study, single("p1", "cats"))
    model = make_endpoint(study, provider.url)
    with pytest.raises(DomainError) as refused:
        start(study, [prompts], [model], **change)
    assert refused.value.field == field
    assert not GenerationRun.objects.exists()
    assert not GenerationOutput.objects.exists()


def test_another_studys_sets_and_models_are_not_found(study: Study, provider: FakeProvider) -> None:
    other = study_create(slug="other", rubric_slug="humor")
    theirs = make_set(other, single("p1", "cats"))
    mine = make_set(study, single("p1", "cats"))
    model = make_endpoint(study, provider.url)
    with pytest.raises(NotFound):
        start(study, [theirs], [model])
    with pytest.raises(NotFound):
        start(study, [mine], [make_endpoint(other, provider.url)])
    assert not GenerationRun.objects.exists()


def test_a_local_model_needs_the_server_setting(study: Study, settings: Any) -> None:
    from apps.generation.services import endpoint_save

    prompts = make_set(study, single("p1", "cats"))
    local = endpoint_save(study=study, values={"name": "local-lm", "kind": "local"})
    settings.GENERATION_LOCAL_MODEL_PATH = "off"
    with pytest.raises(DomainError, match="GENERATION_LOCAL_MODEL_PATH=off"):
        start(study, [prompts], [local])
    settings.GENERATION_LOCAL_MODEL_PATH = "/nonexistent/model"
    with pytest.raises(DomainError, match="no model folder at /nonexistent/model"):
        start(study, [prompts], [local])
    assert not GenerationRun.objects.exists()


def test_an_output_whose_worker_died_is_taken_over_when_its_lease_ends(
    study: Study, provider: FakeProvider
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from apps.generation.services import run_waits_on_leases

    prompts = make_set(study, single("p1", "cats"), single("p2", "dogs"))
    model = make_endpoint(study, provider.url)
    run = start(study, [prompts], [model], explain=False)
    # A worker takes the first output and dies without storing it.
    lost = output_claim(run_id=run.pk, endpoint_id=model.pk).output_id
    assert lost is not None
    assert generation_lane_work(run_id=run.pk, endpoint_id=model.pk, budget_seconds=60) == (
        "finished"
    )
    # The other output is done; the lost one is still held, so the run waits (and its lane
    # looks again later) instead of being marked done.
    run.refresh_from_db()
    assert run.status == GenerationRun.Status.RUNNING
    assert run_waits_on_leases(run_id=run.pk)
    GenerationOutput.objects.filter(pk=lost).update(
        lease_until=timezone.now() - timedelta(seconds=1)
    )
    assert generation_lane_work(run_id=run.pk, endpoint_id=model.pk, budget_seconds=60) == (
        "finished"
    )
    run.refresh_from_db()
    assert run.status == GenerationRun.Status.DONE
    assert not run_waits_on_leases(run_id=run.pk)
    assert sorted(r["messages"][-1]["content"] for r in provider.requests) == ["cats", "dogs"]
    assert Item.objects.filter(study=study).count() == 2


def test_an_output_the_item_import_refuses_is_a_failed_output_with_the_reason(
    study: Study, provider: FakeProvider, django_capture_on_commit_callbacks: Capture
) -> None:
    prompts = make_set(study, single("huge", "HUGE"), single("nul", "NUL"))
    model = make_endpoint(study, provider.url)
    with django_capture_on_commit_callbacks(execute=True):
        run = start(study, [prompts], [model], explain=False)
    run.refresh_from_db()
    assert run.status == GenerationRun.Status.DONE
    huge = run.outputs.get(prompt__external_id="huge")
    assert huge.status == GenerationOutput.Status.FAILED
    assert "could not become a candidate" in huge.error
    assert "longer than 20000 characters" in huge.error
    assert huge.item is None
    # NUL and a lone surrogate (valid JSON escapes) are made storable, not fatal.
    nul = run.outputs.get(prompt__external_id="nul")
    assert nul.status == GenerationOutput.Status.DONE
    assert nul.item is not None
    assert "\x00" not in nul.item.text
