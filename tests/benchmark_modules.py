"""Benchmarks' and simulations' modules, loaded from their files for the tests that check them
(benchmarks/ is a folder of scripts, not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def benchmark_module(relative: str) -> ModuleType:
    """The module of ``benchmarks/<relative>``, registered under its file's stem (its
    dataclasses need their module in ``sys.modules``)."""
    path = BENCHMARKS / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
