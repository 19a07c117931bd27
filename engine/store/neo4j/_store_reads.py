"""The reads of ``Neo4jStore`` (``store``): meta and counts, idempotency records and
duplicates, entity lookups, the retrieval routes, the graph and the topics. Like the store's
other methods, each hands its work to the module of its concept (``_reads``, ``_names``,
``_routes``, ``_lexical``, ``_changes``); nothing here writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from mnemoql.engine.drafts import SaveResult
from mnemoql.engine.errors import InvalidInput
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
    Where,
)
from mnemoql.engine.store import rules
from mnemoql.engine.store.neo4j import _changes as changes
from mnemoql.engine.store.neo4j import _cypher_read as qread
from mnemoql.engine.store.neo4j import _lexical as lexical
from mnemoql.engine.store.neo4j import _reads as reads
from mnemoql.engine.store.neo4j import _records as rec
from mnemoql.engine.store.neo4j import _routes as routes
from mnemoql.engine.store.neo4j._names import Names
from mnemoql.engine.store.neo4j._runner import Runner, T, TxFn
from mnemoql.engine.topics.changes import TopicChanges, TopicMark


class StoreReads:
    """The reads of the Store protocol over one space; ``Neo4jStore`` sets the runner, the
    space, its route index state and its name lookups."""

    runner: Runner
    space: str
    index: routes.IndexState
    names: Names

    # ------------------------------------------------------------ plumbing

    async def _run(
        self, query: str, params: dict[str, Any] | None = None, *, writable: bool = False
    ) -> list[dict[str, Any]]:
        """One statement in its own managed transaction (``Runner.run``)."""
        return await self.runner.run(query, params, writable=writable)

    async def _read(self, fn: TxFn[T]) -> T:
        return await self.runner.read(fn)

    # ------------------------------------------------------------ meta

    async def get_meta(self) -> MemoryMeta | None:
        rows = await self._run(qread.GET_META)
        return rec.meta(rows[0]["m"]) if rows else None

    async def counts(self) -> Counts:
        return await reads.counts(self.runner)

    # ------------------------------------------------------------ replays, duplicates, re-vectorize

    async def replay(self, idempotency_key: str) -> SaveResult | None:
        rows = await self._run(qread.GET_RECORD, {"key": idempotency_key})
        return rules.json_result(rows[0]["result"]) if rows else None

    async def events_with_hash(self, content_hash: str) -> list[str]:
        rows = await self._run(qread.EVENTS_WITH_HASH, {"hash": content_hash})
        return [r["id"] for r in rows]

    async def all_for_revectorize(self) -> tuple[list[Event], list[Entity]]:
        return await reads.all_for_revectorize(self.runner)

    # ------------------------------------------------------------ entity resolution

    async def find_entities(
        self, label: EntityLabel, normalised_names: Iterable[str]
    ) -> list[Entity]:
        return await self.names.find_entities(label, normalised_names)

    async def resolve_terms(self, normalised_term: str) -> frozenset[str]:
        return await self.names.resolve_terms(normalised_term)

    async def similar_entities(
        self, label: EntityLabel, vector: Vector, k: int, min_cosine: float
    ) -> list[tuple[Entity, float]]:
        return await reads.entity_top(self.runner, label, vector, k, min_cosine)

    async def entity_vector_top(
        self, label: EntityLabel, query: Vector, k: int
    ) -> list[tuple[Entity, float]]:
        return await reads.entity_top(self.runner, label, query, k, None)

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
        rows = await routes.rows(self.index, route, query, filters, exclude, limit, restrict, False)
        return [routes.hit(route, r) for r in rows]

    async def lexical_route(
        self,
        text: str,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
    ) -> list[Hit]:
        rows = await lexical.rows(self.runner, text, filters, exclude, limit, restrict, False)
        return [lexical.hit(r) for r in rows]

    async def route_pool(
        self,
        query: Vector,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
        text: str | None = None,
    ) -> RoutePool:
        """The routes side by side, each query returning its events with their vectors and
        chunk hashes: one round trip of two (three with ``text``) concurrent queries."""
        summary, chunk, lex = await asyncio.gather(
            routes.rows(self.index, "summary", query, filters, exclude, limit, restrict, True),
            routes.rows(self.index, "chunk", query, filters, exclude, limit, restrict, True),
            _none()
            if text is None
            else lexical.rows(self.runner, text, filters, exclude, limit, restrict, True),
        )
        return routes.pool(summary, chunk, lex)

    async def _index_usable(self, index: str, dims: int) -> bool:
        return await routes.index_usable(self.index, index, dims)

    async def recent_events(
        self,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
    ) -> list[str]:
        return await reads.recent_events(self.runner, filters, exclude, limit, restrict)

    async def get_events(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Event]:
        return await reads.get_events(self.runner, ids, with_vectors)

    async def get_chunks(
        self, event_ids: Sequence[str], *, with_vectors: bool = False
    ) -> dict[str, list[Chunk]]:
        return await reads.get_chunks(self.runner, event_ids, with_vectors)

    async def id_counts(self, ids: Sequence[str]) -> dict[str, int]:
        return await reads.id_counts(self.runner, ids)

    async def events_mentioning(self, concept_id: str) -> frozenset[str]:
        return await reads.events_mentioning(self.runner, concept_id)

    async def positional_events(self, prefix: str, chapter: str) -> list[str]:
        return await reads.positional_events(self.runner, prefix, chapter)

    # ------------------------------------------------------------ graph reads

    async def get_nodes(self, ids: Sequence[str]) -> list[Node | None]:
        return await reads.get_nodes(self.runner, ids)

    async def list_nodes(
        self, label: NodeLabel, where: Where | None, sort: SortSpec, page: Page
    ) -> NodePage:
        return await reads.list_nodes(self.runner, label, where, sort, page)

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
        return await reads.neighbours(
            self.runner, node_ids, rel_type, direction, limit_per_node, after, before, backward
        )

    async def graph(
        self, max_nodes: int, max_relations: int, *, topics: bool = False
    ) -> GraphSnapshot:
        return await reads.graph(self.runner, max_nodes, max_relations, topics)

    # ------------------------------------------------------------ topics

    async def topic_rows(self) -> tuple[list[Topic], list[Binding]]:
        return await reads.topic_rows(self.runner)

    async def event_dates(self) -> list[tuple[str, str]]:
        rows = await self._run(qread.EVENT_DATES)
        return [(r["id"], r["day"]) for r in rows]

    async def topic_changes(self, since: TopicMark | None) -> TopicChanges | None:
        """What another process changed in the topic and date data since ``since`` (None:
        reload in full; ``_changes``)."""
        return await self._read(lambda tx: changes.topic_changes(tx, self.space, since))

    def last_write_marks(self) -> tuple[TopicMark, TopicMark] | None:
        """None: this process's own writes are read again by the next catch-up (a few rows;
        Neo4j has no snapshot to read the marks around a write in)."""
        return None


async def _none() -> list[dict[str, Any]]:
    return []
