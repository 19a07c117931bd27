"""The Neo4j summary route's strategy: an exact scan for small spaces, the event vector index
(over-fetch, filter, exact rescoring) for large ones, and the exact scan again whenever the
index cannot answer for sure. Live tests need ``MNEMOQL_TEST_NEO4J_*`` (see factory_neo4j.py).

The threshold is lowered so a few hundred events take the index path; the index is database
wide, so the vectors use whatever width it already has.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest

from engine.models import EMPTY_FILTERS, Filters, Hit, MemoryMeta
from engine.store.neo4j import _cypher as q
from engine.store.neo4j.store import Neo4jStore
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
        state = await indexed._run(q.EVENT_INDEX_STATE)
        dims = int(state[0]["dims"]) if state else 16
        rng = np.random.default_rng(11)
        vecs = rng.standard_normal((EVENTS, dims)).astype(np.float32)
        meta = MemoryMeta("test-embedder", dims, "2026-03-01T09:00:00+08:00")
        ids: list[str] = []
        for day, part in (("2026-03-01", vecs[: EVENTS // 2]), ("2026-03-02", vecs[EVENTS // 2 :])):
            p = plan(
                [event(f"e{i}", v) for i, v in enumerate(part)],
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
    run = store._run

    async def spy(query: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        seen.append(query)
        return await run(query, params, **kw)

    store._run = spy  # type: ignore[method-assign]
    return seen


def same(a: list[Hit], b: list[Hit]) -> None:
    assert [h.event_id for h in a] == [h.event_id for h in b]
    assert np.allclose([h.score for h in a], [h.score for h in b], atol=1e-6)


async def test_a_large_space_routes_summaries_through_the_index_with_exact_scores(
    spaces: tuple[Neo4jStore, Neo4jStore, list[str], int],
) -> None:
    indexed, exact, ids, dims = spaces
    seen = record_queries(indexed)
    rng = np.random.default_rng(3)
    for _ in range(10):
        query = rng.standard_normal(dims).astype(np.float32)
        got = await indexed.route("summary", query, EMPTY_FILTERS, frozenset(), 40)
        same(got, await exact.route("summary", query, EMPTY_FILTERS, frozenset(), 40))
    assert seen.count(q.SUMMARY_BY_INDEX) == 10
    assert q.ROUTES[("summary", False)] not in seen
    # date filters and exclusions are applied to the fetched candidates
    query = rng.standard_normal(dims).astype(np.float32)
    excluded = frozenset(ids[:20])
    dated = Filters(date_from="2026-03-01", date_to="2026-03-01")
    same(
        await indexed.route("summary", query, dated, excluded, 40),
        await exact.route("summary", query, dated, excluded, 40),
    )


async def test_the_exact_scan_answers_when_the_index_cannot(
    spaces: tuple[Neo4jStore, Neo4jStore, list[str], int], monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed, exact, ids, dims = spaces
    seen = record_queries(indexed)
    query = np.random.default_rng(5).standard_normal(dims).astype(np.float32)
    exact_route = q.ROUTES[("summary", False)]
    # fewer than the limit survive the exclusions: fall back, same answer as exact
    excluded = frozenset(ids[: EVENTS - 10])
    same(
        await indexed.route("summary", query, EMPTY_FILTERS, excluded, 40),
        await exact.route("summary", query, EMPTY_FILTERS, excluded, 40),
    )
    assert seen[-2:] == [q.SUMMARY_BY_INDEX, exact_route]
    # entity filters and expand's restricted ids go straight to the exact scan
    groups = Filters(groups=(frozenset({"concept_1"}),))
    same(
        await indexed.route("summary", query, groups, frozenset(), 40),
        await exact.route("summary", query, groups, frozenset(), 40),
    )
    assert seen[-1] == exact_route
    await indexed.route("summary", query, EMPTY_FILTERS, frozenset(), 40, frozenset(ids[:5]))
    assert seen[-1] == q.ROUTES[("summary", True)]
    # a query of another width than the index's, or a small space
    assert await indexed._index_usable(dims + 1) is False
    small = indexed.index_min_events
    indexed.index_min_events = EVENTS * 10
    try:
        assert await indexed._index_usable(dims) is False
    finally:
        indexed.index_min_events = small
    # an index that fails (dropped, rebuilt at another width) is a fallback, not an error
    indexed._index_dims, indexed._index_seen = dims, 1e18  # pretend it was just read
    broken = q.SUMMARY_BY_INDEX.replace("event_summary_vector", "no_such_index")
    monkeypatch.setattr(q, "SUMMARY_BY_INDEX", broken)
    same(
        await indexed.route("summary", query, EMPTY_FILTERS, frozenset(), 40),
        await exact.route("summary", query, EMPTY_FILTERS, frozenset(), 40),
    )
    assert indexed._index_seen < 0  # the state is read again next time
