"""Results pages, one module per section; `views` holds the three URL entry points."""

from __future__ import annotations

from apps.dashboard.results.common import LIST_LIMIT, PAGE_SIZE
from apps.dashboard.results.views import CSV_NAMES, chart_data, section, summary

__all__ = ["CSV_NAMES", "LIST_LIMIT", "PAGE_SIZE", "chart_data", "section", "summary"]
