"""The garbage collector's pace while a catalog is built.

A build keeps tens of thousands of objects alive (every store's summary, the
STAC tree) while it makes millions of short-lived ones (documents, links,
JSON). At CPython's default pace, a collection of the youngest objects every
700 allocations, the collector's passes took a fifth to a third of the time
of a 1,000-product build's writing (benchmarks/bench_catalog_s3.py). Type
checkers and compilers that build large object graphs in Python raise the
same threshold for the same reason.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: allocations between collections of the youngest generation while a catalog is built (CPython's default: 700)
BUILD_THRESHOLD = 50_000


@contextmanager
def fewer_collections(threshold: int = BUILD_THRESHOLD) -> Iterator[None]:
    """Inside the block, the youngest generation is collected every ``threshold`` allocations (never more often
    than it was); the previous thresholds come back on the way out. Older generations keep their pace, so cyclic
    garbage is still collected, in larger steps. Usable as a decorator."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], threshold), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
