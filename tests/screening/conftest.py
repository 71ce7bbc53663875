from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _documented_defaults_unless_prior(request, settings):  # type: ignore[no-untyped-def]
    """Most screening tests set features by hand and check the FunnyScore formula's ranking, so
    they run with the prior turned off; a test marked `l1_prior` runs with the shipped prior, as
    a deployment does."""
    if request.node.get_closest_marker("l1_prior") is None:
        settings.L1_PRIOR_PATH = "off"
