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

The functions work on a store's ``IndexState``: its ``Runner``, the store's settings
(``Tuning``), the space's index names and the index state last read (the schema calls
``invalidate`` when an index changes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from typing import Any, Protocol

from neo4j.exceptions import ClientError

from mnemoql.engine.models import Event, Filters, Hit, RouteName, RoutePool, Vector
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_route as qroute
from mnemoql.engine.store.neo4j import _lexical
from mnemoql.engine.store.neo4j import _records as rec
from mnemoql.engine.store.neo4j._runner import Runner

log = logging.getLogger(__name__)

INDEX_MIN_EVENTS = 2_000
INDEX_OVERFETCH = 15  # k x 10: 97 % same evidence at 100k (neo4j_spaces.md run 4)
INDEX_MAX_FETCH = 4_000  # the most candidates one retry may ask the index for
INDEX_STATE_TTL = 30.0  # seconds between reads of the index state and the space size

Row = dict[str, Any]


class Tuning(Protocol):
    """The index settings of a store (its attributes: tests and benchmarks change them)."""

    index_min_events: int | None
    index_overfetch: int
    space_indexes: bool
    share_fetch: bool


class IndexState:
    """What the routes of one store's space read through, and the index state last read."""

    def __init__(self, runner: Runner, names: q.SpaceSchema, tuning: Tuning) -> None:
        self.runner = runner
        self.names = names
        self.tuning = tuning
        self.seen = -INDEX_STATE_TTL  # monotonic time of the last state read
        self.dims: dict[str, int] = {}  # width of each ONLINE route index
        self.space_size = 0
        self.total_events = 0  # events of every space (they share the database-wide index)
        self.lock = asyncio.Lock()
        self.task: asyncio.Task[None] | None = None  # a reading of the index state

    def invalidate(self) -> None:
        """An index changed: the next route reads the state first."""
        self.seen = -INDEX_STATE_TTL

    async def close(self) -> None:
        task, self.task = self.task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def rows(
    state: IndexState,
    route: RouteName,
    query: Vector,
    filters: Filters,
    exclude: frozenset[str],
    limit: int,
    restrict: frozenset[str] | None,
    pool: bool,
) -> list[Row]:
    """The route's rows, through the index when it can answer, else by the exact scan; with
    ``pool`` the rows also carry what ranking reads (``_cypher_route.with_pool``)."""
    if limit <= 0 or (restrict is not None and not restrict):
        return []
    values, zero = rec.query_param(query)
    params = {
        **rec.filter_params(filters, exclude, restrict),
        "q": values, "qzero": zero, "d": len(values), "limit": int(limit),
    }  # fmt: skip
    if restrict is None and not filters.groups and not zero:
        found = await _by_index(state, route, params, pool)
        if found is not None:
            return found
    scan = qroute.POOL_ROUTES if pool else qroute.ROUTES
    return await state.runner.run(scan[(route, restrict is not None)], params)


async def _by_index(
    state: IndexState, route: RouteName, params: dict[str, Any], pool: bool
) -> list[Row] | None:
    """A route through a vector index, or None when the exact scan must answer: a small space,
    no ONLINE index of the query's width, a database-wide index so crowded by other spaces that
    one fetch cannot reach this space's share, or fewer than ``limit`` events left of the
    over-fetched candidates once the space and the filters are applied (after at most one
    larger fetch)."""
    query = (qroute.POOL_BY_INDEX if pool else qroute.BY_INDEX)[route][1]
    limit = params["limit"]
    if state.tuning.index_min_events is None:
        return None
    choice = await choose_index(state, route, params["d"])
    if choice is None:
        return None
    index, crowding = choice
    first = math.ceil(limit * state.tuning.index_overfetch * crowding)
    if first > INDEX_MAX_FETCH:
        return None
    fetch = first
    while True:
        try:
            found = await state.runner.run(query, {**params, "index": index, "fetch": fetch})
        except ClientError as exc:  # dropped, rebuilt at another width, populating ...
            log.info("vector index %s unavailable, scanning exactly: %s", index, exc.code)
            state.seen = -INDEX_STATE_TTL
            return None
        if len(found) >= limit:
            return found
        # The filters are selective (or the shared index is more crowded than the counts said):
        # ask once more for twice what the survival rate says is needed, if that is not huge.
        needed = fetch * 2 * limit // max(1, len(found))
        if not found or fetch > first or needed > INDEX_MAX_FETCH:
            return None
        fetch = needed


async def choose_index(state: IndexState, route: RouteName, dims: int) -> tuple[str, float] | None:
    """The index a route of this space reads, and how crowded it is by other spaces (the fetch
    is multiplied by that): the space's own index when it is ONLINE at width ``dims`` (1), else
    the database-wide one (all events / this space's), else None (small space, no index)."""
    assert state.tuning.index_min_events is not None
    await _read_state(state)
    if state.space_size < state.tuning.index_min_events:
        return None
    own = state.names.events_index if route == "summary" else state.names.chunks_index
    if state.tuning.space_indexes and state.dims.get(own) == dims:
        return own, 1.0
    shared = qroute.GLOBAL_ROUTE_INDEXES[0 if route == "summary" else 1]
    if state.dims.get(shared) != dims:
        return None
    crowding = max(1.0, state.total_events / state.space_size) if state.tuning.share_fetch else 1.0
    return shared, crowding


async def index_usable(state: IndexState, index: str, dims: int) -> bool:
    """Whether ``index`` is ONLINE at width ``dims`` and the space is large enough for it."""
    assert state.tuning.index_min_events is not None
    await _read_state(state)
    return state.dims.get(index) == dims and state.space_size >= state.tuning.index_min_events


async def _read_state(state: IndexState) -> None:
    """The route indexes' state, the space's size and the database's event count, read at most
    every INDEX_STATE_TTL seconds, once for both routes of a search. When a reading merely
    aged (not invalidated: ``_index_seen`` set negative after an index change or failure),
    the search goes on with it and the new one is read beside it: two sequential round trips
    (SHOW VECTOR INDEXES among them, 0.4-0.9 s at load 6-10) no longer fall on every
    INDEX_STATE_TTL-th search. A stale reading is safe: a vanished index fails its query and
    the route scans exactly; a new one is used at the next reading."""
    if time.monotonic() - state.seen < INDEX_STATE_TTL:
        return
    if state.seen >= 0:  # aged, not invalidated
        task = state.task
        if task is None or task.done():
            state.task = asyncio.create_task(_refresh_quietly(state))
        return
    await _refresh(state)


async def _refresh_quietly(state: IndexState) -> None:
    try:
        await _refresh(state)
    except Exception as exc:  # the next search reads it again (the reading stays aged)
        log.info("reading the vector index state failed: %s", exc)


async def _refresh(state: IndexState) -> None:
    async with state.lock:
        if time.monotonic() - state.seen < INDEX_STATE_TTL:
            return
        names = [*qroute.GLOBAL_ROUTE_INDEXES, *state.names[2:4]]
        dims = {
            r["name"]: int(r["dims"])
            for r in await state.runner.run(qroute.ROUTE_INDEX_STATE, {"names": names})
            if r["state"] == "ONLINE" and r["dims"]
        }
        size = await state.runner.run(qroute.SPACE_SIZE)
        state.dims = dims
        state.space_size = int(size[0]["n"] or 0) if size else 0
        state.total_events = int(size[0]["total"] or 0) if size else 0
        state.seen = time.monotonic()


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
