"""How the Neo4j store reads a retrieval route: an exact scan or a vector index.

Spaces with fewer insertions than ``index_min_events`` are scanned exactly with
``vector.similarity.cosine``; larger ones ask a vector index for ``index_overfetch`` x limit
candidates, keep this space's events that pass the filters and rescore them exactly. The index
is the space's own one (``_cypher.space_schema``) once it is ONLINE; before that (while it
populates, or with ``space_indexes`` off) the database-wide one, whose fetch is multiplied by
how crowded it is (all events / this space's), as other spaces' vectors take their share of
every fetch. Whenever that cannot fill the page (entity filters, expand, another width, no
ONLINE index, a shared index too crowded for one fetch, too few survivors even after one larger
retry) the exact scan answers. Measured in bench/results/neo4j.md and neo4j_spaces.md, decided
in docs/DECISIONS.md ("Neo4j routes").

The functions work on a ``Neo4jStore``: its ``_run``, its settings (``index_min_events``,
``index_overfetch``, ``space_indexes``, ``share_fetch``), its ``space_names`` and its cached
index state (``_index_dims``, ``_space_size``, ``_total_events``, ``_index_seen``,
``_index_lock``, ``_state_task``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import TYPE_CHECKING, Any

from neo4j.exceptions import ClientError

from mnemoql.engine.models import Event, Filters, Hit, RouteName, RoutePool, Vector
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _lexical
from mnemoql.engine.store.neo4j import _records as rec

if TYPE_CHECKING:
    from mnemoql.engine.store.neo4j.store import Neo4jStore

log = logging.getLogger(__name__)

INDEX_MIN_EVENTS = 2_000
INDEX_OVERFETCH = 15  # k x 10: 97 % same evidence at 100k (neo4j_spaces.md run 4)
INDEX_MAX_FETCH = 4_000  # the most candidates one retry may ask the index for
INDEX_STATE_TTL = 30.0  # seconds between reads of the index state and the space size

Row = dict[str, Any]


async def rows(
    store: Neo4jStore,
    route: RouteName,
    query: Vector,
    filters: Filters,
    exclude: frozenset[str],
    limit: int,
    restrict: frozenset[str] | None,
    pool: bool,
) -> list[Row]:
    """The route's rows, through the index when it can answer, else by the exact scan; with
    ``pool`` the rows also carry what ranking reads (``_cypher.with_pool``)."""
    if limit <= 0 or (restrict is not None and not restrict):
        return []
    values, zero = rec.query_param(query)
    params = {
        **rec.filter_params(filters, exclude, restrict),
        "q": values, "qzero": zero, "d": len(values), "limit": int(limit),
    }  # fmt: skip
    if restrict is None and not filters.groups and not zero:
        found = await _by_index(store, route, params, pool)
        if found is not None:
            return found
    scan = q.POOL_ROUTES if pool else q.ROUTES
    return await store._run(scan[(route, restrict is not None)], params)


async def _by_index(
    store: Neo4jStore, route: RouteName, params: dict[str, Any], pool: bool
) -> list[Row] | None:
    """A route through a vector index, or None when the exact scan must answer: a small space,
    no ONLINE index of the query's width, a database-wide index so crowded by other spaces that
    one fetch cannot reach this space's share, or fewer than ``limit`` events left of the
    over-fetched candidates once the space and the filters are applied (after at most one
    larger fetch)."""
    query = (q.POOL_BY_INDEX if pool else q.BY_INDEX)[route][1]
    limit = params["limit"]
    if store.index_min_events is None:
        return None
    choice = await choose_index(store, route, params["d"])
    if choice is None:
        return None
    index, crowding = choice
    first = math.ceil(limit * store.index_overfetch * crowding)
    if first > INDEX_MAX_FETCH:
        return None
    fetch = first
    while True:
        try:
            found = await store._run(query, {**params, "index": index, "fetch": fetch})
        except ClientError as exc:  # dropped, rebuilt at another width, populating ...
            log.info("vector index %s unavailable, scanning exactly: %s", index, exc.code)
            store._index_seen = -INDEX_STATE_TTL
            return None
        if len(found) >= limit:
            return found
        # The filters are selective (or the shared index is more crowded than the counts said):
        # ask once more for twice what the survival rate says is needed, if that is not huge.
        needed = fetch * 2 * limit // max(1, len(found))
        if not found or fetch > first or needed > INDEX_MAX_FETCH:
            return None
        fetch = needed


async def choose_index(store: Neo4jStore, route: RouteName, dims: int) -> tuple[str, float] | None:
    """The index a route of this space reads, and how crowded it is by other spaces (the fetch
    is multiplied by that): the space's own index when it is ONLINE at width ``dims`` (1), else
    the database-wide one (all events / this space's), else None (small space, no index)."""
    assert store.index_min_events is not None
    await _read_state(store)
    if store._space_size < store.index_min_events:
        return None
    own = store.space_names.events_index if route == "summary" else store.space_names.chunks_index
    if store.space_indexes and store._index_dims.get(own) == dims:
        return own, 1.0
    shared = q.GLOBAL_ROUTE_INDEXES[0 if route == "summary" else 1]
    if store._index_dims.get(shared) != dims:
        return None
    crowding = max(1.0, store._total_events / store._space_size) if store.share_fetch else 1.0
    return shared, crowding


async def index_usable(store: Neo4jStore, index: str, dims: int) -> bool:
    """Whether ``index`` is ONLINE at width ``dims`` and the space is large enough for it."""
    assert store.index_min_events is not None
    await _read_state(store)
    return store._index_dims.get(index) == dims and store._space_size >= store.index_min_events


async def _read_state(store: Neo4jStore) -> None:
    """The route indexes' state, the space's size and the database's event count, read at most
    every INDEX_STATE_TTL seconds, once for both routes of a search. When a reading merely
    aged (not invalidated: ``_index_seen`` set negative after an index change or failure),
    the search goes on with it and the new one is read beside it: two sequential round trips
    (SHOW VECTOR INDEXES among them, 0.4-0.9 s at load 6-10) no longer fall on every
    INDEX_STATE_TTL-th search. A stale reading is safe: a vanished index fails its query and
    the route scans exactly; a new one is used at the next reading."""
    if time.monotonic() - store._index_seen < INDEX_STATE_TTL:
        return
    if store._index_seen >= 0:  # aged, not invalidated
        task = store._state_task
        if task is None or task.done():
            store._state_task = asyncio.create_task(_refresh_quietly(store))
        return
    await _refresh(store)


async def _refresh_quietly(store: Neo4jStore) -> None:
    try:
        await _refresh(store)
    except Exception as exc:  # the next search reads it again (the reading stays aged)
        log.info("reading the vector index state failed: %s", exc)


async def _refresh(store: Neo4jStore) -> None:
    async with store._index_lock:
        if time.monotonic() - store._index_seen < INDEX_STATE_TTL:
            return
        names = [*q.GLOBAL_ROUTE_INDEXES, *store.space_names[2:4]]
        dims = {
            r["name"]: int(r["dims"])
            for r in await store._run(q.ROUTE_INDEX_STATE, {"names": names})
            if r["state"] == "ONLINE" and r["dims"]
        }
        size = await store._run(q.SPACE_SIZE)
        store._index_dims = dims
        store._space_size = int(size[0]["n"] or 0) if size else 0
        store._total_events = int(size[0]["total"] or 0) if size else 0
        store._index_seen = time.monotonic()


def hit(route: RouteName, r: Row) -> Hit:
    if route == "summary":
        return Hit(r["id"], rec.raw_cosine(r["score"]))
    return Hit(r["id"], rec.raw_cosine(r["score"]), int(r["i"]), int(r["start"]), int(r["end"]))


def pool(summary: list[Row], chunk: list[Row], lexical: list[Row] | None = None) -> RoutePool:
    """A RoutePool from the routes' pool rows (an event hit by several is read once)."""
    events: dict[str, Event] = {}
    hashes: dict[str, frozenset[str]] = {}
    concepts: dict[str, tuple[tuple[str, str], ...]] = {}
    for r in [*summary, *chunk, *(lexical or [])]:
        if r["id"] not in events:
            events[r["id"]] = rec.event(r["ev"], True)
            hashes[r["id"]] = frozenset(r["hashes"])
            concepts[r["id"]] = tuple((c[0], c[1]) for c in r["cs"])
    return RoutePool(
        [hit("summary", r) for r in summary],
        [hit("chunk", r) for r in chunk],
        events,
        hashes,
        concepts,
        [_lexical.hit(r) for r in lexical or []],
    )
