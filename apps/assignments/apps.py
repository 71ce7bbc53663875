from __future__ import annotations

from django.apps import AppConfig


class AssignmentsConfig(AppConfig):
    name = "apps.assignments"
    label = "assignments"
    verbose_name = "Assignments"
