"""Mounted at api/v1/ (config/urls.py): the researcher API. The version is in the path; a
breaking change gets api/v2/ beside it."""

from __future__ import annotations

from django.urls import path, re_path

from apps.api import views
from apps.generation import api as generation
from apps.screening import api as screening

app_name = "api"

urlpatterns = [
    path("studies/", views.StudiesApi.as_view(), name="studies"),
    path("rubrics/<slug:slug>/", views.RubricApi.as_view(), name="rubric"),
    path("studies/<slug:slug>/", views.StudyApi.as_view(), name="study"),
    path("studies/<slug:slug>/open/", views.StudyOpenApi.as_view(), name="study-open"),
    path("studies/<slug:slug>/close/", views.StudyCloseApi.as_view(), name="study-close"),
    path("studies/<slug:slug>/items/", views.StudyItemsApi.as_view(), name="items"),
    path("studies/<slug:slug>/judgments/", views.StudyJudgmentsApi.as_view(), name="judgments"),
    path(
        "studies/<slug:slug>/imports/<int:job_id>/", views.StudyImportApi.as_view(), name="import"
    ),
    path("studies/<slug:slug>/progress/", views.StudyProgressApi.as_view(), name="progress"),
    path("studies/<slug:slug>/results/", views.StudyResultsApi.as_view(), name="results"),
    path(
        "studies/<slug:slug>/results/recompute/",
        views.StudyResultsRecomputeApi.as_view(),
        name="results-recompute",
    ),
    path("studies/<slug:slug>/exports/", views.StudyExportsApi.as_view(), name="exports"),
    path(
        "studies/<slug:slug>/exports/<int:job_id>/", views.StudyExportApi.as_view(), name="export"
    ),
    path(
        "studies/<slug:slug>/exports/<int:job_id>/download/",
        views.StudyExportDownloadApi.as_view(),
        name="export-download",
    ),
    path("studies/<slug:slug>/exclusions/", views.StudyExclusionsApi.as_view(), name="exclusions"),
    path(
        "studies/<slug:slug>/prolific/returns/",
        views.StudyProlificReturnsApi.as_view(),
        name="prolific-returns",
    ),
    path(
        "studies/<slug:slug>/prolific/bonuses/",
        views.StudyProlificBonusesApi.as_view(),
        name="prolific-bonuses",
    ),
    path(
        "studies/<slug:slug>/exclusions/<int:exclusion_id>/undo/",
        views.StudyExclusionUndoApi.as_view(),
        name="exclusion-undo",
    ),
    path(
        "studies/<slug:slug>/prompt-sets/", generation.PromptSetsApi.as_view(), name="prompt-sets"
    ),
    path(
        "studies/<slug:slug>/prompt-sets/<int:set_id>/",
        generation.PromptSetApi.as_view(),
        name="prompt-set",
    ),
    path("studies/<slug:slug>/models/", generation.EndpointsApi.as_view(), name="models"),
    path(
        "studies/<slug:slug>/generation-runs/",
        generation.RunsApi.as_view(),
        name="generation-runs",
    ),
    path(
        "studies/<slug:slug>/generation-runs/<int:run_id>/",
        generation.RunApi.as_view(),
        name="generation-run",
    ),
    path(
        "studies/<slug:slug>/generation-runs/<int:run_id>/cancel/",
        generation.RunCancelApi.as_view(),
        name="generation-run-cancel",
    ),
    path(
        "studies/<slug:slug>/generation-runs/<int:run_id>/resume/",
        generation.RunResumeApi.as_view(),
        name="generation-run-resume",
    ),
    path("studies/<slug:slug>/judge/", screening.JudgeConfigApi.as_view(), name="judge"),
    # Last: any other path under api/v1/ is a JSON 404 too, never the site's HTML page.
    re_path(r"^[\s\S]*$", views.no_endpoint, name="no-endpoint"),
]
