"""How the Neo4j store reads a retrieval route: an exact scan or its vector index.

Spaces with fewer insertions than ``index_min_events`` are scanned exactly with
``vector.similarity.cosine``; larger ones ask the route's vector index for ``index_overfetch``
x limit candidates, keep this space's events that pass the filters and rescore them exactly.
Whenever that cannot fill the page (entity filters, expand, another width, an index that is not
ONLINE, a crowded fetch even after one larger retry) the exact scan answers. Measured in
bench/results/neo4j.md, decided in docs/DECISIONS.md ("Neo4j routes").

The functions work on a ``Neo4jStore``: its ``_run``, its settings (``index_min_events``,
``index_overfetch``) and its cached index state (``_index_dims``, ``_space_size``,
``_index_seen``, ``_index_lock``).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from neo4j.exceptions import ClientError

from engine.models import Event, Filters, Hit, RouteName, RoutePool, Vector
from engine.store.neo4j import _cypher as q
from engine.store.neo4j import _lexical
from engine.store.neo4j import _records as rec

if TYPE_CHECKING:
    from engine.store.neo4j.store import Neo4jStore

log = logging.getLogger(__name__)

INDEX_MIN_EVENTS = 2_000
INDEX_OVERFETCH = 10
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
    """A route through its vector index, or None when the exact scan must answer: a small
    space, no ONLINE index of the query's width, or fewer than ``limit`` events left of the
    over-fetched candidates once the space and the filters are applied (after at most one
    larger fetch)."""
    index, query = (q.POOL_BY_INDEX if pool else q.BY_INDEX)[route]
    limit = params["limit"]
    if store.index_min_events is None or not await index_usable(store, index, params["d"]):
        return None
    fetch = limit * store.index_overfetch
    while True:
        try:
            found = await store._run(query, {**params, "fetch": fetch})
        except ClientError as exc:  # dropped, rebuilt at another width, populating ...
            log.info("vector index %s unavailable, scanning exactly: %s", index, exc.code)
            store._index_seen = -INDEX_STATE_TTL
            return None
        if len(found) >= limit:
            return found
        # Other spaces crowd the database-wide index, or the filters are selective: ask once
        # more for twice what the survival rate says is needed, if that is not huge.
        needed = fetch * 2 * limit // max(1, len(found))
        if not found or fetch > limit * store.index_overfetch or needed > INDEX_MAX_FETCH:
            return None
        fetch = needed


async def index_usable(store: Neo4jStore, index: str, dims: int) -> bool:
    """Whether ``index`` is ONLINE at width ``dims`` and the space is large enough for it; the
    state is read at most every INDEX_STATE_TTL seconds, once for both routes of a search."""
    assert store.index_min_events is not None
    if time.monotonic() - store._index_seen >= INDEX_STATE_TTL:
        async with store._index_lock:
            if time.monotonic() - store._index_seen >= INDEX_STATE_TTL:
                store._index_dims = {
                    r["name"]: int(r["dims"])
                    for r in await store._run(q.ROUTE_INDEX_STATE)
                    if r["state"] == "ONLINE" and r["dims"]
                }
                size = await store._run(q.SPACE_SIZE)
                store._space_size = int(size[0]["n"] or 0) if size else 0
                store._index_seen = time.monotonic()
    return store._index_dims.get(index) == dims and store._space_size >= store.index_min_events


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
