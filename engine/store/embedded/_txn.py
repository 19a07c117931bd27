"""Explicit transactions on an autocommit SQLite connection (``isolation_level=None``), as
the session file's state (``_sessions``) and its upkeep (``_upkeep``), a search's reads of its
candidates (``_routes``) and the mirrors' loads (``_load``) run them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[None]:
    """A write transaction that takes the file's lock at once (no upgrade deadlock between
    two processes merging one session), rolled back on any failure."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


@contextmanager
def read_snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """The statements inside see one committed state of the database (a read transaction;
    inside a write transaction already, that one), ended unless SQLite ended it already (as an
    interrupted statement can)."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")
