"""The embedded store: SQLite for everything durable, numpy for exact cosine. The default.

Layout
    One database file per memory *space* (WAL mode, foreign keys on, busy timeout), so spaces
    never share a row and one space is one file to back up. ``path`` is either a directory,
    holding ``<path>/<space>.sqlite3``, or a database file (suffix ``.db``, ``.sqlite`` or
    ``.sqlite3``) used for the ``default`` space, with other spaces beside it as
    ``<stem>-<space><suffix>``. Tables: ``nodes`` (Event / Person /
    Concept / Location, aliases as JSON, vectors as float32 BLOBs), ``relations`` (unique on
    type, source, target and -- for HAS_ATTITUDE -- the event it was stated in), ``chunks``
    (EventSource), ``names`` (normalised name/alias -> node), ``meta``, ``idempotency``, and
    the topic tree (``topics``, ``topic_bindings``: SPEC §2). See ``_schema.py``.

Threads
    All SQLite work runs on one dedicated worker thread, so writes are serialised (one
    ``BEGIN IMMEDIATE`` transaction per write) and the event loop never blocks. Vectors are
    mirrored in numpy matrices (event summaries, chunks grouped by event, one matrix per
    entity label) that the writer extends after each commit and publishes as immutable views;
    the vector routes read a view on a small compute pool, without touching SQLite unless an
    entity filter has to be resolved through the relations table.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar

from mnemoql.engine.errors import InvalidInput, StorageFault, StoreUnavailable
from mnemoql.engine.models import (
    Binding,
    Chunk,
    Counts,
    Direction,
    Entity,
    EntityLabel,
    Event,
    Filters,
    GraphSnapshot,
    Hit,
    MemoryMeta,
    Neighbour,
    Node,
    NodeLabel,
    NodePage,
    Page,
    RelType,
    RouteName,
    RoutePool,
    SavePlan,
    SaveResult,
    SortSpec,
    Topic,
    TopicDraft,
    Vector,
    VectorSet,
    Where,
)
from mnemoql.engine.store.embedded import _dump as dump
from mnemoql.engine.store.embedded._ann import AnnSettings
from mnemoql.engine.store.embedded._db import Database
from mnemoql.engine.store.embedded._index import event_mask, normalise
from mnemoql.engine.store.embedded._lexical import hits as lexical_hits
from mnemoql.engine.store.embedded._pool import PoolReader, pool_rows
from mnemoql.engine.store.embedded._reader import Reader
from mnemoql.engine.store.embedded._search import entity_hits, pool_hits, route_hits
from mnemoql.engine.store.embedded._sessions import SqliteState, state_file
from mnemoql.engine.store.faults import probe_write, storage_fault, unwritable
from mnemoql.engine.store.lexical import query_terms as lexical_terms
from mnemoql.engine.store.rules import entity_label
from mnemoql.engine.store.window import window_route_by_parts
from mnemoql.engine.topics.changes import TopicChanges, TopicMark

__all__ = ["EmbeddedStore"]

P = ParamSpec("P")
T = TypeVar("T")

DB_SUFFIXES = frozenset({".db", ".sqlite", ".sqlite3"})
SPACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
# Below this many matrix cells the maths is cheaper than a hop to the compute pool.
_INLINE_CELLS = 1 << 18


class _Runs(Protocol):
    def run(self, ticket: object, fn: Callable[[], T]) -> T: ...
    def interrupt(self, ticket: object) -> None: ...


async def _interruptible(
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


class EmbeddedStore:
    """SQLite + numpy implementation of ``engine.store.base.Store`` for one space.

    Args:
        path: a directory holding one ``<space>.sqlite3`` per space, or a ``.db`` /
            ``.sqlite`` / ``.sqlite3`` file for the default space; created by ``open()``.
        space: the memory space (1-64 letters, digits, ``_`` or ``-``).
        dimensions_hint: vector width to use before MemoryMeta exists (MemoryMeta wins).
        ann: when to use the ANN indexes (``_ann``); default: above 20,000 vectors.
    """

    def __init__(
        self,
        path: Path,
        space: str = "default",
        dimensions_hint: int | None = None,
        ann: AnnSettings | None = None,
    ) -> None:
        if not SPACE_NAME.match(space):
            raise InvalidInput(
                f"space {space!r} is not allowed: use 1-64 letters, digits, '_' or '-'",
                zh=f"空间名不合法：{space}",
            )
        self.path = Path(path)
        self.space = space
        self._hint = dimensions_hint
        self._ann = ann or AnnSettings()
        self._sessions: SqliteState | None = None  # evidence sessions, opened on first use
        self._db: Database | None = None
        self._writer: ThreadPoolExecutor | None = None
        self._compute: ThreadPoolExecutor | None = None
        self._side: ThreadPoolExecutor | None = None  # index queries beside the compute pool
        self._reader: Reader | None = None  # list queries, on a connection and thread of their own
        self._reading: ThreadPoolExecutor | None = None
        self._rows: PoolReader | None = None  # a search's own reads, on the compute threads
        self._open_lock = asyncio.Lock()  # binds to no loop until first used
        self._caught_up = 0  # Database.caught_up at the last changed_elsewhere()
        self._calls_in_flight = 0  # _call()s queued or running on the writer thread

    @property
    def file(self) -> Path:
        """The SQLite database file of this space (see the module docstring)."""
        if self.path.suffix.lower() in DB_SUFFIXES:
            if self.space == "default":
                return self.path
            return self.path.with_name(f"{self.path.stem}-{self.space}{self.path.suffix}")
        return self.path / f"{self.space}.sqlite3"

    def session_state(self, budget: int) -> SqliteState:
        """The space's evidence sessions and cursors, shared by every process that opens this
        space (``_sessions``); closed with the store."""
        if self._sessions is None:
            self._sessions = SqliteState(state_file(self.file), budget)
        return self._sessions

    def __repr__(self) -> str:
        return f"EmbeddedStore({str(self.path)!r}, space={self.space!r})"

    # ------------------------------------------------------------ plumbing

    async def _call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn`` on the database thread. A caller that stops waiting (a request past its
        deadline) stops the work too: a call still queued is dropped, and a statement that
        is running is interrupted (``Database.run``; a write rolls back)."""
        if self._writer is None or self._db is None:
            raise StoreUnavailable(
                "the embedded store is not open; call open() first", zh="存储未打开"
            )
        self._calls_in_flight += 1
        try:
            return await _interruptible(self._db, self._writer, fn, *args, **kwargs)
        finally:
            self._calls_in_flight -= 1

    async def _read(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn`` on the reader's thread (``_reader``), stopped like ``_call``."""
        if self._reading is None or self._reader is None:
            raise StoreUnavailable(
                "the embedded store is not open; call open() first", zh="存储未打开"
            )
        return await _interruptible(self._reader, self._reading, fn, *args, **kwargs)

    @property
    def interrupted(self) -> int:
        """Statements stopped because their caller gave up, on both connections."""
        db, reader = self._db, self._reader
        return (db.interrupted if db else 0) + (reader.interrupted if reader else 0)

    async def _compute_on(self, cells: int, fn: Callable[[], T]) -> T:
        """Run pure numpy work inline when tiny, else on the compute pool."""
        if cells <= _INLINE_CELLS or self._compute is None:
            return fn()
        return await asyncio.get_running_loop().run_in_executor(self._compute, fn)

    @property
    def _database(self) -> Database:
        if self._db is None:
            raise StoreUnavailable(
                "the embedded store is not open; call open() first", zh="存储未打开"
            )
        return self._db

    # ------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """Create the directory, database and tables if missing; load the vector mirrors."""
        async with self._open_lock:
            if self._db is None:
                await self._open()

    async def _open(self) -> None:
        writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"mnemoql-db-{self.space}")
        db = Database(self.file, self._hint, self._ann)
        try:
            await asyncio.get_running_loop().run_in_executor(writer, db.open)
        except (OSError, sqlite3.Error) as exc:
            writer.submit(db.close)
            writer.shutdown(wait=False)
            fault = storage_fault(exc, self.file)
            if fault is not None:  # a full disk, a lock held elsewhere: say which
                raise fault from exc
            why = unwritable(self.file.parent) or exc
            raise StoreUnavailable(
                f"cannot open the embedded database {self.file}: {why}",
                zh=f"无法打开数据库：{self.file}",
            ) from exc
        except BaseException:
            writer.submit(db.close)
            writer.shutdown(wait=False)
            raise
        reading = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"mnemoql-read-{self.space}")
        reader = Reader(self.file)
        try:
            await asyncio.get_running_loop().run_in_executor(reading, reader.open)
        except BaseException:
            reading.shutdown(wait=False)
            writer.submit(db.close)
            writer.shutdown(wait=False)
            raise
        self._writer, self._db = writer, db
        self._reading, self._reader = reading, reader
        workers = max(1, min(4, os.cpu_count() or 1))
        self._compute = ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix=f"mnemoql-vec-{self.space}"
        )
        # a search's second index query and its lexical route, beside its first index query
        # on a compute thread (``route_pool``): threads of their own, so they never wait
        # behind the compute pool's queue (nor deadlock it), two for each compute thread
        self._side = ThreadPoolExecutor(
            max_workers=2 * workers, thread_name_prefix=f"mnemoql-ann-{self.space}"
        )
        self._rows = PoolReader(self.file)

    async def close(self) -> None:
        if self._sessions is not None:
            await self._sessions.close()
        db, writer, compute, side = self._db, self._writer, self._compute, self._side
        reader, reading, rows = self._reader, self._reading, self._rows
        if db is None or writer is None:
            return
        loop = asyncio.get_running_loop()
        try:
            # Queued behind any pending work (one worker, FIFO), so that work finishes first.
            if reader is not None and reading is not None:
                await loop.run_in_executor(reading, reader.close)
            await loop.run_in_executor(writer, db.close)
        finally:
            self._db = self._writer = self._compute = self._side = None
            self._reader = self._reading = self._rows = None
            if rows is not None:
                rows.close()
            writer.shutdown(wait=False)
            for pool in (compute, reading, side):
                if pool is not None:
                    pool.shutdown(wait=False)

    async def ping(self) -> bool:
        if self._db is None:
            return False
        try:
            return await self._call(self._db.ping)
        except Exception:
            return False

    async def write_fault(self) -> StorageFault | None:
        """``STORAGE_FULL`` / ``STORAGE_BUSY`` when a write would be refused now, else None
        (``/readyz``; ``engine.store.faults.probe_write``)."""
        if self._db is None:
            return None
        # While this store's own writer works (a revectorize, a large import) the write lock
        # may be ours: probing it would call our own work STORAGE_BUSY. Another process's
        # lock then surfaces in that work itself, as STORAGE_BUSY on the request.
        lock = self._calls_in_flight == 0
        return await asyncio.to_thread(probe_write, self.file, lock=lock)

    # ------------------------------------------------------------ meta

    async def get_meta(self) -> MemoryMeta | None:
        return await self._call(self._database.get_meta)

    async def changed_elsewhere(self) -> bool:
        """True when another process committed to this space since the last call (the
        vector mirrors have caught up with it by then)."""
        caught_up = await self._call(self._database.catch_up)
        changed, self._caught_up = caught_up != self._caught_up, caught_up
        return changed

    async def counts(self) -> Counts:
        return await self._call(self._database.counts)

    # ------------------------------------------------------------ writes

    async def apply_save(self, plan: SavePlan) -> SaveResult:
        return await self._call(self._database.apply_save, plan)

    async def replay(self, idempotency_key: str) -> SaveResult | None:
        return await self._call(self._database.replay, idempotency_key)

    async def events_with_hash(self, content_hash: str) -> list[str]:
        return await self._call(self._database.events_with_hash, content_hash)

    async def replace_vectors(self, vectors: VectorSet) -> None:
        await self._call(self._database.replace_vectors, vectors)

    async def all_for_revectorize(self) -> tuple[list[Event], list[Entity]]:
        return await self._call(self._database.all_for_revectorize)

    # ------------------------------------------------------------ entity resolution

    async def find_entities(
        self, label: EntityLabel, normalised_names: Iterable[str]
    ) -> list[Entity]:
        entity_label(label)
        return await self._call(self._database.find_entities, label, list(normalised_names))

    async def resolve_terms(self, normalised_term: str) -> frozenset[str]:
        return await self._call(self._database.resolve_terms, normalised_term)

    async def similar_entities(
        self, label: EntityLabel, vector: Vector, k: int, min_cosine: float
    ) -> list[tuple[Entity, float]]:
        return await self._entity_top(label, vector, k, min_cosine)

    async def entity_vector_top(
        self, label: EntityLabel, query: Vector, k: int
    ) -> list[tuple[Entity, float]]:
        return await self._entity_top(label, query, k, None)

    async def _entity_top(
        self, label: EntityLabel, vector: Vector, k: int, min_cosine: float | None
    ) -> list[tuple[Entity, float]]:
        entity_label(label)
        db = self._database
        await self._call(db.catch_up)  # another process may have written (Database.catch_up)
        gen, view = db.generation, db.entities[label]
        q = normalise(vector)
        scored = await self._compute_on(
            view.n * view.dims, lambda: entity_hits(view, gen, db.ann, label, q, k, min_cosine)
        )
        if not scored:
            return []
        found = await self._call(self._database.entities_by_ids, [i for i, _ in scored])
        return [(found[i], s) for i, s in scored if i in found]

    # ------------------------------------------------------------ retrieval routes

    async def route(
        self,
        route: RouteName,
        query: Vector,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
    ) -> list[Hit]:
        if route not in ("summary", "chunk"):
            raise InvalidInput(
                f"unknown route {route!r}; use summary or chunk",
                zh=f"未知检索路线 {route!r}，可用 summary 或 chunk",
            )
        if limit <= 0:
            return []
        db = self._database
        allowed = await self._call(self._route_ready, filters)
        view, gen = db.events, db.generation  # one snapshot for the whole computation
        q = normalise(query)
        cells = (view.n if route == "summary" else view.nc) * view.dims

        def run() -> list[Hit]:
            return route_hits(
                route, view, gen, db.ann, q, filters, exclude, restrict, allowed, limit
            )

        return await self._compute_on(cells, run)

    async def lexical_route(
        self,
        text: str,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
    ) -> list[Hit]:
        terms = _searchable(text, limit, restrict)
        if not terms:
            return []
        return await self._call(self._lexical_now, terms, filters, exclude, restrict, limit)

    def _lexical_now(
        self,
        terms: Sequence[str],
        filters: Filters,
        exclude: frozenset[str],
        restrict: frozenset[str] | None,
        limit: int,
    ) -> list[Hit]:
        """The lexical route after a catch-up (another process may have written), in one trip
        to the database thread."""
        db = self._database
        db.catch_up()
        return db.lexical_hits(terms, filters, exclude, restrict, limit)

    def _route_ready(self, filters: Filters) -> frozenset[str] | None:
        """Catch up with other processes' writes (``Database.catch_up``), then the events of
        the entity filter (None without one): what a vector route reads first, in one trip."""
        db = self._database
        db.catch_up()
        return db.events_in_groups(filters) if filters.groups else None

    async def route_pool(
        self,
        query: Vector,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
        text: str | None = None,
    ) -> RoutePool:
        """Both vector routes in one computation (``pool_hits``: above the ANN threshold each
        rescores both indexes' candidates), the lexical route beside them when ``text`` is
        given, then the events, chunk hashes and concepts of everything they found, read on
        the compute thread (``_pool``): two trips, the catch-up and the computation."""
        if limit <= 0:
            return RoutePool([], [], {}, {})
        db, rows, compute = self._database, self._rows, self._compute
        if rows is None or compute is None:
            raise StoreUnavailable(
                "the embedded store is not open; call open() first", zh="存储未打开"
            )
        allowed = await self._call(self._route_ready, filters)
        view, gen, side = db.events, db.generation, self._side  # one snapshot for all of it
        q = normalise(query)
        terms = _searchable(text, limit, restrict) if text is not None else []

        def lexical() -> list[Hit]:
            mask = event_mask(view, filters, exclude, restrict, allowed)
            with rows.reading() as conn:
                return lexical_hits(conn, terms, view, mask, limit, restrict)

        def run() -> RoutePool:
            later = None
            if terms and side is not None:
                try:  # beside the vector routes, on a connection of its own
                    later = side.submit(rows.run, rows.ticket(), lexical)
                except RuntimeError:  # the store is closing under this search
                    later = None
            summary, chunk = pool_hits(
                view, gen, db.ann, q, filters, exclude, restrict, allowed, limit, side
            )
            found = later.result() if later is not None else lexical() if terms else []
            union = list(dict.fromkeys(h.event_id for h in [*summary, *chunk, *found]))
            if not union:
                return RoutePool(summary, chunk, {}, {}, lexical=found)
            with rows.reading() as conn:
                events, hashes, concepts = pool_rows(conn, view, union)
            return RoutePool(summary, chunk, events, hashes, concepts, found)

        return await _interruptible(rows, compute, run)

    async def window_route(
        self,
        query: Vector,
        seeds: Sequence[str],
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
        *,
        span: int = 1,
        alpha: float = 0.5,
    ) -> list[Hit]:
        return await window_route_by_parts(
            self, query, seeds, filters, exclude, limit, restrict, span=span, alpha=alpha
        )

    async def recent_events(
        self,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
    ) -> list[str]:
        return await self._call(self._database.recent_events, filters, exclude, limit, restrict)

    async def get_events(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Event]:
        return await self._call(self._database.get_events, list(ids), with_vectors)

    async def get_chunks(
        self, event_ids: Sequence[str], *, with_vectors: bool = False
    ) -> dict[str, list[Chunk]]:
        return await self._call(self._database.get_chunks, list(event_ids), with_vectors)

    async def id_counts(self, ids: Sequence[str]) -> dict[str, int]:
        return await self._call(self._database.id_counts, list(ids))

    async def events_mentioning(self, concept_id: str) -> frozenset[str]:
        return await self._call(self._database.events_mentioning, concept_id)

    async def positional_events(self, prefix: str, chapter: str) -> list[str]:
        return await self._call(self._database.positional_events, prefix, chapter)

    # ------------------------------------------------------------ graph reads

    async def get_nodes(self, ids: Sequence[str]) -> list[Node | None]:
        return await self._call(self._database.get_nodes, list(ids))

    async def list_nodes(
        self, label: NodeLabel, where: Where | None, sort: SortSpec, page: Page
    ) -> NodePage:
        if self._reader is None:
            raise StoreUnavailable(
                "the embedded store is not open; call open() first", zh="存储未打开"
            )
        return await self._read(self._reader.list_nodes, label, where, sort, page)

    async def neighbours(
        self,
        node_ids: Sequence[str],
        rel_type: RelType | None,
        direction: Direction,
        limit_per_node: int,
        after: str | None = None,
        before: str | None = None,
        *,
        backward: bool = False,
    ) -> dict[str, list[Neighbour]]:
        return await self._call(
            self._database.neighbours,
            list(node_ids),
            rel_type,
            direction,
            limit_per_node,
            after,
            before,
            backward,
        )

    async def graph(
        self, max_nodes: int, max_relations: int, *, topics: bool = False
    ) -> GraphSnapshot:
        return await self._call(self._database.graph, max_nodes, max_relations, topics)

    # ------------------------------------------------------------ topics

    async def topic_rows(self) -> tuple[list[Topic], list[Binding]]:
        return await self._call(self._database.topic_rows)

    async def event_dates(self) -> list[tuple[str, str]]:
        return await self._call(self._database.event_dates)

    async def topic_changes(self, since: TopicMark | None) -> TopicChanges | None:
        """What changed in the topic and date data since ``since`` (``engine.topics.changes``;
        the current mark alone when None), or None when only a full reload can tell."""
        return await self._call(self._database.topic_changes, since)

    def last_write_marks(self) -> tuple[TopicMark, TopicMark] | None:
        """The topic marks around this store's last committed save or binding."""
        return self._database.write_marks

    async def bind_topic(self, draft: TopicDraft, event_ids: Sequence[str], timestamp: int) -> None:
        await self._call(self._database.bind_topic, draft, list(event_ids), timestamp)

    # ------------------------------------------------------------ deletion

    async def forget(self, event_id: str) -> list[str]:
        return await self._call(self._database.forget, event_id)

    # ------------------------------------------------------------ whole-memory dump

    async def export_records(self, *, vectors: bool = False) -> AsyncIterator[dict[str, Any]]:
        self._database  # noqa: B018  # StoreUnavailable when not open
        async for record in dump.export_records(self.file, vectors):
            yield record

    async def import_records(self, records: Iterable[dict[str, Any]]) -> dict[str, int]:
        db = self._database
        await self._call(db.vectors_changing)
        return await self._call(dump.import_records, db, records)


def _searchable(text: str, limit: int, restrict: frozenset[str] | None) -> list[str]:
    """The lexical route's terms of ``text``; none when there is nothing to look for (no
    terms, no room, or a restriction to no events)."""
    if limit <= 0 or (restrict is not None and not restrict):
        return []
    return lexical_terms(text)
