"""One HNSW index over a prefix of one vector mirror matrix (``usearch``, int8, inner product).

Keys are the nodes' SQLite ``seq`` numbers: the summary index has one per event, the chunk
index one per chunk under its event's key (``multi``), each entity label's index one per
entity. ``Hnsw`` wraps a usearch index with the lock that serialises its searches and edits;
the functions here map mirror rows to keys and vectors and add them in batches
(``add_rows``), and find the first row an index lacks (``first_missing``).

Kept apart from ``_ann``, which keeps the set of indexes in step with the mirrors and the
database (when to build, catch up, thaw, save), because one index over its rows is a unit of
its own: ``_ann``, the saved files (``_ann_files``) and the search path (``_search``) use it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mnemoql.engine.store.embedded._index import F32, EntityView, EventView

Kind = str  # "summary", "chunk", or an entity label
KINDS: tuple[Kind, ...] = ("summary", "chunk", "Person", "Concept", "Location")
# M 32: at 1M text-like events M 16 kept 0.986 of the exact top 40 among 400 fetched, M 32
# 0.997, at the same search time (bench/results/ann_connectivity.md; docs/DECISIONS.md,
# "Connectivity"). efConstruction 128: with 64 the dense regions of a 1M graph had holes (2.3%
# of vectors not found from themselves at the default beam, one in 200 queries kept only
# 0.925 of its top 40); 128 kept 1.000 of every query's top 40 (docs/DECISIONS.md, "Holes in
# the graph")
CONNECTIVITY, EXPANSION_ADD = 32, 128
# A saved index built with other graph parameters is rebuilt in the background after open: a
# graph keeps the quality it was built with, and M 16 / efConstruction 64 graphs missed events
# at 1M. Until the new one is in, the old file serves (mapped, never edited; exact rescoring of
# its candidates as always, the rows it lacks scanned exactly): a 1M-event memory would
# otherwise scan every vector for the ~10 minutes of the rebuild.
GRAPH = {"connectivity": CONNECTIVITY, "expansion_add": EXPANSION_ADD}


@dataclass(frozen=True, slots=True)
class Beams:
    """The search beam per key fetched (usearch's ``expansion_search`` over the fetch), by
    index. x2 everywhere was chosen when a search fetched 400 keys from one index
    (docs/DECISIONS.md, "Build speed"); a search now fetches 120 from each of two and rescores
    their union. On 1,000 tune queries at 100k, x1.5 on both loses 0.06 points of the exact
    route pages' members against x2 (x1.25: 0.12, past the 0.1 allowed), and every tune query of
    ``bench.search_latency`` still delivers the exact scan's 4 events. Summary x1 / chunk x1.5
    (the summary index's search is on the search's path, the chunk index's on a side thread)
    passes that rule too (0.09) and is 0.66 ms faster, but delivered the exact scan's 4 events
    in 99.5% of the held-out queries, the floor itself: not the default
    (bench/results/ann_beam.md; docs/DECISIONS.md, "The search beam")."""

    summary: float = 1.5
    chunk: float = 1.5
    entity: float = 2.0  # the entity indexes' (small fetches): not measured, as before

    def of(self, kind: str) -> float:
        return self.summary if kind == "summary" else self.chunk if kind == "chunk" else self.entity

    @classmethod
    def parse(cls, text: str) -> Beams:
        """``"1.5"`` (both event indexes) or ``"1/1.5"`` (summary / chunk); entities keep
        theirs."""
        summary, _, chunk = text.partition("/")
        a = float(summary)
        b = float(chunk) if chunk else a
        if a <= 0 or b <= 0:
            raise ValueError(f"beams must be positive: {text!r}")
        return cls(a, b)

    def __str__(self) -> str:
        return f"{self.summary:g}/{self.chunk:g}"


BEAMS = Beams()  # benches replace it to compare beams
BATCH = 2048  # rows added per hold of a searched index's lock (searches wait at most one)
LOCK_WAIT_S = 0.25  # a search that cannot get the index this fast scans exactly instead


def new_index(dims: int, multi: bool) -> Any:
    from usearch.index import Index

    return Index(
        ndim=dims,
        metric="ip",
        dtype="i8",
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        multi=multi,
    )


class Hnsw:
    """One usearch index over a prefix of one mirror matrix, with the lock that serialises
    its searches and edits. ``generation`` is the mirror generation its rows belong to (-1
    while the mirrors are being reloaded), ``epoch`` the vector epoch of its vectors.

    A *frozen* index is a saved file memory-mapped read-only (``Index.restore(view=True)``,
    no time at open): it only searches. Nothing edits it (usearch crashes on that): keys to
    remove and entity rows filled in meanwhile are kept in ``removals`` / ``refill``, rows
    beyond ``covered`` wait (the exact scan covers them), until ``AnnIndexes._thaw`` swaps in
    a mutable copy on the background thread and applies them: once more than
    ``FROZEN_TAIL_ROWS`` rows wait (or an entity row was filled in), so a memory that is only
    read, or written a little, keeps its mapped file. ``graph`` holds the parameters
    it was built with; a *stale* one (other than ``GRAPH``) stays frozen and serves until a
    fresh build replaces it."""

    def __init__(
        self,
        kind: Kind,
        index: Any,
        generation: int,
        epoch: str,
        covered: int = 0,
        frozen: bool = False,
        graph: Mapping[str, int] = GRAPH,
    ) -> None:
        self.kind = kind
        self.index = index
        self.generation = generation
        self.epoch = epoch
        self.covered = covered
        self.lock = threading.Lock()
        self.frozen = frozen
        self.removals: list[npt.NDArray[np.uint64]] = []
        self.refill: list[int] = []
        self.source: tuple[Path, tuple[int, int, int]] | None = None  # the mapped file
        self.graph = dict(graph)
        # every forget log record up to this number has left the index (or waits in
        # ``removals``); ``behind``: the log was pruned past it, so a key may linger
        self.forgotten = 0
        self.behind = False

    @property
    def stale(self) -> bool:
        """Built with other graph parameters than this version builds, or behind the pruned
        forget log: it serves until a fresh build replaces it."""
        return self.graph != GRAPH or self.behind

    def remove(self, keys: npt.NDArray[np.uint64]) -> None:
        """Remove ``keys`` (absent ones ignored), or note them while frozen; under ``lock``."""
        if not keys.size:
            return
        if self.frozen:
            self.removals.append(keys)
            return
        remove_keys(self.index, keys)

    def pending_removals(self) -> npt.NDArray[np.uint64]:
        if not self.removals:
            return np.zeros(0, dtype=np.uint64)
        return np.unique(np.concatenate(self.removals))

    def search(self, query: F32, count: int) -> npt.NDArray[np.uint64] | None:
        """Up to ``count`` keys, best first (several per event in the chunk index); None when
        the index is busy being saved (the caller scans exactly)."""
        if not self.lock.acquire(timeout=LOCK_WAIT_S):
            return None
        try:
            self.index.expansion_search = max(64, int(BEAMS.of(self.kind) * count))
            found = self.index.search(query, count, threads=1)
            return np.asarray(found.keys, dtype=np.uint64)
        finally:
            self.lock.release()


def matrix_rows(view: EventView | EntityView, kind: Kind) -> int:
    """How many rows the kind's matrix has in this view."""
    if kind == "chunk":
        assert isinstance(view, EventView)
        return view.nc
    return view.n


def _kept(
    view: EventView | EntityView, kind: Kind, start: int, end: int
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]:
    """Keys of rows ``[start, end)`` and which of them are worth indexing (a vector, live)."""
    if kind == "chunk":
        assert isinstance(view, EventView)
        events = view.crow[start:end]
        return view.seqs[events].astype(np.uint64), view.live[events]
    keep = view.has_vec[start:end].copy()
    if isinstance(view, EventView):
        keep &= view.live[start:end]
    return view.seqs[start:end].astype(np.uint64), keep


def _keys_and_vectors(
    view: EventView | EntityView, kind: Kind, start: int, end: int
) -> tuple[npt.NDArray[np.uint64], F32]:
    """Keys and vectors of rows ``[start, end)`` worth indexing (with a vector, not dropped)."""
    keys, keep = _kept(view, kind, start, end)
    matrix = view.cvecs if kind == "chunk" else view.vecs  # type: ignore[union-attr]
    return keys[keep], matrix[start:end][keep]


def _batch_end(view: EventView | EntityView, kind: Kind, start: int, end: int, size: int) -> int:
    """The end of the next batch of about ``size`` rows, never splitting one event's chunks."""
    stop = min(end, start + size)
    if kind != "chunk" or stop >= end:
        return stop
    assert isinstance(view, EventView)
    crow = view.crow
    while stop < end and crow[stop] == crow[stop - 1]:
        stop += 1
    return stop


def add_rows(
    h: Hnsw,
    view: EventView | EntityView,
    gen: int,
    end: int,
    threads: int = 1,
    batch: int = BATCH,
    halt: Callable[[], bool] | None = None,
) -> None:
    """Index rows ``[h.covered, end)`` of ``view`` (mirror generation ``gen``) in batches,
    each under the lock (keys already present are skipped, so a reloaded index can be caught
    up from the first row it lacks, and two threads catching up the same index never add a row
    twice). Stops when the index moved to another generation, or between batches when ``halt``
    says so (the store is closing: a 1M-event build would otherwise hold the close for its
    whole length); ``covered`` counts its rows."""
    while True:
        if halt is not None and halt():
            return
        with h.lock:
            start = h.covered
            if h.generation != gen or h.frozen:
                return
            if start >= end:
                return
            stop = _batch_end(view, h.kind, start, end, batch)
            keys, vecs = _keys_and_vectors(view, h.kind, start, stop)
            if keys.size:
                fresh = ~np.asarray(h.index.contains(keys), dtype=np.bool_).reshape(-1)
                if fresh.any():
                    h.index.add(keys[fresh], vecs[fresh], threads=threads)
            h.covered = stop


def remove_keys(index: Any, keys: npt.NDArray[np.uint64]) -> None:
    if keys.size:
        present = np.asarray(index.contains(keys), dtype=np.bool_).reshape(-1)
        if present.any():
            index.remove(keys[present])


def first_missing(
    index: Any,
    view: EventView | EntityView,
    kind: Kind,
    absent: npt.NDArray[np.uint64] | None = None,
    bisect: bool = False,
) -> int:
    """The first mirror row whose key the index lacks, or holds only among ``absent`` (keys
    still to be removed from a frozen index): the rows to catch up start there.

    ``bisect``: assume the index holds a prefix of the rows (it was built and caught up in
    row order) and find its end with a binary search, instead of asking for every key (2.6M
    keys at 1M events: seconds of the open). Only for event kinds: entity vectors filled in
    place can leave holes. ``_thaw`` checks every key afterwards."""
    rows = matrix_rows(view, kind)
    if rows == 0:
        return 0
    keys, keep = _kept(view, kind, 0, rows)
    keys = keys[keep]
    if keys.size == 0:
        return rows
    if bisect and kind in ("summary", "chunk"):
        lo, hi = 0, int(keys.size)
        while lo < hi:
            mid = (lo + hi) // 2
            if bool(index.contains(int(keys[mid]))):
                lo = mid + 1
            else:
                hi = mid
        first = lo
        if absent is not None and absent.size:
            hit = np.flatnonzero(np.isin(keys[:first], absent))
            first = int(hit[0]) if hit.size else first
        if first >= keys.size:
            return rows
        first_key = keys[first]
    else:
        present = np.asarray(index.contains(keys), dtype=np.bool_).reshape(-1)
        if absent is not None and absent.size:
            present &= ~np.isin(keys, absent)
        if present.all():
            return rows
        first_key = keys[int(np.argmin(present))]
    if kind == "chunk":
        assert isinstance(view, EventView)
        event_row = int(np.searchsorted(view.seqs[: view.n], first_key))
        return int(np.searchsorted(view.crow[: view.nc], event_row))
    return int(np.searchsorted(view.seqs[: view.n], first_key))
