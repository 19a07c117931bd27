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
    entity filter has to be resolved through the relations table. The threads are
    ``_threads``; which part of a route runs on which of them is ``_routes``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from mnemoql.engine.drafts import SavePlan, SaveResult, TopicDraft
from mnemoql.engine.errors import InvalidInput, StorageFault
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
    SortSpec,
    Topic,
    Vector,
    VectorSet,
    Where,
)
from mnemoql.engine.store.embedded import _dump as dump
from mnemoql.engine.store.embedded import _routes as routes
from mnemoql.engine.store.embedded._ann import AnnSettings
from mnemoql.engine.store.embedded._db import Database
from mnemoql.engine.store.embedded._reads import Reads
from mnemoql.engine.store.embedded._sessions import SqliteState, state_file
from mnemoql.engine.store.embedded._threads import Threads, not_open
from mnemoql.engine.store.faults import probe_write
from mnemoql.engine.store.rules import entity_label
from mnemoql.engine.store.window import window_route_by_parts
from mnemoql.engine.topics.changes import TopicChanges, TopicMark

__all__ = ["EmbeddedStore"]

P = ParamSpec("P")
T = TypeVar("T")

DB_SUFFIXES = frozenset({".db", ".sqlite", ".sqlite3"})
SPACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


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
        self.threads = Threads(space)  # the database, reader, compute and side threads
        self._open_lock = asyncio.Lock()  # binds to no loop until first used
        self._caught_up = 0  # Database.caught_up at the last changed_elsewhere()

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
        """Run ``fn`` on the database thread (``Threads.call``)."""
        return await self.threads.call(fn, *args, **kwargs)

    async def _read(
        self, fn: Callable[Concatenate[Reads, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run the read ``fn`` beside the database thread (``Threads.read_committed``)."""
        return await self.threads.read_committed(fn, *args, **kwargs)

    @property
    def interrupted(self) -> int:
        """Statements stopped because their caller gave up, on both connections."""
        return self.threads.interrupted

    @property
    def _database(self) -> Database:
        return self.threads.database

    # ------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """Create the directory, database and tables if missing; load the vector mirrors."""
        async with self._open_lock:
            if self.threads.db is None:
                await self.threads.open(self.file, self._hint, self._ann)

    async def close(self) -> None:
        if self._sessions is not None:
            await self._sessions.close()
        await self.threads.close()

    async def ping(self) -> bool:
        db = self.threads.db
        if db is None:
            return False
        try:
            return await self._call(db.ping)
        except Exception:
            return False

    async def write_fault(self) -> StorageFault | None:
        """``STORAGE_FULL`` / ``STORAGE_BUSY`` when a write would be refused now, else None
        (``/readyz``; ``engine.store.faults.probe_write``)."""
        if self.threads.db is None:
            return None
        # While this store's own writer works (a revectorize, a large import) the write lock
        # may be ours: probing it would call our own work STORAGE_BUSY. Another process's
        # lock then surfaces in that work itself, as STORAGE_BUSY on the request.
        lock = self.threads.calls_in_flight == 0
        return await asyncio.to_thread(probe_write, self.file, lock=lock)

    # ------------------------------------------------------------ meta

    async def get_meta(self) -> MemoryMeta | None:
        return await self._read(Reads.get_meta)

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
        return await self._read(Reads.resolve_terms, normalised_term)

    async def similar_entities(
        self, label: EntityLabel, vector: Vector, k: int, min_cosine: float
    ) -> list[tuple[Entity, float]]:
        return await routes.entity_top(self.threads, label, vector, k, min_cosine)

    async def entity_vector_top(
        self, label: EntityLabel, query: Vector, k: int
    ) -> list[tuple[Entity, float]]:
        return await routes.entity_top(self.threads, label, query, k, None)

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
        return await routes.route(self.threads, route, query, filters, exclude, limit, restrict)

    async def lexical_route(
        self,
        text: str,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
    ) -> list[Hit]:
        return await routes.lexical_route(self.threads, text, filters, exclude, limit, restrict)

    async def route_pool(
        self,
        query: Vector,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
        text: str | None = None,
    ) -> RoutePool:
        """Both vector routes and the lexical one, with their candidates' rows
        (``_routes.route_pool``)."""
        return await routes.route_pool(self.threads, query, filters, exclude, limit, restrict, text)

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
        return await self._read(Reads.recent_events, filters, exclude, limit, restrict)

    async def get_events(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Event]:
        return await self._read(Reads.get_events, list(ids), with_vectors)

    async def get_chunks(
        self, event_ids: Sequence[str], *, with_vectors: bool = False
    ) -> dict[str, list[Chunk]]:
        return await self._read(Reads.get_chunks, list(event_ids), with_vectors)

    async def id_counts(self, ids: Sequence[str]) -> dict[str, int]:
        return await self._read(Reads.id_counts, list(ids))

    async def events_mentioning(self, concept_id: str) -> frozenset[str]:
        return await self._read(Reads.events_mentioning, concept_id)

    async def positional_events(self, prefix: str, chapter: str) -> list[str]:
        return await self._read(Reads.positional_events, prefix, chapter)

    # ------------------------------------------------------------ graph reads

    async def get_nodes(self, ids: Sequence[str]) -> list[Node | None]:
        return await self._read(Reads.get_nodes, list(ids))

    async def list_nodes(
        self, label: NodeLabel, where: Where | None, sort: SortSpec, page: Page
    ) -> NodePage:
        reader = self.threads.reader
        if reader is None:
            raise not_open()
        return await self.threads.read(reader.list_nodes, label, where, sort, page)

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
        return await self._read(
            Reads.neighbours,
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
