"""The embedded store's threads, and work run on them that stops when its caller gives up.

An ``EmbeddedStore`` runs no SQLite on the event loop: its ``Database`` on one database thread
(every write, the catch-up, and the reads of saves, topics, the graph view and export), its
``Reader`` on a thread of its own (the list queries a client can make costly), numpy work on a
compute pool whose threads read a search's rows through a ``PoolReader`` (and ask ``Watch``
whether to catch up first) and run the point reads of the evidence path (``read_committed``),
and the second index query and the lexical route of a search on side threads. ``Threads``
opens and closes them together and runs work on them (``interruptible``: a caller that stops
waiting drops its job if queued and interrupts its statement if running). Kept apart from
``store.py`` so the store reads as the ``Store`` protocol it implements; the routes' use of
these threads is ``_routes``.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from mnemoql.engine.errors import StoreUnavailable
from mnemoql.engine.store.embedded._ann import AnnSettings
from mnemoql.engine.store.embedded._db import Database
from mnemoql.engine.store.embedded._pool import PoolReader
from mnemoql.engine.store.embedded._reader import Reader
from mnemoql.engine.store.embedded._reads import Reads
from mnemoql.engine.store.embedded._txn import read_snapshot
from mnemoql.engine.store.embedded._watch import Watch
from mnemoql.engine.store.faults import storage_fault, unwritable

P = ParamSpec("P")
T = TypeVar("T")

# Below this many matrix cells the maths is cheaper than a hop to the compute pool.
_INLINE_CELLS = 1 << 18


class _Runs(Protocol):
    def run(self, ticket: object, fn: Callable[[], T]) -> T: ...
    def interrupt(self, ticket: object) -> None: ...


async def interruptible(
    target: _Runs, pool: ThreadPoolExecutor, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """``fn`` on ``pool``'s thread under a ticket of its own; a caller that stops waiting
    drops it if queued and interrupts its statement if running."""
    ticket = object()
    loop = asyncio.get_running_loop()
    job = functools.partial(target.run, ticket, functools.partial(fn, *args, **kwargs))
    future = loop.run_in_executor(pool, job)
    try:
        return await future
    except asyncio.CancelledError:
        target.interrupt(ticket)
        raise
    except (sqlite3.Error, OSError) as exc:  # a full disk, a lock held elsewhere: coded
        fault = storage_fault(exc, getattr(target, "file", None))
        if fault is None:
            raise
        raise fault from exc


def settle(db: Database, watch: Watch) -> None:
    """On the database thread after each of its calls: when no other connection has committed
    since the mirrors last followed (``Database.mirrors_current``), they hold every commit,
    this thread's own ones included (a save's rows are in them when its call returns), so
    ``Watch`` takes the version it reads now as caught up. A search after this process's own
    save then makes no trip to the database thread, where ``Database.catch_up`` would find
    nothing to read but could wait behind the next save's whole transaction. The version is
    read before the check: another process's commit in between fails it. Best effort: a
    watch or database closing meanwhile leaves the next search to catch up as before."""
    try:
        version = watch.version()
        if db.mirrors_current():
            watch.caught_up(version)
    except (StoreUnavailable, RuntimeError, sqlite3.Error):
        pass


def not_open() -> StoreUnavailable:
    """What every call on a store that is not open raises."""
    return StoreUnavailable("the embedded store is not open; call open() first", zh="存储未打开")


class Threads:
    """One space's database thread, reader thread, compute pool and side threads (all None
    until ``open``; ``space`` names the threads)."""

    def __init__(self, space: str) -> None:
        self.space = space
        self.db: Database | None = None
        self.writer: ThreadPoolExecutor | None = None
        self.compute: ThreadPoolExecutor | None = None
        self.side: ThreadPoolExecutor | None = None  # index queries beside the compute pool
        self.reader: Reader | None = None  # list queries, on a connection and thread of their own
        self.reading: ThreadPoolExecutor | None = None
        self.rows: PoolReader | None = None  # a search's own reads, on the compute threads
        self.watch: Watch | None = None  # whether a search must catch up first (``_watch``)
        self.calls_in_flight = 0  # call()s queued or running on the database thread

    @property
    def database(self) -> Database:
        """The open ``Database``; StoreUnavailable when the store is not open."""
        if self.db is None:
            raise not_open()
        return self.db

    async def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn`` on the database thread. A caller that stops waiting (a request past its
        deadline) stops the work too: a call still queued is dropped, and a statement that
        is running is interrupted (``Database.run``; a write rolls back). Then ``settle``."""
        db, watch = self.db, self.watch
        if self.writer is None or db is None:
            raise not_open()

        def settled() -> T:
            out = fn(*args, **kwargs)
            if watch is not None:
                settle(db, watch)
            return out

        self.calls_in_flight += 1
        try:
            return await interruptible(db, self.writer, settled)
        finally:
            self.calls_in_flight -= 1

    async def read(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn`` on the reader's thread (``_reader``), stopped like ``call``."""
        if self.reading is None or self.reader is None:
            raise not_open()
        return await interruptible(self.reader, self.reading, fn, *args, **kwargs)

    async def read_committed(
        self, fn: Callable[Concatenate[Reads, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn`` (a ``Reads`` method) on a compute thread's read-only connection, in one read
        snapshot of committed rows, stopped like ``call``. The evidence path's point reads
        (the meta check, events, chunks, concepts, cursor checks) run here: on the database
        thread a search waited behind a whole save's transaction, 1.2-1.6 s behind a long
        document's (bench/results/search_during_save.md)."""
        rows, compute = self.rows, self.compute
        if rows is None or compute is None:
            raise not_open()

        def read() -> T:
            with rows.reading() as conn, read_snapshot(conn):
                return fn(Reads(conn), *args, **kwargs)

        return await interruptible(rows, compute, read)

    @property
    def interrupted(self) -> int:
        """Statements stopped because their caller gave up, on both connections."""
        db, reader = self.db, self.reader
        return (db.interrupted if db else 0) + (reader.interrupted if reader else 0)

    async def compute_on(self, cells: int, fn: Callable[[], T]) -> T:
        """Run pure numpy work inline when tiny, else on the compute pool."""
        if cells <= _INLINE_CELLS or self.compute is None:
            return fn()
        return await asyncio.get_running_loop().run_in_executor(self.compute, fn)

    async def open(self, file: Path, hint: int | None, ann: AnnSettings) -> None:
        """Open the database of ``file`` on a new database thread, then the reader and the
        pools; StoreUnavailable (or the storage fault) when the database cannot be opened."""
        writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"mnemoql-db-{self.space}")
        db = Database(file, hint, ann)
        try:
            await asyncio.get_running_loop().run_in_executor(writer, db.open)
        except (OSError, sqlite3.Error) as exc:
            writer.submit(db.close)
            writer.shutdown(wait=False)
            fault = storage_fault(exc, file)
            if fault is not None:  # a full disk, a lock held elsewhere: say which
                raise fault from exc
            why = unwritable(file.parent) or exc
            raise StoreUnavailable(
                f"cannot open the embedded database {file}: {why}",
                zh=f"无法打开数据库：{file}",
            ) from exc
        except BaseException:
            writer.submit(db.close)
            writer.shutdown(wait=False)
            raise
        reading = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"mnemoql-read-{self.space}")
        reader = Reader(file)
        try:
            await asyncio.get_running_loop().run_in_executor(reading, reader.open)
        except BaseException:
            reading.shutdown(wait=False)
            writer.submit(db.close)
            writer.shutdown(wait=False)
            raise
        self.writer, self.db = writer, db
        self.reading, self.reader = reading, reader
        workers = max(1, min(4, os.cpu_count() or 1))
        self.compute = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix=f"mnemoql-vec-{self.space}"
        )
        # a search's second index query and its lexical route, beside its first index query
        # on a compute thread (``route_pool``): threads of their own, so they never wait
        # behind the compute pool's queue (nor deadlock it), two for each compute thread
        self.side = ThreadPoolExecutor(
            max_workers=2 * workers, thread_name_prefix=f"mnemoql-ann-{self.space}"
        )
        self.rows = PoolReader(file)
        self.watch = Watch(file)

    async def close(self) -> None:
        db, writer, compute, side = self.db, self.writer, self.compute, self.side
        reader, reading, rows, watch = self.reader, self.reading, self.rows, self.watch
        if db is None or writer is None:
            return
        loop = asyncio.get_running_loop()
        try:
            # Queued behind any pending work (one worker, FIFO), so that work finishes first.
            if reader is not None and reading is not None:
                await loop.run_in_executor(reading, reader.close)
            await loop.run_in_executor(writer, db.close)
        finally:
            self.db = self.writer = self.compute = self.side = None
            self.reader = self.reading = self.rows = self.watch = None
            if rows is not None:
                rows.close()
            if watch is not None:
                watch.close()
            writer.shutdown(wait=False)
            for pool in (compute, reading, side):
                if pool is not None:
                    pool.shutdown(wait=False)
