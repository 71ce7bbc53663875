"""Both demo studies, seeded once per module (tests/pages/conftest.py), for the report's tests."""

from __future__ import annotations

from tests.pages.conftest import demo_site

__all__ = ["demo_site"]
