"""Upkeep of the embedded session file that no search waits for (``SqliteState`` runs it).

Both parts used to run inside a search's commit: SQLite checkpointed the write-ahead log in
the commit that took it past 1000 pages (17-80 ms of copying and syncing here), and every 200th
commit swept expired rows (70-80 ms when each statement scanned every row). A search then
stalled for that long now and then.

* **The sweep** runs on the state's own thread, one batch of ``SWEEP_BATCH`` rows per job:
  each job queues the next, after a pause of ``SWEEP_PAUSE_S`` without the lock, behind the
  calls that arrived meanwhile, so a search waits for one batch at most (4 ms at p95 here),
  never behind the whole sweep. On a thread of its own, beside the
  searches, its batches took the file's write lock back to back and a search's commit, asleep
  in SQLite's busy handler, missed every gap: 130-330 ms once in a bench run
  (bench/results/search_latency_100k_s21.md).
* **The checkpoint** (``Checkpoints``) runs after a sweep on a thread and connection of its
  own: PASSIVE, which never blocks a reader or a writer. The searches' connection does not
  checkpoint (``wal_autocheckpoint = 0``).

A job that fails is logged and the next due one tries again: the rows it would have removed
stay until then, and the log grows until a checkpoint succeeds.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from mnemoql.engine.session_state import evictable
from mnemoql.engine.store.embedded._txn import immediate

log = logging.getLogger(__name__)

_LIVE = (  # rows the budget may drop: a session with its deltas as one
    "SELECT CASE kind WHEN 'd' THEN 's' ELSE kind END AS k, "
    "CASE kind WHEN 'd' THEN owner ELSE key END AS name, sum(size), max(used_at) "
    "FROM state WHERE size > 0 GROUP BY k, name"
)
# The sweep's statements, each over the expired rows alone (``state_expiring``, and
# ``state_owned`` for a session's other rows): a scan of every row reads their bodies, 70 ms
# and more each time in a memory with 40k session rows (bench/results/search_latency_100k_s21.md).
# Each takes at most ``:batch`` rows (a session with its deltas) per write transaction, so a
# search's commit waits for one batch at most, however much expired since the last sweep.
_SWEEP = (
    # pages, and cursors one TTL after they expired (a cursor's owner is told it expired
    # until then); a cursor's row expired at ``expires_at <= now`` in either case
    "DELETE FROM state WHERE (kind, key) IN (SELECT kind, key FROM state "
    "WHERE kind IN ('p', 'c') AND expires_at <= :now AND (kind != 'c' OR expires_at + ttl <= :now) "
    "LIMIT :batch)",
    # a session goes with its deltas, once its latest row expired
    "DELETE FROM state WHERE kind IN ('s', 'd') AND owner IN (SELECT e.owner FROM state e "
    "WHERE e.kind IN ('s', 'd') AND e.expires_at <= :now AND NOT EXISTS (SELECT 1 FROM state l "
    "WHERE l.kind IN ('s', 'd') AND l.owner = e.owner AND l.expires_at > :now) LIMIT :batch)",
    # an expired cursor's body goes at once
    "UPDATE state SET body = NULL, size = 0 WHERE (kind, key) IN (SELECT kind, key FROM state "
    "WHERE kind = 'c' AND expires_at <= :now AND size > 0 LIMIT :batch)",
)
SWEEP_BATCH = 20  # rows per job: p95 4 ms here, 21 ms at most (50 rows: p95 13, 500: up to 54 ms)
# Between two jobs the lock stays free this long: a writer of another process that found it
# taken sleeps in SQLite's busy handler (1, 2, 5, 10 ... 100 ms) and, with jobs back to back,
# would wake into the next job every time
SWEEP_PAUSE_S = 0.005


def sweep(conn: sqlite3.Connection, now: float, budget: int, batch: int | None = None) -> None:
    """The whole sweep at once (``SqliteState.sweep``: tests)."""
    stage: int | None = 0
    while stage is not None:
        stage = sweep_step(conn, now, stage, budget, batch)


def sweep_step(
    conn: sqlite3.Connection, now: float, stage: int, budget: int, batch: int | None = None
) -> int | None:
    """One write transaction of the sweep: a batch of its ``stage``-th statement (``_SWEEP``),
    or after them the least recently used rows past ``budget`` bytes; the next stage, None
    once the sweep is done."""
    if stage < len(_SWEEP):
        with immediate(conn):
            args = {"now": now, "batch": batch or SWEEP_BATCH}
            changed = conn.execute(_SWEEP[stage], args).rowcount
        return stage if changed > 0 else stage + 1
    with immediate(conn):
        total = conn.execute("SELECT coalesce(sum(size), 0) FROM state").fetchone()[0]
        if total > budget:
            for kind, key in evictable(conn.execute(_LIVE).fetchall(), total, budget):
                if kind == "s":
                    conn.execute("DELETE FROM state WHERE kind IN ('s', 'd') AND owner = ?", (key,))
                elif kind != "c":
                    conn.execute("DELETE FROM state WHERE kind = ? AND key = ?", (kind, key))
                else:
                    conn.execute(
                        "UPDATE state SET body = NULL, size = 0 WHERE kind = 'c' AND key = ?",
                        (key,),
                    )
    return None


class Checkpoints:
    """PASSIVE checkpoints of ``file``'s log on a thread of their own, one at a time
    (``start``), over a connection opened on first use."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self._pool: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None
        self._running: Future[None] | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Checkpoint beside the caller, unless one is still running."""
        with self._lock:
            if self._running is not None and not self._running.done():
                return
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="mnemoql-sessions-checkpoint"
                )
            self._running = self._pool.submit(self._run)

    def wait(self) -> None:
        """Until the running checkpoint (if any) is done."""
        running = self._running
        if running is not None:
            running.result()

    def close(self) -> None:
        """Wait for the running checkpoint, then close the connection and the thread."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is None:
            return
        pool.submit(self._close).result()
        pool.shutdown(wait=True)

    def _run(self) -> None:
        try:
            if self._conn is None:
                self._conn = sqlite3.connect(self.file, isolation_level=None)
                self._conn.execute("PRAGMA busy_timeout = 10000")
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except (sqlite3.Error, OSError) as exc:  # a full disk, a lock held too long
            log.warning("session file checkpoint failed, retried later: %s: %s", self.file, exc)

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
