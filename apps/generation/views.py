"""Researcher pages of generation: prompt sets (import, examples, editing), the models a study
asks, and runs with their progress and errors per model. Thin: a form checks shapes, a service
or selector does the work; a refused change re-renders its form with a 400 and stores nothing."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.core.errors import DomainError, ImportRejected
from apps.generation import selectors
from apps.generation.forms import (
    EndpointForm,
    PromptForm,
    PromptSetForm,
    PromptSetUploadForm,
    ResumeForm,
    RunForm,
)
from apps.generation.models import GenerationRun, ModelEndpoint, PromptSet
from apps.generation.services import (
    endpoint_save,
    generation_run_cancel,
    generation_run_resume,
    generation_run_start,
    local_source,
    prompt_delete,
    prompt_save,
    prompt_set_examples_install,
    prompt_set_import,
    prompt_set_update,
    settings_api_key,
)
from apps.studies.access import study_view
from apps.studies.models import Study

RUN_REFRESH_SECONDS = 5


def _form_error(form: Any, exc: DomainError) -> None:
    field = exc.field if exc.field in form.fields else None
    form.add_error(field, exc.message)


def _overview(
    request: HttpRequest,
    study: Study,
    *,
    upload: PromptSetUploadForm | None = None,
    upload_errors: list[object] | None = None,
    endpoint_form: EndpointForm | None = None,
    run_form: RunForm | None = None,
    status: int = 200,
) -> HttpResponse:
    prompt_sets = list(selectors.prompt_sets_list(study=study))
    endpoints = list(selectors.endpoints_list(study=study))
    runs = list(selectors.runs_list(study=study)[:50])
    context = {
        "study": study,
        "prompt_sets": prompt_sets,
        "endpoints": [
            {
                "endpoint": e,
                "key_from_settings": bool(
                    e.kind == ModelEndpoint.Kind.CHAT and settings_api_key(e.url)
                ),
            }
            for e in endpoints
        ],
        "runs": [(run, selectors.run_progress(run=run)) for run in runs],
        "upload": upload or PromptSetUploadForm(),
        "upload_errors": upload_errors or [],
        "endpoint_form": endpoint_form or EndpointForm(),
        "run_form": run_form or RunForm(prompt_sets=prompt_sets, endpoints=endpoints),
        "local": local_source(),
        "coverage": selectors.topic_coverage(study=study),
    }
    return render(request, "generation/overview.html", context, status=status)


@study_view
@require_GET
def overview(request: HttpRequest, study: Study) -> HttpResponse:
    return _overview(request, study)


@study_view
@require_POST
def prompt_set_upload(request: HttpRequest, study: Study) -> HttpResponse:
    form = PromptSetUploadForm(request.POST, request.FILES)
    errors: list[object] = []
    if form.is_valid():
        upload = form.cleaned_data["file"]
        if upload.size > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            form.add_error("file", _("The file is larger than the upload limit."))
        else:
            try:
                summary = prompt_set_import(
                    study=study,
                    name=form.cleaned_data["name"],
                    humor_type=form.cleaned_data["humor_type"],
                    data=upload.read(),
                    filename=upload.name,
                )
            except ImportRejected as exc:
                errors = list(exc.errors)
                form.add_error("file", exc.message)
            except DomainError as exc:
                _form_error(form, exc)
            else:
                messages.success(
                    request,
                    _("%(created)d prompts imported into %(name)s, %(unchanged)d already present.")
                    % {
                        "created": summary.created,
                        "unchanged": summary.unchanged,
                        "name": summary.prompt_set.name,
                    },
                )
                return HttpResponseRedirect(
                    reverse("generation:set", args=[study.slug, summary.prompt_set.pk])
                )
    return _overview(request, study, upload=form, upload_errors=errors, status=400)


@study_view
@require_POST
def examples_install(request: HttpRequest, study: Study) -> HttpResponse:
    sets = prompt_set_examples_install(study=study)
    messages.success(
        request,
        _("The example prompt sets are in the study: %(names)s.")
        % {"names": ", ".join(s.name for s in sets)},
    )
    return HttpResponseRedirect(reverse("generation:overview", args=[study.slug]))


def _set_page(
    request: HttpRequest,
    study: Study,
    prompt_set: PromptSet,
    *,
    set_form: PromptSetForm | None = None,
    prompt_form: PromptForm | None = None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "study": study,
        "prompt_set": prompt_set,
        "prompts": prompt_set.prompts.order_by("external_id"),
        "set_form": set_form
        or PromptSetForm(
            initial={
                "name": prompt_set.name,
                "humor_type": prompt_set.humor_type,
                "description": prompt_set.description,
            }
        ),
        "prompt_form": prompt_form or PromptForm(),
    }
    return render(request, "generation/prompt_set.html", context, status=status)


@study_view
@require_http_methods(["GET", "POST"])
def prompt_set_page(request: HttpRequest, study: Study, set_id: int) -> HttpResponse:
    prompt_set = selectors.prompt_set_get(study=study, prompt_set_id=set_id)
    if request.method == "GET":
        return _set_page(request, study, prompt_set)
    form = PromptSetForm(request.POST)
    if form.is_valid():
        try:
            prompt_set_update(prompt_set=prompt_set, **form.cleaned_data)
        except DomainError as exc:
            _form_error(form, exc)
        else:
            messages.success(request, _("Prompt set saved."))
            return HttpResponseRedirect(reverse("generation:set", args=[study.slug, set_id]))
    prompt_set.refresh_from_db()
    return _set_page(request, study, prompt_set, set_form=form, status=400)


@study_view
@require_POST
def prompt_new(request: HttpRequest, study: Study, set_id: int) -> HttpResponse:
    prompt_set = selectors.prompt_set_get(study=study, prompt_set_id=set_id)
    form = PromptForm(request.POST)
    if form.is_valid():
        try:
            prompt_save(prompt_set=prompt_set, fields=form.as_fields())
        except DomainError as exc:
            _form_error(form, exc)
        else:
            messages.success(request, _("Prompt added."))
            return HttpResponseRedirect(reverse("generation:set", args=[study.slug, set_id]))
    return _set_page(request, study, prompt_set, prompt_form=form, status=400)


@study_view
@require_http_methods(["GET", "POST"])
def prompt_edit(request: HttpRequest, study: Study, set_id: int, prompt_id: int) -> HttpResponse:
    prompt_set = selectors.prompt_set_get(study=study, prompt_set_id=set_id)
    prompt = selectors.prompt_get(prompt_set=prompt_set, prompt_id=prompt_id)
    status = 200
    if request.method == "POST":
        form = PromptForm(request.POST)
        if form.is_valid():
            try:
                prompt_save(prompt_set=prompt_set, fields=form.as_fields(), prompt=prompt)
            except DomainError as exc:
                _form_error(form, exc)
            else:
                messages.success(request, _("Prompt saved."))
                return HttpResponseRedirect(reverse("generation:set", args=[study.slug, set_id]))
        status = 400
    else:
        form = PromptForm(initial=PromptForm.initial_for(prompt))
    context = {"study": study, "prompt_set": prompt_set, "prompt": prompt, "form": form}
    return render(request, "generation/prompt_edit.html", context, status=status)


@study_view
@require_POST
def prompt_remove(request: HttpRequest, study: Study, set_id: int, prompt_id: int) -> HttpResponse:
    prompt_set = selectors.prompt_set_get(study=study, prompt_set_id=set_id)
    prompt = selectors.prompt_get(prompt_set=prompt_set, prompt_id=prompt_id)
    try:
        prompt_delete(prompt=prompt)
    except DomainError as exc:
        messages.error(request, exc.message)
        return _set_page(request, study, prompt_set, status=exc.status_code)
    messages.success(request, _("Prompt deleted."))
    return HttpResponseRedirect(reverse("generation:set", args=[study.slug, set_id]))


@study_view
@require_POST
def endpoint_new(request: HttpRequest, study: Study) -> HttpResponse:
    form = EndpointForm(request.POST)
    if form.is_valid():
        try:
            endpoint_save(study=study, values=form.cleaned_data)
        except DomainError as exc:
            _form_error(form, exc)
        else:
            messages.success(request, _("Model added."))
            return HttpResponseRedirect(reverse("generation:overview", args=[study.slug]))
    return _overview(request, study, endpoint_form=form, status=400)


@study_view
@require_http_methods(["GET", "POST"])
def endpoint_edit(request: HttpRequest, study: Study, endpoint_id: int) -> HttpResponse:
    endpoint = selectors.endpoint_get(study=study, endpoint_id=endpoint_id)
    status = 200
    if request.method == "POST":
        form = EndpointForm(request.POST)
        if form.is_valid():
            try:
                endpoint_save(study=study, values=form.cleaned_data, endpoint=endpoint)
            except DomainError as exc:
                _form_error(form, exc)
            else:
                messages.success(request, _("Model saved."))
                return HttpResponseRedirect(reverse("generation:overview", args=[study.slug]))
        status = 400
        endpoint.refresh_from_db()
    else:
        form = EndpointForm(
            initial={name: getattr(endpoint, name) for name in EndpointForm.base_fields}
        )
    context = {"study": study, "endpoint": endpoint, "form": form}
    return render(request, "generation/endpoint_edit.html", context, status=status)


@sensitive_post_parameters("api_key")
@study_view
@require_POST
def run_new(request: HttpRequest, study: Study) -> HttpResponse:
    prompt_sets = list(selectors.prompt_sets_list(study=study))
    endpoints = list(selectors.endpoints_list(study=study))
    form = RunForm(request.POST, prompt_sets=prompt_sets, endpoints=endpoints)
    if form.is_valid():
        data = form.cleaned_data
        try:
            run = generation_run_start(
                study=study,
                prompt_set_ids=data["prompt_sets"],
                endpoint_ids=data["endpoints"],
                samples_per_prompt=data["samples_per_prompt"],
                temperature=data["temperature"],
                top_p=data["top_p"],
                max_tokens=data["max_tokens"],
                seed=data["seed"],
                explain=data["explain"],
                explanation_prompts={"en": data["explanation_en"], "zh": data["explanation_zh"]},
                humor_type=data["humor_type"],
                api_key=data["api_key"],
                user=request.user,
            )
        except DomainError as exc:
            _form_error(form, exc)
        else:
            messages.success(request, _("The run has started."))
            return HttpResponseRedirect(reverse("generation:run", args=[study.slug, run.pk]))
    return _overview(request, study, run_form=form, status=400)


def _run_page(
    request: HttpRequest, study: Study, run: GenerationRun, *, status: int = 200
) -> HttpResponse:
    context = {
        "study": study,
        "run": run,
        "progress": selectors.run_progress(run=run),
        "outputs": selectors.run_outputs(run=run),
        "prompt_sets": run.prompt_sets.order_by("name"),
        "resume_form": ResumeForm(),
        "refresh_seconds": RUN_REFRESH_SECONDS
        if run.status == GenerationRun.Status.RUNNING
        else None,
    }
    return render(request, "generation/run.html", context, status=status)


@study_view
@require_GET
def run_page(request: HttpRequest, study: Study, run_id: int) -> HttpResponse:
    return _run_page(request, study, selectors.run_get(study=study, run_id=run_id))


@study_view
@require_POST
def run_cancel(request: HttpRequest, study: Study, run_id: int) -> HttpResponse:
    run = selectors.run_get(study=study, run_id=run_id)
    try:
        generation_run_cancel(run=run)
    except DomainError as exc:
        messages.error(request, exc.message)
        return _run_page(request, study, run, status=exc.status_code)
    messages.success(request, _("The run is cancelled; what it generated is kept."))
    return HttpResponseRedirect(reverse("generation:run", args=[study.slug, run_id]))


@sensitive_post_parameters("api_key")
@study_view
@require_POST
def run_resume(request: HttpRequest, study: Study, run_id: int) -> HttpResponse:
    run = selectors.run_get(study=study, run_id=run_id)
    form = ResumeForm(request.POST)
    if not form.is_valid():
        return _run_page(request, study, run, status=400)
    try:
        generation_run_resume(run=run, api_key=form.cleaned_data["api_key"])
    except DomainError as exc:
        messages.error(request, exc.message)
        return _run_page(request, study, run, status=exc.status_code)
    messages.success(request, _("The run goes on with what is not generated yet."))
    return HttpResponseRedirect(reverse("generation:run", args=[study.slug, run_id]))
