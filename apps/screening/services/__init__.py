"""Screening services: the offense filter, features, calibration, runs, the LLM judge."""
