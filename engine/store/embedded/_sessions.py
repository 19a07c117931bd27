"""The embedded store's session state (``engine.session_state.SharedState``) in a SQLite file
of its own beside the space's database: ``<space>.sqlite3-sessions``.

Its own file, not a table of the space's database: every search commits to it, and a commit
to the space's database moves ``PRAGMA data_version`` for every other process of the memory,
which then takes its mirrors and topic index for stale (``changed_elsewhere``). A file of its
own also never waits behind a save's write lock. Every process of the memory (``serve
--workers N``, replicas on one machine) opens the same file; WAL lets them read while one
writes, and a session's merge runs under ``BEGIN IMMEDIATE``. Losing the file loses only
sessions and cursors, as a restart did before.

A session's read lists its kept pages (up to 64 of a few KB each) from a covering index and
reads only the bodies its process does not hold yet (``PageCache``): reading every body on
every search was most of the session thread's time in the scaling bench (bench/results).

A call's commit appends its ledger change as a delta row (``session_state``): the ledger row,
whose body comes before ``expires_at``, is neither read nor written then; whether the session
is live and its deltas' numbers come from the ``state_owned`` index (a ledger row's owner is
its own key).

A commit only notes that upkeep is due (``_upkeep``): the sweep of expired rows then runs in
batches queued behind the searches' calls, and the log's checkpoint on a thread of its own.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from mnemoql.engine.errors import StoreUnavailable
from mnemoql.engine.session_state import (
    FOLD_AFTER,
    Commit,
    Kind,
    PageCache,
    PageStamp,
    Row,
    Sweeper,
    Update,
)
from mnemoql.engine.store.embedded._txn import immediate, read_snapshot
from mnemoql.engine.store.embedded._upkeep import SWEEP_PAUSE_S, Checkpoints, sweep, sweep_step
from mnemoql.engine.store.faults import storage_fault

T = TypeVar("T")
log = logging.getLogger(__name__)

DDL = """
CREATE TABLE IF NOT EXISTS state (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    owner TEXT NOT NULL,
    body BLOB,
    size INTEGER NOT NULL,
    expires_at REAL NOT NULL,
    ttl REAL NOT NULL,
    used_at REAL NOT NULL,
    PRIMARY KEY (kind, key)
) WITHOUT ROWID;
DROP INDEX IF EXISTS state_owner;
CREATE INDEX IF NOT EXISTS state_owned ON state (kind, owner, expires_at, used_at, size);
DROP INDEX IF EXISTS state_expiry;
CREATE INDEX IF NOT EXISTS state_expiring ON state (kind, expires_at, ttl, size);
"""
# A session's kept pages from the index alone: the body column comes before the others, so
# reading ``used_at`` from the rows would walk every page's overflow chain.
_LISTED = (
    "SELECT key, used_at, size FROM state INDEXED BY state_owned "
    "WHERE kind = 'p' AND owner = ? AND expires_at > ? ORDER BY used_at, key"
)
_BODIES = "SELECT key, used_at, size, body FROM state WHERE kind = 'p' AND key IN ({})"
_LEDGER_ROWS = (  # a session's ledger row and its deltas from the index: no body read
    "SELECT kind, key, expires_at FROM state INDEXED BY state_owned "
    "WHERE kind IN ('s', 'd') AND owner = ? ORDER BY kind DESC, key"
)
_PUT = (
    "INSERT OR REPLACE INTO state (kind, key, owner, body, size, expires_at, ttl, used_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def _merge(
    conn: sqlite3.Connection, kind: Kind, key: str, fn: Update, now: float, ttl: float
) -> None:
    """Replace a row's body by ``fn(current body)`` (None when missing or expired), renewing
    its TTL; inside the caller's transaction. A session's deltas are folded into it."""
    if kind == "s":
        body = fn(_ledger(conn, key, now))
        conn.execute("DELETE FROM state WHERE kind = 'd' AND owner = ?", (key,))
    else:
        found = conn.execute(
            "SELECT body, expires_at FROM state WHERE kind = ? AND key = ?", (kind, key)
        ).fetchone()
        body = fn(found[0] if found is not None and found[1] > now else None)
    conn.execute(_PUT, (kind, key, key, body, len(body), now + ttl, ttl, now))


def _ledger_rows(conn: sqlite3.Connection, key: str, now: float) -> list[str] | None:
    """The keys of a live session's deltas in order, or None when it is not live."""
    rows = conn.execute(_LEDGER_ROWS, (key,)).fetchall()
    if not rows or max(float(r[2]) for r in rows) <= now:
        return None
    return [str(k) for kind, k, _ in rows if kind == "d"]


def _ledger(conn: sqlite3.Connection, key: str, now: float) -> bytes | None:
    """A live session's ledger then its deltas, one line each; None when it is not live."""
    if _ledger_rows(conn, key, now) is None:
        return None
    base = conn.execute("SELECT body FROM state WHERE kind = 's' AND key = ?", (key,)).fetchone()
    deltas = conn.execute(
        "SELECT body FROM state WHERE kind = 'd' AND owner = ? ORDER BY key", (key,)
    ).fetchall()
    lines = [base[0] if base is not None and base[0] is not None else b""]
    return b"\n".join(bytes(b) for b in lines + [d[0] for d in deltas])


