"""Loading the embedded store's vector mirrors from SQLite, fast enough for a million events.

Rows are read in the tables' physical order (a sequential scan, not a walk of the ``seq``
index that fetches every row out of order) in blocks; each block's vectors are joined into
one buffer and copied into the mirror at once instead of row by row. Events are put in
``seq`` order afterwards (they nearly always are already). Measured in
bench/results/search_latency.md ("open").
"""

from __future__ import annotations

import sqlite3

import numpy as np

from engine.models import EntityLabel
from engine.store._embedded_index import (
    EntityView,
    EventView,
    build_entity_view,
    capacity,
    date_key,
    event_view_from_arrays,
)
from engine.store._embedded_schema import blob_vec

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
