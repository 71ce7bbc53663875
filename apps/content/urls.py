"""Content evaluation pages, under /studies/<slug>/content/."""

from __future__ import annotations

from apps.content.views import evaluation

app_name = "content"

urlpatterns = [*evaluation.urlpatterns]
