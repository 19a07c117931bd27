"""In-memory numpy mirrors of the embedded store's vectors.

Writers (the store's single database thread) append into preallocated buffers *beyond* the rows
a published view covers, then publish a new immutable ``EventView``/``EntityView`` by swapping
one reference. Readers grab the current view once and only ever look at its first ``n`` rows, so
they never see a half-written row and never need a lock. Deletions and re-vectorize build fresh
buffers instead of editing published rows.

Every stored vector is L2-normalised, so raw cosine is a dot product. The exact scan over these
views is ``_exact``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

A = TypeVar("A", bound=npt.NDArray[Any])

_MIN_CAPACITY = 64


def normalise(vector: npt.ArrayLike) -> F32:
    """A float32 copy scaled to unit length (a zero vector stays zero)."""
    v = np.array(vector, dtype=np.float32).reshape(-1)
    if not np.isfinite(v).all():
        v = np.nan_to_num(v, nan=0.0, posinf=0.0, neginf=0.0)
    norm = float(np.linalg.norm(v))
    if norm > 0.0 and np.isfinite(norm):
        v /= norm
    return v


def date_key(date: str | None) -> int:
    """``YYYY-MM-DD`` -> ``YYYYMMDD`` as an int (0 when absent or malformed)."""
    if not date:
        return 0
    digits = date[:10].replace("-", "")
    return int(digits) if len(digits) == 8 and digits.isdigit() else 0


def _grow(buf: A, need: int) -> A:
    """``buf`` itself when it holds ``need`` rows, else a copy with doubled capacity."""
    if need <= buf.shape[0]:
        return buf
    cap = max(_MIN_CAPACITY, buf.shape[0])
    while cap < need:
        cap *= 2
    out = np.zeros((cap, *buf.shape[1:]), dtype=buf.dtype)
    out[: buf.shape[0]] = buf
    return cast(A, out)


# ---------------------------------------------------------------- events and chunks


@dataclass(frozen=True, slots=True)
class EventView:
    """An immutable snapshot: event rows ``[0, n)`` and chunk rows ``[0, nc)``.

    Chunks are stored grouped by event row in ascending row order, so each event's chunks form
    one contiguous run (``gstart[g]`` .. next start); ``gevent[g]`` is that run's event row.
    ``seqs`` holds each row's SQLite ``seq`` (ascending: the ANN index's keys) and ``live`` is
    False for rows forgotten since the view was loaded (rows are never renumbered in place).
    """

    dims: int
    n: int
    ids: list[str]
    row_of: dict[str, int]
    vecs: F32
    has_vec: Mask
    dates: npt.NDArray[np.int32]
    seqs: I64
    live: Mask
    nc: int
    cvecs: F32
    crow: I64
    cidx: I64
    cstart: I64
    cend: I64
    ng: int
    gstart: I64
    gevent: I64

    def rows(self, ids: Iterable[str]) -> I64:
        """Rows of the given ids that this view covers (unknown ids are ignored)."""
        get, n = self.row_of.get, self.n
        found = (get(i, -1) for i in ids)
        arr = np.fromiter(found, dtype=np.int64)
        return arr[(arr >= 0) & (arr < n)]


def empty_event_view(dims: int) -> EventView:
    z64 = np.zeros(0, dtype=np.int64)
    return EventView(
        dims=dims,
        n=0,
        ids=[],
        row_of={},
        vecs=np.zeros((0, dims), dtype=np.float32),
        has_vec=np.zeros(0, dtype=np.bool_),
        dates=np.zeros(0, dtype=np.int32),
        seqs=z64,
        live=np.zeros(0, dtype=np.bool_),
        nc=0,
        cvecs=np.zeros((0, dims), dtype=np.float32),
        crow=z64,
        cidx=z64,
        cstart=z64,
        cend=z64,
        ng=0,
        gstart=z64,
        gevent=z64,
    )


@dataclass(slots=True)
class NewEvent:
    id: str
    create_date: str
    vector: F32 | None  # already normalised, or None
    chunks: list[tuple[int, int, int, F32]] = field(default_factory=list)  # idx, start, end, vec
    seq: int = 0  # the node's SQLite seq (set after the commit)


def append_events(view: EventView, events: Sequence[NewEvent]) -> EventView:
    """A view with ``events`` appended (their chunks too). Rows below ``view.n`` are untouched."""
    if not events:
        return view
    d = view.dims
    n, nc, ng = view.n, view.nc, view.ng
    chunk_total = sum(1 for e in events for c in e.chunks if c[3].shape[0] == d)
    vecs = _grow(view.vecs, n + len(events))
    has_vec = _grow(view.has_vec, n + len(events))
    dates = _grow(view.dates, n + len(events))
    seqs, live = _grow(view.seqs, n + len(events)), _grow(view.live, n + len(events))
    cvecs = _grow(view.cvecs, nc + chunk_total)
    crow, cidx = _grow(view.crow, nc + chunk_total), _grow(view.cidx, nc + chunk_total)
    cstart, cend = _grow(view.cstart, nc + chunk_total), _grow(view.cend, nc + chunk_total)
    gstart, gevent = _grow(view.gstart, ng + len(events)), _grow(view.gevent, ng + len(events))
    ids, row_of = view.ids, view.row_of
    for ev in events:
        row = n
        ok = ev.vector is not None and ev.vector.shape[0] == d
        vecs[row] = ev.vector if ev.vector is not None and ok else 0.0
        has_vec[row] = ok
        dates[row] = date_key(ev.create_date)
        seqs[row], live[row] = ev.seq, True
        first = True
        for idx, start, end, cv in ev.chunks:
            if cv.shape[0] != d:
                continue
            if first:
                gstart[ng], gevent[ng] = nc, row
                ng += 1
                first = False
            cvecs[nc], crow[nc], cidx[nc], cstart[nc], cend[nc] = cv, row, idx, start, end
            nc += 1
        ids.append(ev.id)  # readers only index below their own n
        row_of[ev.id] = row
        n += 1
    return EventView(
        d,
        n,
        ids,
        row_of,
        vecs,
        has_vec,
        dates,
        seqs,
        live,
        nc,
        cvecs,
        crow,
        cidx,
        cstart,
        cend,
        ng,
        gstart,
        gevent,
    )


def capacity(n: int) -> int:
    """Room for ``n`` rows plus a quarter more, so a reload is not followed by a regrow."""
    return max(_MIN_CAPACITY, n + n // 4)


def event_view_from_arrays(
    dims: int,
    ids: list[str],
    vecs: F32,
    has_vec: Mask,
    dates: npt.NDArray[np.int32],
    seqs: I64,
    chunk_rows: I64,
    chunk_cols: I64,
    cvecs: F32,
) -> EventView:
    """A view over preloaded buffers (``len(ids)`` rows used). ``chunk_rows`` holds each
    chunk's event row, ``chunk_cols`` its (chunk_index, start, end); chunks may come in any
    order and are sorted here into per-event runs (buffers are permuted in place)."""
    nc = chunk_rows.shape[0]
    order = np.lexsort((chunk_cols[:, 0], chunk_rows))
    if nc and not np.array_equal(order, np.arange(nc)):
        cvecs[:nc] = cvecs[order]
        chunk_rows, chunk_cols = chunk_rows[order], chunk_cols[order]
    cap = capacity(nc)
    crow, cidx = np.zeros(cap, np.int64), np.zeros(cap, np.int64)
    cstart, cend = np.zeros(cap, np.int64), np.zeros(cap, np.int64)
    crow[:nc], cidx[:nc] = chunk_rows, chunk_cols[:, 0]
    cstart[:nc], cend[:nc] = chunk_cols[:, 1], chunk_cols[:, 2]
    starts = np.flatnonzero(np.r_[True, chunk_rows[1:] != chunk_rows[:-1]]) if nc else crow[:0]
    ng = starts.shape[0]
    gstart, gevent = np.zeros(capacity(ng), np.int64), np.zeros(capacity(ng), np.int64)
    gstart[:ng], gevent[:ng] = starts, chunk_rows[starts]
    n = len(ids)
    row_of = {node_id: i for i, node_id in enumerate(ids)}
    live = np.zeros(vecs.shape[0], np.bool_)
    live[:n] = True
    return EventView(
        dims,
        n,
        ids,
        row_of,
        vecs,
        has_vec,
        dates,
        seqs,
        live,
        nc,
        cvecs,
        crow,
        cidx,
        cstart,
        cend,
        ng,
        gstart,
        gevent,
    )


def build_event_view(dims: int, events: Sequence[NewEvent]) -> EventView:
    """A fresh view (fresh buffers) holding exactly ``events`` in order."""
    return append_events(empty_event_view(dims), events)


# ---------------------------------------------------------------- entities


@dataclass(frozen=True, slots=True)
class EntityView:
    """Entity rows ``[0, n)`` of one label; ``seqs`` as in ``EventView``; a forgotten row
    keeps its place with ``has_vec`` False."""

    dims: int
    n: int
    ids: list[str]
    row_of: dict[str, int]
    vecs: F32
    has_vec: Mask
    seqs: I64


def empty_entity_view(dims: int) -> EntityView:
    return EntityView(
        dims,
        0,
        [],
        {},
        np.zeros((0, dims), dtype=np.float32),
        np.zeros(0, dtype=np.bool_),
        np.zeros(0, dtype=np.int64),
    )


def append_entities(
    view: EntityView,
    items: Sequence[tuple[str, F32 | None]],
    seq_of: Mapping[str, int] | None = None,
) -> EntityView:
    """A view with new entities appended; an id already present gets its vector set instead
    (a merged node that had none) -- written in place, which only flips ``has_vec`` on.
    ``seq_of`` gives the rows' SQLite seqs: an id whose seq differs from its row's is a new node
    reusing a forgotten id, and gets a row of its own."""
    if not items:
        return view
    d, n = view.dims, view.n

    def same_row(node_id: str) -> int | None:
        row = view.row_of.get(node_id)
        if row is None or seq_of is None or seq_of.get(node_id, 0) == view.seqs[row]:
            return row
        return None

    fresh = sum(1 for i, _ in items if same_row(i) is None)
    vecs = _grow(view.vecs, n + fresh)
    has_vec = _grow(view.has_vec, n + fresh)
    seqs = _grow(view.seqs, n + fresh)
    for node_id, vec in items:
        ok = vec is not None and vec.shape[0] == d
        row = same_row(node_id)
        if row is not None:
            if vec is not None and ok and not has_vec[row]:
                vecs[row] = vec
                has_vec[row] = True
            continue
        vecs[n] = vec if vec is not None and ok else 0.0
        has_vec[n] = ok
        seqs[n] = seq_of.get(node_id, 0) if seq_of is not None else 0
        view.ids.append(node_id)
        view.row_of[node_id] = n
        n += 1
    return EntityView(d, n, view.ids, view.row_of, vecs, has_vec, seqs)


def build_entity_view(
    dims: int, items: Sequence[tuple[str, F32 | None]], seq_of: Mapping[str, int] | None = None
) -> EntityView:
    return append_entities(empty_entity_view(dims), items, seq_of)


# ---------------------------------------------------------------- forgetting


def drop_event_rows(view: EventView, rows: Iterable[int]) -> EventView:
    """A view where ``rows`` are no longer live (their chunks go with them); nothing is
    renumbered, so the ANN index's keys stay valid. The flags are copied, not edited in place,
    so a search holding the older view finishes on what it saw."""
    live = view.live.copy()
    live[np.fromiter(rows, dtype=np.int64)] = False
    return replace(view, live=live)


def drop_entity_rows(view: EntityView, rows: Iterable[int]) -> EntityView:
    """An entity view where ``rows`` have no vector any more (see ``drop_event_rows``)."""
    has_vec = view.has_vec.copy()
    has_vec[np.fromiter(rows, dtype=np.int64)] = False
    return replace(view, has_vec=has_vec)
