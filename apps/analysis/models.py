"""Derived data: a study's computed results, and the bookkeeping of when to recompute them.

Results are replaced as a whole at the end of a successful run, so a run that dies midway leaves
the previous results readable. Nothing here is evidence: it can always be recomputed from the
raw judgments.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import models

from apps.core.document_field import DocumentJSONField
from apps.studies.models import Study


class AggregationState(models.Model):
    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="aggregation_state")
    # When evidence last changed; a run that started after this time has seen it.
    requested_at = models.DateTimeField(null=True, blank=True)
    # A debounced run is queued. Set by a conditional UPDATE (False -> True), so a burst of
    # submissions queues one run; cleared when the run starts.
    scheduled = models.BooleanField(default=False)
    scheduled_at = models.DateTimeField(null=True, blank=True)
    last_started_at = models.DateTimeField(null=True, blank=True)
    last_finished_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"aggregation of {self.study_id}"


class CompactJSONEncoder(json.JSONEncoder):
    """JSON without the spaces after separators: a large study's document is tens of megabytes
    of text that the driver quotes and PostgreSQL checks and stores (a tenth less text)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["separators"] = (",", ":")
        super().__init__(*args, **kwargs)


class StudyResult(models.Model):
    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="result")
    # The results in the export shape of DESIGN.md, stored and read whole (`json`, not `jsonb`).
    payload = DocumentJSONField(encoder=CompactJSONEncoder)
    # sha256 of the inputs exactly as the statistics saw them.
    input_hash = models.CharField(max_length=64)
    seed = models.BigIntegerField()
    rounds = models.PositiveIntegerField()
    computed_at = models.DateTimeField()
    duration_seconds = models.FloatField()
    # The AggregationState.requested_at this run started from: newer evidence means stale results.
    evidence_as_of = models.DateTimeField(null=True, blank=True)
    # sha256 of the active exclusions the run left out ("" when there were none).
    exclusion_hash = models.CharField(max_length=64, blank=True)

    def __str__(self) -> str:
        return f"results of {self.study_id} at {self.computed_at:%Y-%m-%d %H:%M}"
