from __future__ import annotations

from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo studies (fixtures/demo, fixtures/demo_content) and the command that runs them."""

    name = "apps.demo"
    label = "demo"
    verbose_name = "Demo studies"
