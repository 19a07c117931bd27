"""Whether another connection committed since the vector mirrors last caught up, asked on the
thread that runs a search (issue #30, "a search near its index").

A search went to the database thread first only to run ``Database.catch_up``: one PRAGMA that
nearly always finds nothing changed, behind a thread hop that on a busy machine waits for a
core (bench/results/search_latency_100k_s19.md). ``Watch`` asks the same question on a
read-only connection of its own, from whichever thread asks: ``PRAGMA data_version`` changes
when any other connection commits, another process's or this process's database thread's (a
save then costs the next search one trip), and only then does the search go to the database
thread. ``seen`` is the version read *before* the last catch-up that followed it, so anything
committed after that read moves the version again.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from mnemoql.engine.errors import StoreUnavailable


class Watch:
    """One read-only connection to ``file`` that only reads ``PRAGMA data_version``, from any
    thread (one at a time)."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._seen: int | None = None  # the version the mirrors have caught up with

    def stale(self) -> int | None:
        """None when nothing was committed since the last ``caught_up``; else the version to
        pass to ``caught_up`` once ``Database.catch_up`` has run."""
        version = self.version()
        return None if version == self._seen else version

    def version(self) -> int:
        """The version now (``settle``: read on the database thread after its calls)."""
        with self._lock:
            return int(self._connection().execute("PRAGMA data_version").fetchone()[0])

    def caught_up(self, version: int) -> None:
        """``Database.catch_up`` ran after ``stale`` read ``version``."""
        with self._lock:
            self._seen = version

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreUnavailable("the embedded store is closed", zh="存储已关闭")
        if self._conn is None:
            # any thread may ask (under the lock); ``close`` may come from another
            conn = sqlite3.connect(str(self.file), isolation_level=None, check_same_thread=False)
            try:
                conn.execute("PRAGMA busy_timeout = 10000")
                conn.execute("PRAGMA query_only = ON")
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
