"""Content services: the L1 metrics of a study's generated articles."""
