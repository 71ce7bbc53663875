"""Researcher pages of content evaluation."""
