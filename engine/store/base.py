"""The Store protocol: everything the engine asks of a database.

Two adapters implement it and pass one contract suite (``tests/store/``): ``EmbeddedStore``
(SQLite + numpy, the default) and ``Neo4jStore``. Retrieval code only ever talks to this
protocol, so nothing outside an adapter knows which database is behind it.

Conventions every adapter keeps:
- A store instance is bound to one memory *space* (default ``"default"``); nothing it reads or
  writes crosses into another space.
- ``apply_save`` and ``replace_vectors`` are atomic: all or nothing.
- Similarities returned by the vector routes are **raw cosine** in [-1, 1] (Neo4j's
  ``vector.similarity.cosine`` gives (1+cos)/2; its adapter converts).
- Route ties are broken by event id ascending; ``recent_events`` orders by create_time DESC,
  id DESC.
- Ids are allocated inside the write, per prefix, from a persistent high-water mark: the
  highest N ever allocated or restored (SPEC §1.3.6 says ``1 + max N``; a forgotten id is never
  handed out again, so nothing that still holds it can point at another memory). The marks
  survive forget, revectorize and export/restore (the dump's ``ids`` record).
- Topics (SPEC §2) are graph data beside the four labels: ``Topic`` nodes with SUBTOPIC parent
  links, written by ``apply_save`` from ``plan.topic`` with a BINDS relationship to each event
  it creates. They appear in no entity query, neighbour list or count, only in ``topic_rows``
  and in ``graph(..., topics=True)``. Deleting an event deletes its bindings, not its topics.
- A whole space moves between stores as records (``export_records`` / ``import_records``, the
  format of ``engine.dump``): an import only goes into an empty space and, on any failure,
  leaves it empty again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from mnemoql.engine.drafts import SavePlan, SaveResult, TopicDraft
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


@runtime_checkable
class Store(Protocol):
    """Async storage for one memory space."""

    space: str

    # ---- lifecycle ----
    async def open(self) -> None:
        """Create schema/tables/indexes if missing and load what must be in memory."""

    async def close(self) -> None: ...

    async def ping(self) -> bool:
        """True when the database answers (used by /readyz)."""

    # ---- meta ----
    async def get_meta(self) -> MemoryMeta | None: ...

    async def counts(self) -> Counts: ...

    async def changed_elsewhere(self) -> bool:
        """True when another process committed a write to this space since the last call
        (``mnemoql import`` beside a running service, a second service on one Neo4j). Whatever
        the store mirrors in memory has caught up by then; callers drop their own derived
        state (the topic index). The first call only sets the baseline."""

    # ---- writes ----
    async def apply_save(self, plan: SavePlan) -> SaveResult:
        """Allocate ids, create/merge nodes, relations, chunks and (if absent) MemoryMeta,
        bind the new events to ``plan.topic`` (creating missing Topic nodes, upserting
        BINDS), and record ``plan.idempotency_key`` -- all in one transaction."""

    async def replay(self, idempotency_key: str) -> SaveResult | None:
        """The result recorded for an idempotency key, or None."""

    async def events_with_hash(self, content_hash: str) -> list[str]:
        """Ids of events whose content_hash equals this one, oldest first."""

    async def replace_vectors(self, vectors: VectorSet) -> None:
        """Swap every embedding, rebuild all chunks and set MemoryMeta, atomically; then
        rebuild vector indexes (outside the data transaction where the database needs it)."""

    async def all_for_revectorize(self) -> tuple[list[Event], list[Entity]]:
        """Every event (with content) and entity (with name), for revectorize."""

    # ---- entity resolution (save merging and entity_filter) ----
    async def find_entities(
        self, label: EntityLabel, normalised_names: Iterable[str]
    ) -> list[Entity]:
        """Entities of ``label`` whose normalised name or any normalised alias is in the set."""

    async def resolve_terms(self, normalised_term: str) -> frozenset[str]:
        """Ids of Person/Concept/Location nodes whose normalised name or alias equals the term."""

    async def similar_entities(
        self, label: EntityLabel, vector: Vector, k: int, min_cosine: float
    ) -> list[tuple[Entity, float]]:
        """Top ``k`` entities by raw cosine >= ``min_cosine``, best first."""

    # ---- retrieval routes (exact cosine, filters/exclusions before the cut) ----
    async def route(
        self,
        route: RouteName,
        query: Vector,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
    ) -> list[Hit]:
        """Top ``limit`` distinct events for the summary or chunk route (best chunk per event),
        ordered by cosine DESC then id. ``restrict`` limits candidates to these ids (expand)."""

    async def lexical_route(
        self,
        text: str,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
    ) -> list[Hit]:
        """Top ``limit`` distinct events by BM25 of their best chunk text or summary against
        ``text`` (tokens of ``engine.store.lexical``), score DESC then id, under the same
        filters, exclusions and restriction as ``route``. ``score`` is the BM25 value (higher
        is better; not comparable across stores); a chunk hit carries its range. Served by a
        full-text index derived from the stored texts (rebuilt when missing)."""

    async def route_pool(
        self,
        query: Vector,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
        text: str | None = None,
    ) -> RoutePool:
        """Both vector routes as ``route`` gives them (and, with ``text``, the lexical route),
        every event they hit (with vectors) and its chunks' text hashes: what one ranking step
        reads, in as few round trips as the database allows (``route_pool_by_parts`` is the
        reference)."""

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
        """Positional records scored with their neighbours (``engine.store.window``): the
        ``seeds`` and their neighbours within ``span``, under the same filters, exclusions and
        restriction as ``route``, by the cosine of their window vectors, best ``limit`` first,
        ties by id (``window_route_by_parts`` is the reference)."""

    async def recent_events(
        self,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
    ) -> list[str]:
        """Ids by create_time DESC, id DESC (search without a query vector)."""

    async def get_events(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Event]:
        """Events in the order asked; unknown ids are skipped."""

    async def get_chunks(
        self, event_ids: Sequence[str], *, with_vectors: bool = False
    ) -> dict[str, list[Chunk]]:
        """Chunks per event, by chunk_index."""

    async def id_counts(self, ids: Sequence[str]) -> dict[str, int]:
        """How many nodes carry each id (0 when deleted; >1 would be a broken invariant)."""

    async def events_mentioning(self, concept_id: str) -> frozenset[str]:
        """Ids of events that MENTION this concept."""

    async def positional_events(self, prefix: str, chapter: str) -> list[str]:
        """Ids ``{prefix}_ch{chapter}_e{N}`` with the literal chapter token."""

    async def entity_vector_top(
        self, label: EntityLabel, query: Vector, k: int
    ) -> list[tuple[Entity, float]]:
        """Top ``k`` entities of ``label`` by raw cosine (targeted search)."""

    # ---- graph reads (GraphQL) ----
    async def get_nodes(self, ids: Sequence[str]) -> list[Node | None]:
        """Nodes in the order asked, None for unknown ids (DataLoader batch)."""

    async def list_nodes(
        self, label: NodeLabel, where: Where | None, sort: SortSpec, page: Page
    ) -> NodePage:
        """Keyset-paged nodes of one label. ``sort`` names a field of QUERYABLE_FIELDS."""

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
        """Relationships of each node, ordered by (type, other id), at most ``limit_per_node``
        each, starting after other id ``after`` (keyset). ``backward`` (implied by ``before``):
        the last ``limit_per_node`` of them instead -- of those whose other id is below
        ``before``, when given -- still in that order. ``after`` is forward only."""

    async def graph(
        self, max_nodes: int, max_relations: int, *, topics: bool = False
    ) -> GraphSnapshot:
        """SPEC §1.13: nodes by label then id, relations only between returned nodes.

        With ``topics``, Topic nodes (by id) follow the four labels within ``max_nodes``, and
        SUBTOPIC / BINDS relationships join the others, all ordered by (type, source, target)."""

    # ---- topics (SPEC §2) ----
    async def topic_rows(self) -> tuple[list[Topic], list[Binding]]:
        """Every Topic node by creation order, and every binding by its event's insertion order
        (then the topic's): what rebuilds the in-memory topic index."""

    async def event_dates(self) -> list[tuple[str, str]]:
        """``(event id, create_date)`` of every event in insertion order (the date index)."""

    async def bind_topic(
        self, draft: TopicDraft, event_ids: Sequence[str], timestamp: int
    ) -> None:
        """Bind existing events to ``draft.path`` at ``timestamp`` (ms), in one transaction:
        missing Topic nodes are created; an existing (topic, event) binding gets the new
        timestamp and profile and the related paths merged in order. NotFound if an id is not
        an event of this space."""

    # ---- deletion ----
    async def forget(self, event_id: str) -> list[str]:
        """Delete an event, its chunks and entities left with no event; return deleted ids."""

    # ---- whole-memory dump (engine.dump) ----
    def export_records(self, *, vectors: bool = False) -> AsyncIterator[dict[str, Any]]:
        """Every record of the space in the order and shape of ``engine.dump`` (no header or
        end line; ``embedding`` a float32 vector, only with ``vectors``)."""

    async def import_records(self, records: Iterable[dict[str, Any]]) -> dict[str, int]:
        """Write checked records (``engine.dump.DumpReader.records``) into this space and
        return how many of each kind. Conflict, with nothing written, when the space holds
        anything; on any error the space is left empty again (one transaction, or batches
        undone -- see the adapter)."""


async def route_pool_by_parts(
    store: Store,
    query: Vector,
    filters: Filters,
    exclude: frozenset[str],
    limit: int,
    restrict: frozenset[str] | None = None,
    text: str | None = None,
) -> RoutePool:
    """``Store.route_pool`` composed of the other reads: the routes side by side, then their
    events and chunks. Right for a store in the same process, where a read is cheap."""
    summary, chunk, lexical = await asyncio.gather(
        store.route("summary", query, filters, exclude, limit, restrict),
        store.route("chunk", query, filters, exclude, limit, restrict),
        no_hits()
        if text is None
        else store.lexical_route(text, filters, exclude, limit, restrict),
    )
    union = list(dict.fromkeys(h.event_id for h in [*summary, *chunk, *lexical]))
    if not union:
        return RoutePool(summary, chunk, {}, {}, lexical=lexical)
    events = {e.id: e for e in await store.get_events(union, with_vectors=True)}
    chunks = await store.get_chunks(list(events))
    hashes = {i: frozenset(c.text_hash for c in cs) for i, cs in chunks.items()}
    return RoutePool(summary, chunk, events, hashes, lexical=lexical)


async def no_hits() -> list[Hit]:
    """An awaitable empty route (a route not asked for, beside the others in a gather)."""
    return []
