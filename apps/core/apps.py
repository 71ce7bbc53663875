from __future__ import annotations

from pathlib import Path

from django.apps import AppConfig
from django.conf import settings


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"
    verbose_name = "LaughLab core"

    def ready(self) -> None:
        from apps.core.ratelimit import parse_rate

        # A malformed rate stops the process at start, like every other setting.
        parse_rate(settings.RATE_LIMIT_ENROLL)
        parse_rate(settings.RATE_LIMIT_SUBMIT)
        parse_rate(settings.RATE_LIMIT_LOGIN_ACCOUNT)
        parse_rate(settings.RATE_LIMIT_LOGIN_ADDRESS)
        # kombu's filesystem transport needs its folders before the first send or poll; the
        # web process and the demo worker may start in either order, so both make sure.
        if settings.CELERY_BROKER_URL.startswith("filesystem://"):
            for key in ("data_folder_in", "processed_folder", "control_folder"):
                Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS[key]).mkdir(
                    parents=True, exist_ok=True
                )
