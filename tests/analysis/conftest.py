"""Fixtures shared by the whole suite live in tests/conftest.py (demo_study, demo_study_committed)."""
