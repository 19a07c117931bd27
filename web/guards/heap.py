"""The garbage collector kept from holding the event loop: ``collector_paused`` around the parse
of a large body, ``freeze_heap`` once start-up has loaded the long-lived heap, ``thaw_heap`` on
shutdown.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

# A body this large is parsed with the cyclic garbage collector kept out of it. Parsing JSON
# makes nothing but new, acyclic containers, which the collector can never free (reference
# counting frees them with the request), yet a 2.5 MB ``where`` tree (~65k tracked dicts) set
# off enough collections to triple the parse, each young collection promoting part of the tree
# towards the oldest generation and so bringing the next full collection closer. Paused, the
# tree costs one young collection after the parse (~20 ms here), and dies with its request.
# (The parse's objects are not promoted with ``gc.freeze()`` + ``gc.unfreeze()`` any more: the
# unfreeze would also give back everything ``freeze_heap`` froze.)
GC_FREE_PARSE_BYTES = 64 * 1024


@contextlib.contextmanager
def collector_paused(size: int) -> Iterator[None]:
    """Keeps the garbage collector out of the parse of a body of ``size`` bytes, if large."""
    if size < GC_FREE_PARSE_BYTES or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def freeze_heap() -> None:
    """Moves every object alive now (the embedding model, jieba's dictionary, the schema: the
    service's long-lived heap) out of the cyclic collector's sight, after collecting once.

    A full collection walks every tracked object, and one came every few seconds under load
    (requests leave small reference cycles behind): each held the event loop 130-350 ms here,
    most of it walking what start-up loaded and no collection can free. Frozen, it is skipped;
    what requests make is collected as before. ``thaw_heap`` undoes it on shutdown.
    """
    gc.collect()
    gc.freeze()


def thaw_heap() -> None:
    """Gives the frozen objects back to the collector (the service is shutting down)."""
    gc.unfreeze()
