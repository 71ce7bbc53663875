"""Pausing CPython's cyclic garbage collector while a bulk step builds millions of objects.

Reference counting frees every object that is no longer used; the cyclic collector only finds
groups of objects that refer to each other. It runs after every 700 allocations net of frees,
and its oldest generation walks every object the process holds: while an import builds a
million rows (each a few small objects that live until the rows are written) it walks a heap
that keeps growing, over and over. Reading the large benchmark set's million judgment lines
took 11.7 s with it running and 6.9 s with it paused (benchmarks/bench_judgment_parse.py). The
rows hold no cycles, so pausing it changes what memory is freed only for the few cycles Django
itself makes, which wait for the collector's first pass after the block.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_collector_paused() -> Iterator[None]:
    """Run the block with the cyclic collector off, then restore it.

    Process-wide: in a threaded server another thread's cycles wait too, until the block ends.
    Nested or overlapping blocks leave it as the outermost one found it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # No collection here: the block's results are often still held by its caller, and a
            # pass over them (a second for a million rows) would find nothing. The collector's
            # next pass frees whatever cycles the block left.
            gc.enable()