def _append(conn: sqlite3.Connection, commit: Commit, fn: Update, now: float) -> None:
    """Store a call's ledger change: a delta row, or the merge (``session_state``)."""
    sid, ttl, delta = commit.session, commit.ttl, commit.delta
    deltas = _ledger_rows(conn, sid, now)
    if delta is None or deltas is None or len(deltas) >= FOLD_AFTER:
        _merge(conn, "s", sid, fn, now, ttl)
        return
    number = int(deltas[-1].rsplit("\x1f", 1)[1]) + 1 if deltas else 1
    key = f"{sid}\x1f{number:012d}"
    conn.execute(_PUT, ("d", key, sid, delta, len(delta), now + ttl, ttl, now))


def _pages(
    cache: PageCache, conn: sqlite3.Connection, owner: str, now: float
) -> list[tuple[str, bytes]]:
    """``(key, body)`` of ``owner``'s live pages, oldest first, in the caller's read
    transaction: listed from the index, and only the bodies ``cache`` does not hold read."""
    held, missing = cache.held(
        (str(k), float(u), int(n)) for k, u, n in conn.execute(_LISTED, (owner, now))
    )
    fetched: list[tuple[PageStamp, bytes]] = []
    for at in range(0, len(missing), 500):  # under SQLite's bound parameters
        chunk = missing[at : at + 500]
        rows = conn.execute(_BODIES.format(",".join("?" * len(chunk))), chunk)
        fetched += [((str(k), float(u), int(n)), bytes(b)) for k, u, n, b in rows]
    return cache.filled(held, fetched, owner)


def state_file(database: Path) -> Path:
    """The session state file of the space whose database is ``database``."""
    return database.with_name(database.name + "-sessions")


