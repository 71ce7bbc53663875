"""Researcher pages of screening: runs and candidates, the offense filter, the LLM judge."""
