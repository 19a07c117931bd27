"""Upkeep of the embedded session file that no search waits for: the sweep and the WAL
checkpoint, on a thread and connection of their own (``SqliteState`` starts it).

Both used to run inside a search's commit: SQLite checkpointed the write-ahead log in the
commit that took it past 1000 pages (17-80 ms of copying and syncing here), and every 200th
commit swept expired rows. A search then stalled for that long now and then. Here the commit
only notes that upkeep is due; one job at a time runs beside the searches: the sweep in its
own short write transaction (a search's commit waits for at most that), then a PASSIVE
checkpoint, which never blocks a reader or a writer. The searches' connection does not
checkpoint at all (``wal_autocheckpoint = 0``). A job that fails is logged and the next one
tries again: the rows it would have removed stay until then, and the log grows until a
checkpoint succeeds.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

log = logging.getLogger(__name__)

Job = Callable[[sqlite3.Connection, float], None]


class Upkeep:
    """One upkeep job at a time on a thread of its own (``start``), over a connection to
    ``file`` opened on first use."""

    def __init__(self, file: Path, sweep: Job) -> None:
        self.file = file
        self.sweep = sweep
        self._pool: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None
        self._running: Future[None] | None = None
        self._lock = threading.Lock()

    def start(self, now: float) -> None:
        """Sweep and checkpoint beside the caller, unless a job is still running (the next
        due one will)."""
        with self._lock:
            if self._running is not None and not self._running.done():
                return
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="mnemoql-sessions-upkeep"
                )
            self._running = self._pool.submit(self._run, now)

    def wait(self) -> None:
        """Until the running job (if any) is done."""
        running = self._running
        if running is not None:
            running.result()

    def close(self) -> None:
        """Wait for the running job, then close the connection and the thread."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is None:
            return
        pool.submit(self._close).result()
        pool.shutdown(wait=True)

    def _run(self, now: float) -> None:
        try:
            conn = self._connection()
            self.sweep(conn, now)
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except (sqlite3.Error, OSError) as exc:  # a full disk, a lock held too long
            log.warning("session file upkeep failed, retried at the next: %s: %s", self.file, exc)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self.file, isolation_level=None, check_same_thread=True)
            conn.execute("PRAGMA busy_timeout = 10000")
            self._conn = conn
        return self._conn

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
