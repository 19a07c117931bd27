"""Loading the embedded store's vector mirrors from SQLite, fast enough for a million events.

Rows are read in the tables' physical order (a sequential scan, not a walk of the ``seq``
index that fetches every row out of order) in blocks; each block's vectors are joined into
one buffer and copied into the mirror at once instead of row by row. Events are put in
``seq`` order afterwards (they nearly always are already). Measured in
bench/results/search_latency.md ("open").
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

import numpy as np

from mnemoql.engine.models import ENTITY_LABELS, EntityLabel
from mnemoql.engine.store.embedded._epoch import epoch_of, forgotten_mark
from mnemoql.engine.store.embedded._index import (
    F32,
    I64,
    EntityView,
    EventView,
    NewEvent,
    append_entities,
    append_events,
    build_entity_view,
    capacity,
    date_key,
    drop_entity_rows,
    drop_event_rows,
    event_view_from_arrays,
)
from mnemoql.engine.store.embedded._query import IN_SET, json_set
from mnemoql.engine.store.embedded._schema import blob_vec
from mnemoql.engine.store.embedded._txn import read_snapshot

BLOCK = 20_000


def _fill(out: np.ndarray, start: int, blobs: list[bytes | None], width: int) -> np.ndarray:
    """Copy a block of vector BLOBs into ``out[start:]``; a mask of the rows that had one."""
    ok = np.fromiter((b is not None and len(b) == width for b in blobs), np.bool_, len(blobs))
    if ok.all():
        flat = np.frombuffer(b"".join(blobs), np.float32)  # type: ignore[arg-type]
        out[start : start + len(blobs)] = flat.reshape(len(blobs), -1)
    else:
        for k, b in enumerate(blobs):
            if ok[k] and b is not None:
                out[start + k] = np.frombuffer(b, np.float32)
    return ok


def load_events(conn: sqlite3.Connection, dims: int) -> EventView:
    """The event + chunk mirror of the whole database."""
    width = 4 * dims
    n = conn.execute("SELECT COUNT(*) FROM nodes WHERE label = 'Event'").fetchone()[0]
    cap = capacity(n)
    vecs = np.zeros((cap, dims), np.float32)
    has_vec = np.zeros(cap, np.bool_)
    dates = np.zeros(cap, np.int32)
    seqs = np.zeros(cap, np.int64)
    ids: list[str] = []
    cur = conn.execute("SELECT seq, id, create_date, embedding FROM nodes WHERE label = 'Event'")
    i = 0
    while block := cur.fetchmany(BLOCK):
        m = len(block)
        seqs[i : i + m] = [r[0] for r in block]
        ids += [r[1] for r in block]
        dates[i : i + m] = [date_key(r[2]) for r in block]
        has_vec[i : i + m] = _fill(vecs, i, [r[3] for r in block], width)
        i += m
    n = i
    if n > 1 and not bool(np.all(seqs[1:n] > seqs[: n - 1])):  # rare: put rows in seq order
        order = np.argsort(seqs[:n], kind="stable")
        vecs[:n], has_vec[:n] = vecs[:n][order], has_vec[:n][order]
        dates[:n], seqs[:n] = dates[:n][order], seqs[:n][order]
        ids = [ids[k] for k in order.tolist()]
    row_of = {node_id: k for k, node_id in enumerate(ids)}
    nc = conn.execute(
        "SELECT COUNT(*) FROM chunks WHERE length(embedding) = ?", (width,)
    ).fetchone()[0]
    cvecs = np.zeros((capacity(nc), dims), np.float32)
    chunk_rows = np.zeros(nc, np.int64)
    chunk_cols = np.zeros((nc, 3), np.int64)
    cur = conn.execute(
        "SELECT event_id, chunk_index, start_pos, end_pos, embedding FROM chunks "
        "WHERE length(embedding) = ?",
        (width,),
    )
    j = 0
    while block := cur.fetchmany(BLOCK):
        m = len(block)
        chunk_rows[j : j + m] = [row_of[r[0]] for r in block]
        chunk_cols[j : j + m] = [(r[1], r[2], r[3]) for r in block]
        _fill(cvecs, j, [r[4] for r in block], width)
        j += m
    return event_view_from_arrays(
        dims, ids, vecs, has_vec, dates, seqs, chunk_rows[:j], chunk_cols[:j], cvecs
    )


def load_entities(conn: sqlite3.Connection, label: EntityLabel, dims: int) -> EntityView:
    rows = conn.execute(
        "SELECT id, embedding, seq FROM nodes WHERE label = ? ORDER BY seq", (label,)
    ).fetchall()
    seq_of = {i: q for i, _, q in rows}
    return build_entity_view(dims, [(i, blob_vec(b)) for i, b, _ in rows], seq_of)


# ---------------------------------------------------------------- snapshots and catch-ups


def max_seq(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM nodes").fetchone()[0])


@dataclass(slots=True)
class Loaded:
    """Mirrors and what they hold: every node with ``seq <= upto`` of vector epoch ``epoch``
    (a forgotten one as a dead row). ``rows`` counts the rows read from SQLite (tests and
    benchmarks); ``dropped`` the seqs marked dead and ``filled`` the entity rows given a vector
    in place, per ANN kind; ``forgotten`` the position of the forget log they follow from
    (``_epoch.forgotten_mark``)."""

    events: EventView
    entities: dict[EntityLabel, EntityView]
    upto: int
    epoch: str
    rows: int = 0
    dropped: dict[str, I64] = field(default_factory=dict)
    filled: dict[str, list[int]] = field(default_factory=dict)
    forgotten: int = 0


def load_all(conn: sqlite3.Connection, dims: int) -> Loaded:
    """Every mirror from the database, in one read snapshot."""
    with read_snapshot(conn):
        epoch, upto, (position, _) = epoch_of(conn), max_seq(conn), forgotten_mark(conn)
        events = load_events(conn, dims)
        entities = {label: load_entities(conn, label, dims) for label in ENTITY_LABELS}
    rows = events.n + events.nc + sum(v.n for v in entities.values())
    return Loaded(events, entities, upto, epoch, rows, forgotten=position)


def _reused(conn: sqlite3.Connection, upto: int, got: Loaded) -> bool:
    """True when a node holds the seq of a forgotten one (the newest node forgotten, the next
    one given its seq) and the mirrors do not hold it as a live row: its row would sit among
    the old ones, so only a full load places it."""
    # CROSS JOIN keeps the (short) forgotten list as the outer loop: with a plain JOIN SQLite
    # walked the nodes' seq index instead, 25 ms at 100k events on every catch-up with another
    # writer, two thirds of a save's time beside a second writing process (issue 30)
    rows = conn.execute(
        "SELECT f.seq, n.id, n.label FROM ann_forgotten f CROSS JOIN nodes n ON n.seq = f.seq "
        "WHERE f.seq <= ?",
        (upto,),
    )
    for seq, node_id, label in rows:
        view: EventView | EntityView = got.events if label == "Event" else got.entities[label]
        row = view.row_of.get(node_id)
        if row is None or row >= view.n or int(view.seqs[row]) != seq:
            return True
        if isinstance(view, EventView) and not view.live[row]:
            return True
    return False


def _rows_with(seqs: I64, n: int, dead: I64) -> I64:
    """Rows ``< n`` whose seq is one of ``dead`` (``seqs`` ascending; a seq may repeat)."""
    if dead.size == 0 or n == 0:
        return np.zeros(0, np.int64)
    lo = np.searchsorted(seqs[:n], dead, side="left")
    hi = np.searchsorted(seqs[:n], dead, side="right")
    hit = hi > lo
    if not hit.any():
        return np.zeros(0, np.int64)
    return np.concatenate([np.arange(a, b) for a, b in zip(lo[hit], hi[hit], strict=True)])


def _new_events(conn: sqlite3.Connection, dims: int, upto: int) -> list[NewEvent]:
    width = 4 * dims
    chunks: dict[str, list[tuple[int, int, int, F32]]] = {}
    for event_id, idx, start, end, blob in conn.execute(
        "SELECT c.event_id, c.chunk_index, c.start_pos, c.end_pos, c.embedding FROM nodes n "
        "JOIN chunks c ON c.event_id = n.id WHERE n.label = 'Event' AND n.seq > ? "
        "AND length(c.embedding) = ? ORDER BY n.seq, c.chunk_index",
        (upto, width),
    ):
        chunks.setdefault(event_id, []).append((idx, start, end, np.frombuffer(blob, np.float32)))
    out = []
    for seq, node_id, date, blob in conn.execute(
        "SELECT seq, id, create_date, embedding FROM nodes WHERE label = 'Event' AND seq > ? "
        "ORDER BY seq",
        (upto,),
    ):
        vec = np.frombuffer(blob, np.float32) if blob is not None and len(blob) == width else None
        out.append(NewEvent(node_id, date or "", vec, chunks.get(node_id, []), int(seq)))
    return out


def _advance_entities(
    conn: sqlite3.Connection, view: EntityView, label: EntityLabel, old: int, dead: I64
) -> tuple[EntityView, I64, list[int], int]:
    """New nodes appended, forgotten ones without their vector, and vectors another writer
    gave a node that had none (a merge fills one in place: ``_merge_entity``)."""
    rows = _rows_with(view.seqs, view.n, dead)
    rows = rows[view.has_vec[rows]]
    if rows.size:
        view = drop_entity_rows(view, rows.tolist())
    bare = [view.ids[r] for r in np.flatnonzero(~view.has_vec[: view.n]).tolist()]
    items: list[tuple[str, F32 | None]] = []
    seq_of: dict[str, int] = {}
    filled: list[int] = []
    if bare:
        for node_id, blob, seq in conn.execute(
            "SELECT id, embedding, seq FROM nodes WHERE label = ? AND seq <= ? "
            f"AND embedding IS NOT NULL AND id IN {IN_SET}",
            (label, old, json_set(bare)),
        ):
            row = view.row_of.get(node_id)
            if row is not None and int(view.seqs[row]) == seq:
                items.append((node_id, blob_vec(blob)))
                seq_of[node_id] = int(seq)
                filled.append(row)
    for node_id, blob, seq in conn.execute(
        "SELECT id, embedding, seq FROM nodes WHERE label = ? AND seq > ? ORDER BY seq",
        (label, old),
    ):
        items.append((node_id, blob_vec(blob)))
        seq_of[node_id] = int(seq)
    dropped = view.seqs[rows] if rows.size else np.zeros(0, np.int64)
    return append_entities(view, items, seq_of), dropped, filled, len(items)


def advance(conn: sqlite3.Connection, got: Loaded) -> Loaded | None:
    """The mirrors brought up to the database's committed state by reading only what changed
    since ``got.upto``: nodes above it (and their chunks) appended, nodes listed in
    ``ann_forgotten`` marked dead, entity vectors filled in. None when only a full load can
    (the vector epoch changed: re-vectorize or restore; a forgotten seq was reused; the forget
    log was pruned past ``got.forgotten``)."""
    dims = got.events.dims
    with read_snapshot(conn):
        position, pruned = forgotten_mark(conn)
        if got.forgotten < pruned:
            return None
        if epoch_of(conn) != got.epoch or _reused(conn, got.upto, got):
            return None
        dead = np.asarray(
            [
                r[0]
                for r in conn.execute(
                    "SELECT seq FROM ann_forgotten f WHERE seq <= ? AND NOT EXISTS "
                    "(SELECT 1 FROM nodes n WHERE n.seq = f.seq)",
                    (got.upto,),
                )
            ],
            np.int64,
        )
        upto = max_seq(conn)
        events = got.events
        rows = _rows_with(events.seqs, events.n, dead)
        rows = rows[events.live[rows]]
        dropped: dict[str, I64] = {}
        if rows.size:
            events = drop_event_rows(events, rows.tolist())
            dropped["summary"] = dropped["chunk"] = got.events.seqs[rows]
        fresh = _new_events(conn, dims, got.upto) if upto > got.upto else []
        count = len(fresh) + sum(len(e.chunks) for e in fresh)
        events = append_events(events, fresh)
        entities = dict(got.entities)
        filled: dict[str, list[int]] = {}
        for label in ENTITY_LABELS:
            entities[label], gone, rows_filled, read = _advance_entities(
                conn, entities[label], label, got.upto, dead
            )
            count += read
            if gone.size:
                dropped[label] = gone
            if rows_filled:
                filled[label] = rows_filled
    return Loaded(
        events, entities, max(upto, got.upto), got.epoch, count, dropped, filled, position
    )
