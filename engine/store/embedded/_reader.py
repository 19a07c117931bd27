"""A second, read-only SQLite connection for the list queries a client can make costly.

Everything else of an embedded space runs on its one database thread (``Database``), so a
client listing ``events(where: ...)`` with 100 ``content`` conditions (the cap) scans every
event twice (the count and the page) while every search waits behind it: other clients' p95
went to ~2.9x their quiet figure in ``python -m bench.hostile``. ``list_nodes`` reads nothing
but committed rows (no vector mirrors, no ANN index), so it runs here instead, on a thread of
its own: SQLite in WAL mode lets this connection read while the writer writes, and one read
transaction around the count and the page keeps them from two snapshots.

``OwnThread`` is the interrupt protocol both connections share: a caller that stops waiting
(a request past its deadline) interrupts the statement of its own call, never a later one.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.models import NODE_LABELS, NodeLabel, NodePage, Page, SortSpec, Where
from mnemoql.engine.store.embedded._query import check_page, compile_where, flip, sort_key
from mnemoql.engine.store.embedded._schema import NODE_COLS, row_node

T = TypeVar("T")


class OwnThread:
    """A SQLite connection used from one thread, whose running call a caller that gives up can
    interrupt without hitting a later one. ``Database`` and ``Reader`` are both this."""

    def __init__(self, conn: sqlite3.Connection | None = None) -> None:
        self._conn: sqlite3.Connection | None = conn
        self._running: object | None = None  # the ticket of the call running on the thread
        self._lock = threading.Lock()
        self.interrupted = 0  # statements stopped because their caller gave up

    def run(self, ticket: object, fn: Callable[[], T]) -> T:
        """``fn()`` on the connection's thread under ``ticket`` (see ``interrupt``)."""
        with self._lock:
            self._running = ticket
        try:
            return fn()
        finally:
            with self._lock:
                self._running = None

    def interrupt(self, ticket: object) -> None:
        """Stop the statement of ``ticket``'s call if it is the one running. Called from the
        event loop's thread (``Connection.interrupt`` is safe from any thread); the lock makes
        sure no later call is hit: SQLite aborts only statements running now."""
        with self._lock:
            if self._running is ticket and self._conn is not None:
                self._conn.interrupt()
                self.interrupted += 1

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def list_nodes(
    conn: sqlite3.Connection, label: NodeLabel, where: Where | None, sort: SortSpec, page: Page
) -> NodePage:
    """One page of ``label`` nodes matching ``where``, in ``sort`` order, with the total."""
    if label not in NODE_LABELS:
        raise InvalidInput(
            f"unknown label {label!r}; use one of {', '.join(NODE_LABELS)}",
            zh=f"未知标签 {label!r}，可用：{', '.join(NODE_LABELS)}",
        )
    key, direction = sort_key(label, sort)
    cond, params = compile_where(label, where)
    check_page(page)
    total = conn.execute(
        f"SELECT COUNT(*) FROM nodes WHERE label = ? AND ({cond})", [label, *params]
    ).fetchone()[0]
    sql = f"SELECT {NODE_COLS}, {key} FROM nodes WHERE label = ? AND ({cond})"
    args: list[Any] = [label, *params]
    order = flip(direction) if page.backward else direction  # backward: walk back, reverse
    if page.position is not None:
        sql += f" AND ({key}, id) {'>' if order == 'ASC' else '<'} (?, ?)"
        args += list(page.position)
    sql += f" ORDER BY {key} {order}, id {order} LIMIT ?"
    rows = conn.execute(sql, [*args, page.size + 1]).fetchall()
    rows, more = rows[: page.size], len(rows) > page.size
    if page.backward:
        rows.reverse()
    return NodePage(
        nodes=[row_node(r) for r in rows],
        has_next=more and not page.backward,
        positions=[(r[-1], r[1]) for r in rows],
        total=int(total),
        has_previous=more and page.backward,
    )


class Reader(OwnThread):
    """The read-only connection; every method runs on the reader's own thread."""

    def __init__(self, file: Path) -> None:
        super().__init__()
        self.file = file

    def open(self) -> None:
        # opened after the writer has created the file and its tables
        conn = sqlite3.connect(str(self.file), isolation_level=None, check_same_thread=True)
        conn.execute("PRAGMA busy_timeout = 10000")
        conn.execute("PRAGMA query_only = ON")
        self._conn = conn

    def list_nodes(
        self, label: NodeLabel, where: Where | None, sort: SortSpec, page: Page
    ) -> NodePage:
        conn = self._conn
        if conn is None:
            raise RuntimeError("the embedded store is not open")
        conn.execute("BEGIN")  # one snapshot for the count and the page
        try:
            return list_nodes(conn, label, where, sort, page)
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
