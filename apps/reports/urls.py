"""Mounted at studies/<slug>/exports/ (config/urls.py); every view receives the study slug."""

from __future__ import annotations

from django.urls import path

from apps.reports import views

app_name = "reports"

urlpatterns = [
    path("", views.exports, name="exports"),
    path("direct/<str:fmt>", views.direct_download, name="direct"),
    path("<int:job_id>/status", views.job_status, name="status"),
    path("<int:job_id>/download", views.job_download, name="download"),
]
