"""The Neo4j routes' strategy: an exact scan for small spaces, the route's vector index
(over-fetch, filter, exact rescoring) for large ones, and the exact scan again whenever the
index cannot answer for sure. Live tests need ``MNEMOQL_TEST_NEO4J_*`` (see factory_neo4j.py).

The threshold is lowered so a few hundred events take the index path (the space's own indexes,
see test_neo4j_spaces.py for many spaces); the vectors use whatever width the database-wide
index already has, so the shared index can answer too.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest

from mnemoql.engine.models import EMPTY_FILTERS, Filters, Hit, MemoryMeta, RouteName
from mnemoql.engine.store.base import route_pool_by_parts
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_route as qroute
from mnemoql.engine.store.neo4j.store import Neo4jStore
from tests.store import factory_neo4j
from tests.store._builders import concept, event, plan, rel

EVENTS = 300


@pytest.fixture
async def spaces() -> AsyncIterator[tuple[Neo4jStore, Neo4jStore, list[str], int]]:
    """The same fresh space through an index-routing store and an exact-only store, holding
    EVENTS events of the event index's width over two days; (index, exact, ids, width)."""
    reason = factory_neo4j.unreachable()
    if reason is not None:
        pytest.skip(f"neo4j store unavailable: {reason}")
    t = factory_neo4j.target()
    assert t is not None
    space = f"t{uuid.uuid4().hex[:12]}"
    indexed = Neo4jStore(t.uri, t.user, t.password, t.database, space=space, index_min_events=50)
    exact = Neo4jStore(t.uri, t.user, t.password, t.database, space=space, index_min_events=None)
    await indexed.open()
    await exact.open()
    try:
        names = {"names": list(qroute.GLOBAL_ROUTE_INDEXES)}
        state = {r["name"]: r["dims"] for r in await indexed._run(qroute.ROUTE_INDEX_STATE, names)}
        dims = int(state.get(q.VECTOR_INDEXES["Event"]) or 16)
        rng = np.random.default_rng(11)
        vecs = rng.standard_normal((EVENTS, 3, dims)).astype(np.float32)
        meta = MemoryMeta("test-embedder", dims, "2026-03-01T09:00:00+08:00")
        ids: list[str] = []
        for day, part in (("2026-03-01", vecs[: EVENTS // 2]), ("2026-03-02", vecs[EVENTS // 2 :])):
            p = plan(
                [event(f"e{i}", v[0], chunk_vectors=v[1 : 2 + i % 2]) for i, v in enumerate(part)],
                [concept("c", "graph")] if not ids else [],
                [rel("MENTIONS", "e0", "c")] if not ids else [],
                meta=meta,
                day=day,
            )
            ids += (await indexed.apply_save(p)).event_ids
        await indexed._run("CALL db.awaitIndexes(120)")
        yield indexed, exact, ids, dims
    finally:
        await indexed.drop_space()
        await indexed.close()
        await exact.close()


def record_queries(store: Neo4jStore) -> list[str]:
    seen: list[str] = []
    run = store.runner.run

    async def spy(query: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        seen.append(query)
        return await run(query, params, **kw)

    store.runner.run = spy  # type: ignore[method-assign]
    return seen


def same(a: list[Hit], b: list[Hit]) -> None:
    assert [(h.event_id, h.chunk_index, h.start, h.end) for h in a] == [
        (h.event_id, h.chunk_index, h.start, h.end) for h in b
    ]
    assert np.allclose([h.score for h in a], [h.score for h in b], atol=1e-6)


@pytest.mark.parametrize("route", ["summary", "chunk"])
async def test_a_large_space_routes_through_the_index_with_exact_scores(
    spaces: tuple[Neo4jStore, Neo4jStore, list[str], int], route: RouteName
) -> None:
    indexed, exact, ids, dims = spaces
    seen = record_queries(indexed)
    rng = np.random.default_rng(3)
    for _ in range(10):
        query = rng.standard_normal(dims).astype(np.float32)
        got = await indexed.route(route, query, EMPTY_FILTERS, frozenset(), 40)
        same(got, await exact.route(route, query, EMPTY_FILTERS, frozenset(), 40))
    assert seen.count(qroute.BY_INDEX[route][1]) == 10
    assert qroute.ROUTES[(route, False)] not in seen
    # date filters and exclusions are applied to the fetched candidates
    query = rng.standard_normal(dims).astype(np.float32)
    excluded = frozenset(ids[:20])
    dated = Filters(date_from="2026-03-01", date_to="2026-03-01")
    same(
        await indexed.route(route, query, dated, excluded, 40),
        await exact.route(route, query, dated, excluded, 40),
    )


@pytest.mark.parametrize("route", ["summary", "chunk"])
async def test_the_exact_scan_answers_when_the_index_cannot(
    spaces: tuple[Neo4jStore, Neo4jStore, list[str], int],
    monkeypatch: pytest.MonkeyPatch,
    route: RouteName,
) -> None:
    indexed, exact, ids, dims = spaces
    seen = record_queries(indexed)
    query = np.random.default_rng(5).standard_normal(dims).astype(np.float32)
    exact_route = qroute.ROUTES[(route, False)]
    # fewer than the limit survive the exclusions, even after a larger fetch: fall back
    excluded = frozenset(ids[: EVENTS - 10])
    same(
        await indexed.route(route, query, EMPTY_FILTERS, excluded, 40),
        await exact.route(route, query, EMPTY_FILTERS, excluded, 40),
    )
    tried = [x for x in seen if x not in (qroute.ROUTE_INDEX_STATE, qroute.SPACE_SIZE)]
    assert tried[0] == qroute.BY_INDEX[route][1] and tried[-1] == exact_route
    # entity filters and expand's restricted ids go straight to the exact scan
    groups = Filters(groups=(frozenset({"concept_1"}),))
    same(
        await indexed.route(route, query, groups, frozenset(), 40),
        await exact.route(route, query, groups, frozenset(), 40),
    )
    assert seen[-1] == exact_route
    await indexed.route(route, query, EMPTY_FILTERS, frozenset(), 40, frozenset(ids[:5]))
    assert seen[-1] == qroute.ROUTES[(route, True)]
    # a query of another width than the index's, or a small space
    own = indexed.space_names
    index = own.events_index if route == "summary" else own.chunks_index
    assert await indexed._index_usable(index, dims) is True
    assert await indexed._index_usable(index, dims + 1) is False
    small = indexed.index_min_events
    indexed.index_min_events = EVENTS * 10
    try:
        assert await indexed._index_usable(index, dims) is False
    finally:
        indexed.index_min_events = small
    # an index that fails (dropped, rebuilt at another width) is a fallback, not an error
    indexed.index.dims, indexed.index.seen = {"no_such_index": dims}, 1e18  # just read
    broken = own._replace(events_index="no_such_index", chunks_index="no_such_index")
    monkeypatch.setattr(indexed.index, "names", broken)
    same(
        await indexed.route(route, query, EMPTY_FILTERS, frozenset(), 40),
        await exact.route(route, query, EMPTY_FILTERS, frozenset(), 40),
    )
    assert indexed.index.seen < 0  # the state is read again next time


@pytest.mark.parametrize("route", ["summary", "chunk"])
async def test_a_crowded_fetch_is_retried_larger_before_falling_back(
    spaces: tuple[Neo4jStore, Neo4jStore, list[str], int],
    monkeypatch: pytest.MonkeyPatch,
    route: RouteName,
) -> None:
    indexed, exact, _, dims = spaces
    monkeypatch.setattr(indexed, "index_overfetch", 1)  # fetch only the limit at first
    seen = record_queries(indexed)
    query = np.random.default_rng(7).standard_normal(dims).astype(np.float32)
    nearest = await exact.route(route, query, EMPTY_FILTERS, frozenset(), 30)
    crowd = frozenset(h.event_id for h in nearest)  # the first fetch is mostly excluded
    same(
        await indexed.route(route, query, EMPTY_FILTERS, crowd, 40),
        await exact.route(route, query, EMPTY_FILTERS, crowd, 40),
    )
    routes = [x for x in seen if x not in (qroute.ROUTE_INDEX_STATE, qroute.SPACE_SIZE)]
    assert routes == [qroute.BY_INDEX[route][1], qroute.BY_INDEX[route][1]]  # no exact scan


async def test_the_route_pool_reads_each_route_once_and_matches_its_parts(
    spaces: tuple[Neo4jStore, Neo4jStore, list[str], int],
) -> None:
    indexed, exact, ids, dims = spaces
    seen = record_queries(indexed)
    query = np.random.default_rng(13).standard_normal(dims).astype(np.float32)
    excluded = frozenset(ids[:5])
    pool = await indexed.route_pool(query, EMPTY_FILTERS, excluded, 40)
    routes = [x for x in seen if x not in (qroute.ROUTE_INDEX_STATE, qroute.SPACE_SIZE)]
    assert sorted(routes) == sorted(
        [qroute.POOL_BY_INDEX["summary"][1], qroute.POOL_BY_INDEX["chunk"][1]]
    )
    parts = await route_pool_by_parts(exact, query, EMPTY_FILTERS, excluded, 40)
    same(pool.summary, parts.summary)
    same(pool.chunk, parts.chunk)
    assert pool.events.keys() == parts.events.keys() and not excluded & pool.events.keys()
    for i, ev in pool.events.items():
        want = parts.events[i]
        assert (ev.summary, ev.content, ev.content_hash, ev.has_chunks) == (
            want.summary, want.content, want.content_hash, want.has_chunks,
        )  # fmt: skip
        assert ev.embedding is not None and want.embedding is not None
        assert np.allclose(ev.embedding, want.embedding)
    assert pool.chunk_hashes == parts.chunk_hashes
    assert pool.concepts is not None
    mentions = await exact.neighbours(list(pool.events), "MENTIONS", "out", 50)
    assert {i: [c for c, _ in cs] for i, cs in pool.concepts.items()} == {
        i: [r.other_id for r in mentions.get(i, [])] for i in pool.events
    }
