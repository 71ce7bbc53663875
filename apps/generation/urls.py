"""Generation pages, under /studies/<slug>/generation/."""

from __future__ import annotations

from django.urls import path

from apps.generation import views

app_name = "generation"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("sets/import/", views.prompt_set_upload, name="set_upload"),
    path("sets/examples/", views.examples_install, name="examples"),
    path("sets/<int:set_id>/", views.prompt_set_page, name="set"),
    path("sets/<int:set_id>/prompts/new/", views.prompt_new, name="prompt_new"),
    path("sets/<int:set_id>/prompts/<int:prompt_id>/", views.prompt_edit, name="prompt"),
    path(
        "sets/<int:set_id>/prompts/<int:prompt_id>/delete/",
        views.prompt_remove,
        name="prompt_delete",
    ),
    path("models/new/", views.endpoint_new, name="endpoint_new"),
    path("models/<int:endpoint_id>/", views.endpoint_edit, name="endpoint"),
    path("runs/new/", views.run_new, name="run_new"),
    path("runs/<int:run_id>/", views.run_page, name="run"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run_cancel"),
    path("runs/<int:run_id>/resume/", views.run_resume, name="run_resume"),
]
