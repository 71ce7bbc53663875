from __future__ import annotations

from django.urls import path

from apps.dashboard import imports, prolific, results, views

app_name = "dashboard"

urlpatterns = [
    path("", views.study_list, name="study_list"),
    path("new/", views.study_new, name="study_new"),
    path("<slug:slug>/", views.overview, name="overview"),
    path("<slug:slug>/progress/", views.progress_partial, name="progress"),
    path("<slug:slug>/settings/", views.study_settings, name="settings"),
    path("<slug:slug>/items/", views.items_upload, name="items_upload"),
    path("<slug:slug>/judgments/", imports.judgments_upload, name="judgments_upload"),
    path("<slug:slug>/imports/<int:job_id>/", imports.import_job, name="import_job"),
    path(
        "<slug:slug>/imports/<int:job_id>/state/",
        imports.import_job_partial,
        name="import_job_state",
    ),
    path("<slug:slug>/status/", views.status_change, name="status"),
    path("<slug:slug>/prolific/", prolific.prolific_page, name="prolific"),
    path("<slug:slug>/prolific/bonuses.csv", prolific.prolific_bonus_file, name="prolific_bonuses"),
    path("<slug:slug>/results/", results.summary, name="results"),
    path("<slug:slug>/results/data/<slug:name>.csv", results.chart_data, name="results_data"),
    path("<slug:slug>/results/<slug:section>/", results.section, name="results_section"),
]
