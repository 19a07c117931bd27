"""The database's vector epoch and forget log: what a saved copy of its vectors may trust.

Two SQLite tables, ``ann_state`` and ``ann_forgotten``, written in the same transactions as
the nodes. Everything kept outside the database that is derived from its vectors (the ANN
indexes of ``_ann``, the mirror files of ``_mirror``, another process's mirrors that
``_load.advance`` catches up) checks them before it is used. Kept apart from ``_ann``, which
keeps the indexes in step with the mirrors and only reads and writes these tables through
the functions here, as ``_db`` (saves, forgets, re-vectorize and restore) and ``_load`` do.

Vector epoch:
    A token in ``ann_state`` (key ``epoch``), changed before every re-vectorize and restore
    (``new_epoch``). Saved indexes and mirrors name the epoch of their vectors and are used
    only while it is the database's.
Bounded forget log:
    Forgetting records each deleted node's seq in ``ann_forgotten`` (``record_forgotten``).
    The log numbers its entries (``n``, counted in ``ann_state`` as ``forgotten_n``) and
    keeps the newest ``FORGOTTEN_KEEP`` (pruned once it holds a quarter more;
    ``forgotten_pruned`` is the highest number dropped). Whatever read the log at position
    ``m`` (a process's mirrors, a saved mirror file or index) can follow it only while
    ``m >= forgotten_pruned``: mirrors further behind load in full (``_load.advance``), a saved
    index further behind serves as *stale* until a fresh build replaces it (its candidates
    are rescored from the mirrors, where a forgotten node has no live row).
"""

from __future__ import annotations

import secrets
import sqlite3

import numpy as np
import numpy.typing as npt

# forget records kept in ann_forgotten (at most a quarter more before the oldest are pruned)
FORGOTTEN_KEEP = 50_000

DDL = """
CREATE TABLE IF NOT EXISTS ann_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ann_forgotten (seq INTEGER PRIMARY KEY, n INTEGER);
"""


def ensure_tables(conn: sqlite3.Connection) -> str:
    """Create the bookkeeping tables if missing; the database's vector epoch. Statement by
    statement (``executescript`` would commit a transaction in progress: a catch-up inside a
    save's transaction comes here)."""
    for statement in DDL.strip().split(";"):
        if statement.strip():
            conn.execute(statement)
    if "n" not in {r[1] for r in conn.execute("PRAGMA table_info(ann_forgotten)")}:
        conn.execute("ALTER TABLE ann_forgotten ADD COLUMN n INTEGER")  # older files: NULL
    conn.execute("CREATE INDEX IF NOT EXISTS ann_forgotten_n ON ann_forgotten (n)")
    row = conn.execute("SELECT value FROM ann_state WHERE key = 'epoch'").fetchone()
    if row is not None:
        return str(row[0])
    epoch = secrets.token_hex(8)
    conn.execute("INSERT INTO ann_state (key, value) VALUES ('epoch', ?)", (epoch,))
    return epoch


def new_epoch(conn: sqlite3.Connection) -> str:
    """Mark every saved index stale (call *before* the vectors change: a crash between the
    two costs a rebuild, never a stale index). Forgotten seqs no longer matter after it."""
    epoch = secrets.token_hex(8)
    conn.execute(
        "INSERT INTO ann_state (key, value) VALUES ('epoch', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (epoch,),
    )
    conn.execute("DELETE FROM ann_forgotten")
    return epoch


def epoch_of(conn: sqlite3.Connection) -> str:
    row = conn.execute("SELECT value FROM ann_state WHERE key = 'epoch'").fetchone()
    return "" if row is None else str(row[0])


def record_forgotten(conn: sqlite3.Connection, seqs: list[int]) -> None:
    """Inside the forget transaction: these keys must leave any saved index. Each gets the
    next log number (a seq forgotten again, after the next node was given it, moves up);
    the oldest records go once the log holds a quarter more than ``FORGOTTEN_KEEP``."""
    if not seqs:
        return
    last = _state_int(conn, "forgotten_n")
    conn.executemany(
        "INSERT INTO ann_forgotten (seq, n) VALUES (?, ?) "
        "ON CONFLICT (seq) DO UPDATE SET n = excluded.n",
        [(s, last + k + 1) for k, s in enumerate(seqs)],
    )
    last += len(seqs)
    _set_state(conn, "forgotten_n", last)
    keep = max(FORGOTTEN_KEEP, 1)
    if int(conn.execute("SELECT COUNT(*) FROM ann_forgotten").fetchone()[0]) > keep + keep // 4:
        horizon = last - keep
        conn.execute("DELETE FROM ann_forgotten WHERE n IS NULL OR n <= ?", (horizon,))
        # at least 1: records from before the numbering (NULL) are gone too
        pruned = max(_state_int(conn, "forgotten_pruned"), horizon, 1)
        _set_state(conn, "forgotten_pruned", pruned)


def forgotten_mark(conn: sqlite3.Connection) -> tuple[int, int]:
    """(the log's position: the number of its newest record, the highest number pruned)."""
    return _state_int(conn, "forgotten_n"), _state_int(conn, "forgotten_pruned")


def _state_int(conn: sqlite3.Connection, key: str) -> int:
    row = conn.execute("SELECT value FROM ann_state WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row is not None else 0


def _set_state(conn: sqlite3.Connection, key: str, value: int) -> None:
    conn.execute(
        "INSERT INTO ann_state (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, str(value)),
    )


def forgotten(conn: sqlite3.Connection) -> npt.NDArray[np.uint64]:
    rows = conn.execute("SELECT seq FROM ann_forgotten").fetchall()
    return np.asarray([r[0] for r in rows], dtype=np.uint64)