class SqliteState:
    """Session and cursor rows of one embedded space, on a thread and connection of their own.

    The file is opened on first use, so a store that never serves a search never creates it.
    """

    def __init__(self, file: Path, budget: int) -> None:
        self.file = file
        self.budget = budget
        self._conn: sqlite3.Connection | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._sweeper = Sweeper()
        self.page_cache = PageCache()
        self.checkpoints = Checkpoints(file)  # the log's, beside the searches (``_upkeep``)
        self._swept = threading.Event()  # no sweep running
        self._swept.set()
        self._closing = False

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mnemoql-sessions")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._pool, self._call, fn)
        except (sqlite3.Error, OSError) as exc:
            fault = storage_fault(exc, self.file)  # a full disk, a lock held too long: coded
            if fault is not None:
                raise fault from exc
            raise StoreUnavailable(
                f"cannot use the session state file {self.file}: {exc}",
                zh=f"无法使用会话状态文件：{self.file}",
            ) from exc

    def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._conn is None:
            conn = sqlite3.connect(self.file, isolation_level=None, check_same_thread=True)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")  # state a restart used to lose anyway
            conn.execute("PRAGMA busy_timeout = 10000")
            conn.execute("PRAGMA wal_autocheckpoint = 0")  # ``checkpoints`` does
            conn.executescript(DDL)
            self._conn = conn
        return fn(self._conn)

    async def session(self, key: str, now: float) -> tuple[bytes | None, list[tuple[str, bytes]]]:
        def read(conn: sqlite3.Connection) -> tuple[bytes | None, list[tuple[str, bytes]]]:
            with read_snapshot(conn):  # one snapshot for the ledger and its pages
                found = _ledger(conn, key, now)
                if found is None:
                    return None, []
                return found, _pages(self.page_cache, conn, key, now)

        return await self._run(read)

    async def commit(self, commit: Commit, now: float) -> None:
        sweep = self._sweeper.due(now)
        sid, ttl = commit.session, commit.ttl

        def write(conn: sqlite3.Connection) -> None:
            with immediate(conn):
                if commit.update is not None:
                    _append(conn, commit, commit.update, now)
                if commit.clear_pages:
                    conn.execute("DELETE FROM state WHERE kind = 'p' AND owner = ?", (sid,))
                if commit.clear_cursors:
                    conn.execute("DELETE FROM state WHERE kind = 'c' AND owner = ?", (sid,))
                for kind, keys in (("p", commit.drop_pages), ("c", commit.drop_cursors)):
                    conn.executemany(
                        "DELETE FROM state WHERE kind = ? AND key = ?", [(kind, k) for k in keys]
                    )
                conn.executemany(
                    _PUT, [("p", k, sid, b, len(b), now + ttl, ttl, now) for k, b in commit.pages]
                )
                conn.executemany(
                    _PUT,
                    [("c", t, sid, b, len(b), at + ttl, ttl, at) for t, b, at in commit.cursors],
                )
            for k, b in commit.pages:  # committed: this process need not read them back
                self.page_cache.put((k, now, len(b)), b, sid)

        await self._run(write)
        if sweep:
            self._sweep_due(now)

    async def get(self, kind: Kind, key: str, now: float) -> Row | None:
        def read(conn: sqlite3.Connection) -> Row | None:
            if kind == "s":
                with read_snapshot(conn):  # rare: tests, ``touch``'s callers
                    ledger = _ledger(conn, key, now)
                    rows = conn.execute(_LEDGER_ROWS, (key,)).fetchall()
                if ledger is None:
                    return None
                return Row(key, ledger, max(float(r[2]) for r in rows))
            found = conn.execute(
                "SELECT owner, body, expires_at, ttl FROM state WHERE kind = ? AND key = ?",
                (kind, key),
            ).fetchone()
            if found is None:
                return None
            owner, body, expires_at, ttl = found
            if (kind != "c" and expires_at <= now) or expires_at + ttl <= now:
                return None
            return Row(owner, body if expires_at > now else None, expires_at)

        return await self._run(read)

    async def put(
        self, kind: Kind, key: str, owner: str, body: bytes, now: float, ttl: float
    ) -> None:
        row = (kind, key, owner, body, len(body), now + ttl, ttl, now)
        sweep = self._sweeper.due(now)

        await self._run(lambda conn: conn.execute(_PUT, row))
        if sweep:
            self._sweep_due(now)

    async def update(self, kind: Kind, key: str, fn: Update, now: float, ttl: float) -> None:
        sweep = self._sweeper.due(now)

        def merge(conn: sqlite3.Connection) -> None:
            with immediate(conn):
                _merge(conn, kind, key, fn, now, ttl)

        await self._run(merge)
        if sweep:
            self._sweep_due(now)

    async def owned(self, kind: Kind, owner: str, now: float) -> list[tuple[str, bytes]]:
        def read(conn: sqlite3.Connection) -> list[tuple[str, bytes]]:
            rows = conn.execute(
                "SELECT key, body FROM state WHERE kind = ? AND owner = ? AND expires_at > ? "
                "AND body IS NOT NULL ORDER BY used_at, key",
                (kind, owner, now),
            ).fetchall()
            return [(str(k), bytes(b)) for k, b in rows]

        return await self._run(read)

    async def drop(self, kind: Kind, *, key: str | None = None, owner: str | None = None) -> None:
        sql, args = "DELETE FROM state WHERE kind = ?", [str(kind)]
        if key is not None:
            sql, args = sql + " AND key = ?", [*args, key]
        if owner is not None:
            sql, args = sql + " AND owner = ?", [*args, owner]
        deltas = "DELETE FROM state WHERE kind = 'd'"  # a session's go with it
        if key is not None or owner is not None:
            deltas += " AND owner IN (" + sql.replace("DELETE", "SELECT key", 1) + ")"

        def delete(conn: sqlite3.Connection) -> None:
            with immediate(conn):
                if kind == "s":
                    conn.execute(deltas, args if key is not None or owner is not None else [])
                conn.execute(sql, args)

        await self._run(delete)

    async def sweep(self, now: float) -> None:
        """Expired rows out, then the least recently used past the budget, at once (tests)."""
        await self._run(lambda conn: sweep(conn, now, self.budget))

    async def upkept(self) -> None:
        """Until the running sweep and checkpoint (if any) are done (tests)."""
        await asyncio.to_thread(self._swept.wait)
        await asyncio.to_thread(self.checkpoints.wait)

    def _sweep_due(self, now: float) -> None:
        """Start a sweep on this state's thread, one batch per job, each queued behind the
        calls that came meanwhile; then a checkpoint (``_upkeep``). Once at a time."""
        if self._swept.is_set():
            self._swept.clear()
            self._next_step(now, 0)

    def _next_step(self, now: float, stage: int) -> None:
        try:
            if self._pool is None:
                raise RuntimeError("closed")
            self._pool.submit(self._sweep_step, now, stage)
        except RuntimeError:  # closed or closing: the next process or open sweeps
            self._swept.set()

    def _sweep_step(self, now: float, stage: int) -> None:
        conn, following = self._conn, None
        if conn is None or self._closing:  # the rest waits for the next sweep
            self._swept.set()
            return
        try:
            following = sweep_step(conn, now, stage, self.budget)
        except (sqlite3.Error, OSError) as exc:  # a lock held too long, a full disk
            log.warning("session file sweep failed, retried at the next: %s: %s", self.file, exc)
        if following is not None and not self._closing:
            # the next job after a pause without the lock: another process's commit, asleep
            # in SQLite's busy handler, finds it free when it wakes (``_upkeep``)
            pause = threading.Timer(SWEEP_PAUSE_S, self._next_step, (now, following))
            pause.daemon = True
            pause.start()
            return
        if not self._closing:
            self.checkpoints.start()
        self._swept.set()

    async def close(self) -> None:
        """Stop a running sweep after its batch, then close (a later call opens again)."""
        self._closing = True
        try:
            await asyncio.to_thread(self._swept.wait)
            await asyncio.to_thread(self.checkpoints.close)
            pool, conn = self._pool, self._conn
            if pool is None:
                return
            if conn is not None:
                await asyncio.get_running_loop().run_in_executor(pool, conn.close)
            self._pool, self._conn = None, None
            pool.shutdown(wait=False)
        finally:
            self._closing = False
