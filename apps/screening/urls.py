"""Screening pages, under /studies/<slug>/screening/. Each part of screening lists its own routes."""

from __future__ import annotations

from apps.screening.views import judge, offense, runs

app_name = "screening"

urlpatterns = [*runs.urlpatterns, *offense.urlpatterns, *judge.urlpatterns]
