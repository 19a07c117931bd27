"""Neo4j with many spaces: a large space gets vector indexes of its own (on a label of its
space), so other spaces of the database cannot crowd its candidates, and the shared index's
fetch grows with its crowding when a space has no own index yet. Live tests need
``MNEMOQL_TEST_NEO4J_*`` (see factory_neo4j.py).

The threshold is lowered so a hundred events make a large space.
"""

from __future__ import annotations

import math
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import numpy as np
import pytest

from mnemoql.engine.models import EMPTY_FILTERS, MemoryMeta, RouteName, VectorSet
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_route as qroute
from mnemoql.engine.store.neo4j._routes import INDEX_MAX_FETCH, INDEX_STATE_TTL
from mnemoql.engine.store.neo4j.store import Neo4jStore
from tests.store import factory_neo4j
from tests.store._builders import event, plan

MIN_EVENTS = 50
TARGET = 120  # events of the measured space
CROWD = 1_080  # events of the space crowding it (nine times as many)
LIMIT = 40

MakeStore = Callable[..., Awaitable[Neo4jStore]]


def test_space_labels_and_index_names_only_ever_hold_a_digest() -> None:
    # The only text interpolated into the per-space statements is a 16-hex-digit digest of
    # the space name, whatever the name (the store refuses such names anyway).
    for evil in ["x`) DETACH DELETE n //", "a:b", "ä' OR 1=1", "", "default"]:
        s = q.space_schema(evil)
        for name in (s.events_label, s.chunks_label, s.events_index, s.chunks_index):
            assert re.fullmatch(r"(MnemoEvents|MnemoChunks|space_events|space_chunks)_[0-9a-f]{16}", name)
        for statement in (*s.create, *s.drop):
            assert evil not in statement or evil in ("", "default")
    assert q.space_schema("a") != q.space_schema("b")


@pytest.fixture
async def make() -> AsyncIterator[MakeStore]:
    """Opens stores on the test server; every space they touch is dropped afterwards."""
    reason = factory_neo4j.unreachable()
    if reason is not None:
        pytest.skip(f"neo4j store unavailable: {reason}")
    t = factory_neo4j.target()
    assert t is not None
    opened: list[Neo4jStore] = []

    async def _make(space: str, **kw: Any) -> Neo4jStore:
        kw.setdefault("index_min_events", MIN_EVENTS)
        store = Neo4jStore(t.uri, t.user, t.password, t.database, space=space, **kw)
        await store.open()
        opened.append(store)
        return store

    yield _make
    for space in {s.space for s in opened}:
        with_cleanup = Neo4jStore(t.uri, t.user, t.password, t.database, space=space)
        await with_cleanup.open()
        await with_cleanup.drop_space()
        await with_cleanup.close()
    for s in opened:
        await s.close()


async def shared_width(store: Neo4jStore) -> int:
    """The width of the database-wide event index (the suite shares one server), or 16."""
    rows = await store._run(qroute.ROUTE_INDEX_STATE, {"names": list(qroute.GLOBAL_ROUTE_INDEXES)})
    return int(next((r["dims"] for r in rows if r["dims"]), None) or 16)


async def fill(store: Neo4jStore, n: int, dims: int, seed: int, per_plan: int = 60) -> list[str]:
    """``n`` events with one or two chunks each, gaussian vectors of width ``dims``."""
    rng = np.random.default_rng(seed)
    meta = MemoryMeta("test-embedder", dims, "2026-03-01T09:00:00+08:00")
    ids: list[str] = []
    while len(ids) < n:
        count = min(per_plan, n - len(ids))
        vecs = rng.standard_normal((count, 3, dims)).astype(np.float32)
        p = plan(
            [event(f"e{i}", v[0], chunk_vectors=v[1 : 2 + i % 2]) for i, v in enumerate(vecs)],
            meta=meta,
        )
        ids += (await store.apply_save(p)).event_ids
    return ids


def spy(store: Neo4jStore) -> list[tuple[str, dict[str, Any]]]:
    seen: list[tuple[str, dict[str, Any]]] = []
    run = store.runner.run

    async def _run(query: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        seen.append((query, dict(params or {})))
        return await run(query, params, **kw)

    store.runner.run = _run  # type: ignore[method-assign]
    return seen


async def vector_indexes(store: Neo4jStore) -> dict[str, int]:
    """ONLINE or populating vector indexes of the store's space: name -> width."""
    names = [store.space_names.events_index, store.space_names.chunks_index]
    rows = await store._run(qroute.ROUTE_INDEX_STATE, {"names": names})
    return {r["name"]: int(r["dims"]) for r in rows}


async def routes_match_exact(
    store: Neo4jStore, exact: Neo4jStore, dims: int, seed: int, queries: int = 6
) -> list[tuple[str, dict[str, Any]]]:
    """Both routes of ``store`` equal the exact scan's for random queries; the queries the
    store ran."""
    seen = spy(store)
    rng = np.random.default_rng(seed)
    store.index.seen = -1e9
    for _ in range(queries):
        query = rng.standard_normal(dims).astype(np.float32)
        route: RouteName
        for route in ("summary", "chunk"):
            got = await store.route(route, query, EMPTY_FILTERS, frozenset(), LIMIT)
            want = await exact.route(route, query, EMPTY_FILTERS, frozenset(), LIMIT)
            assert [(h.event_id, h.chunk_index) for h in got] == [
                (h.event_id, h.chunk_index) for h in want
            ]
            assert np.allclose([h.score for h in got], [h.score for h in want], atol=1e-6)
    return seen


def index_queries(seen: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    texts = {text for _, text in qroute.BY_INDEX.values()}
    return [params for query, params in seen if query in texts]


def exact_scans(seen: list[tuple[str, dict[str, Any]]]) -> int:
    return sum(query in qroute.ROUTES.values() for query, _ in seen)


@pytest.fixture
async def crowded(make: MakeStore) -> tuple[Neo4jStore, Neo4jStore, Neo4jStore, int]:
    """A space of TARGET events beside one of CROWD events, both of the shared index's width:
    (the target through the index routes, the target scanning exactly, the crowd, width)."""
    run = uuid.uuid4().hex[:10]
    target = await make(f"t{run}a")
    crowd = await make(f"t{run}b")
    dims = await shared_width(target)
    await fill(target, TARGET, dims, seed=1)
    await fill(crowd, CROWD, dims, seed=2, per_plan=270)
    await target._run("CALL db.awaitIndexes(300)")
    exact = await make(target.space, index_min_events=None)
    return target, exact, crowd, dims


async def test_a_crowded_space_answers_through_its_own_index(
    crowded: tuple[Neo4jStore, Neo4jStore, Neo4jStore, int],
) -> None:
    target, exact, crowd, dims = crowded
    # both spaces passed the threshold and got their own two indexes, at their width
    assert await vector_indexes(target) == {
        target.space_names.events_index: dims, target.space_names.chunks_index: dims,
    }  # fmt: skip
    assert len(await vector_indexes(crowd)) == 2
    seen = await routes_match_exact(target, exact, dims, seed=3)
    used = index_queries(seen)
    own = {target.space_names.events_index, target.space_names.chunks_index}
    assert used and {p["index"] for p in used} == own
    assert all(p["fetch"] == LIMIT * target.index_overfetch for p in used)  # nothing crowds it
    assert exact_scans(seen) == 0


async def test_the_shared_index_fetch_grows_with_its_crowding(
    crowded: tuple[Neo4jStore, Neo4jStore, Neo4jStore, int], make: MakeStore
) -> None:
    target, exact, _, dims = crowded
    shared = await make(target.space, space_indexes=False)  # as while its own index populates
    # the database may be shared with other test runs that write meanwhile: the fetch follows
    # the crowding at the time of the query, between the two counts
    before = (await shared._run(qroute.SPACE_SIZE))[0]["total"]
    # a fetch the shared index can still answer at this crowding (> 9): 40 x 10 x 9 < 4,000
    # (INDEX_MAX_FETCH); the default x 15 would skip the index, which the end of this test checks.
    # A database that other runs filled further gets a smaller over-fetch, with room for their
    # writes during the query, so that the first fetch still fits.
    await shared.route("summary", np.ones(dims, np.float32), EMPTY_FILTERS, frozenset(), LIMIT)
    room = INDEX_MAX_FETCH * shared.index.space_size // (2 * LIMIT * before)
    shared.index_overfetch = min(10, room)
    assert shared.index_overfetch >= 1, f"the shared database holds {before} events: too crowded"
    seen = await routes_match_exact(shared, exact, dims, seed=4)
    used = index_queries(seen)
    assert used and {p["index"] for p in used} <= set(qroute.GLOBAL_ROUTE_INDEXES)
    after = (await shared._run(qroute.SPACE_SIZE))[0]["total"]
    assert before / shared.index.space_size > 9  # the crowd and whatever else the database holds
    low, high = (math.ceil(LIMIT * shared.index_overfetch * t / shared.index.space_size)
                 for t in (min(before, after), max(before, after)))  # fmt: skip
    fetches = [p["fetch"] for p in used][:2]
    assert len(fetches) == 2 and all(low <= f <= high for f in fetches), (fetches, low, high)
    # a shared index too crowded for one fetch is not asked at all
    shared.index_overfetch = 100
    seen.clear()
    await shared.route("summary", np.ones(dims, np.float32), EMPTY_FILTERS, frozenset(), LIMIT)
    assert not index_queries(seen) and exact_scans(seen) == 1


async def test_a_space_of_another_width_than_the_shared_index_gets_its_own(
    make: MakeStore,
) -> None:
    space = f"t{uuid.uuid4().hex[:12]}"
    store = await make(space)
    dims = await shared_width(store) + 3  # the shared indexes cannot serve this width
    await fill(store, 2 * MIN_EVENTS, dims, seed=5)
    await store._run("CALL db.awaitIndexes(300)")
    exact = await make(space, index_min_events=None)
    seen = await routes_match_exact(store, exact, dims, seed=6)
    assert {p["index"] for p in index_queries(seen)} == {
        store.space_names.events_index, store.space_names.chunks_index,
    }  # fmt: skip
    assert exact_scans(seen) == 0


async def all_vector_indexes(store: Neo4jStore) -> set[str]:
    return {r["name"] for r in await store._run("SHOW VECTOR INDEXES YIELD name RETURN name")}


async def test_stores_with_own_indexes_keep_no_shared_chunk_index(make: MakeStore) -> None:
    space = f"t{uuid.uuid4().hex[:12]}"
    store = await make(space)
    await store.runner.schema(q.DROP_CHUNK_VECTOR_INDEX)  # a database only such stores write
    dims = await shared_width(store)
    await fill(store, 2 * MIN_EVENTS, dims, seed=7)
    await store._run("CALL db.awaitIndexes(300)")
    assert q.CHUNK_VECTOR_INDEX not in await all_vector_indexes(store)
    assert set(q.VECTOR_INDEXES.values()) <= await all_vector_indexes(store)  # SPEC's four
    # While its own chunk index is not ONLINE (populating; here dropped) the chunk route
    # scans exactly, and the summary route still reads its own index: the exact hits.
    await store.runner.schema(f"DROP INDEX {store.space_names.chunks_index} IF EXISTS")
    exact = await make(space, index_min_events=None)
    seen = await routes_match_exact(store, exact, dims, seed=8, queries=4)
    assert {p["index"] for p in index_queries(seen)} == {store.space_names.events_index}
    assert exact_scans(seen) == 4  # the chunk route of each query
    # a store with space indexes off (the shared route) creates it again at open
    await make(space, space_indexes=False)
    assert q.CHUNK_VECTOR_INDEX in await all_vector_indexes(store)


async def test_an_aged_index_state_is_read_again_beside_the_search(make: MakeStore) -> None:
    store = await make(f"t{uuid.uuid4().hex[:12]}")
    dims = await shared_width(store)
    await fill(store, 2 * MIN_EVENTS, dims, seed=9)
    await store._run("CALL db.awaitIndexes(300)")
    query = np.ones(dims, np.float32)
    await store.route("summary", query, EMPTY_FILTERS, frozenset(), 5)  # reads the state
    store.index.seen = time.monotonic() - INDEX_STATE_TTL - 1  # aged, not invalidated
    seen = spy(store)
    await store.route("summary", query, EMPTY_FILTERS, frozenset(), 5)
    assert seen[0][0] == qroute.POOL_BY_INDEX["summary"][1] or seen[0][0] == qroute.BY_INDEX["summary"][1]
    assert store.index.task is not None
    await store.index.task
    assert [text for text, _ in seen[1:]] == [qroute.ROUTE_INDEX_STATE, qroute.SPACE_SIZE]
    assert time.monotonic() - store.index.seen < INDEX_STATE_TTL
    # an invalidated one (an index changed) is read before the route
    store.index.seen = -INDEX_STATE_TTL
    seen.clear()
    await store.route("summary", query, EMPTY_FILTERS, frozenset(), 5)
    assert [text for text, _ in seen[:2]] == [qroute.ROUTE_INDEX_STATE, qroute.SPACE_SIZE]


async def test_own_indexes_follow_the_space_through_its_life(make: MakeStore) -> None:
    space = f"t{uuid.uuid4().hex[:12]}"
    store = await make(space)
    dims = await shared_width(store)
    ids = await fill(store, MIN_EVENTS - 10, dims, seed=7)
    assert await vector_indexes(store) == {}  # small spaces get none
    ids += await fill(store, 20, dims, seed=8)
    assert set((await vector_indexes(store)).values()) == {dims}  # created by the save past it
    await store._run("CALL db.awaitIndexes(300)")
    exact = await make(space, index_min_events=None)
    # forget: the event leaves the space's index with its node
    await store.forget(ids[0])
    seen = await routes_match_exact(store, exact, dims, seed=9)
    assert exact_scans(seen) == 0
    # re-vectorize at another width: the own indexes are rebuilt at it
    events, _ = await store.all_for_revectorize()
    chunks = await store.get_chunks([e.id for e in events])
    wide = dims + 5
    rng = np.random.default_rng(10)
    await store.replace_vectors(
        VectorSet(
            meta=MemoryMeta("test-embedder-2", wide, "2026-03-02T09:00:00+08:00"),
            events={e.id: rng.standard_normal(wide).astype(np.float32) for e in events},
            entities={},
            chunks=[
                c.__class__(c.event_id, c.chunk_index, c.start, c.end, c.text, c.text_hash,
                            rng.standard_normal(wide).astype(np.float32))
                for cs in chunks.values() for c in cs
            ],
        )
    )  # fmt: skip
    assert set((await vector_indexes(store)).values()) == {wide}
    await store._run("CALL db.awaitIndexes(300)")
    seen = await routes_match_exact(store, exact, wide, seed=11)
    assert {p["index"] for p in index_queries(seen)} == {
        store.space_names.events_index, store.space_names.chunks_index,
    }  # fmt: skip
    # export and restore into a new space: the restored space gets its own indexes
    records = [r async for r in store.export_records(vectors=True)]
    copy = await make(f"t{uuid.uuid4().hex[:12]}")
    await copy.import_records(records)
    assert set((await vector_indexes(copy)).values()) == {wide}
    await copy._run("CALL db.awaitIndexes(300)")
    copy_exact = await make(copy.space, index_min_events=None)
    seen = await routes_match_exact(copy, copy_exact, wide, seed=12)
    assert exact_scans(seen) == 0 and index_queries(seen)
    # dropping the space drops its indexes
    await store.drop_space()
    assert await vector_indexes(store) == {}


async def test_a_space_written_before_the_labels_is_labelled_at_open(make: MakeStore) -> None:
    space = f"t{uuid.uuid4().hex[:12]}"
    store = await make(space)
    dims = await shared_width(store)
    await fill(store, 2 * MIN_EVENTS, dims, seed=13)
    # what an older version left: no space labels, no own indexes, no ``labelled`` mark
    s = store.space_names
    for statement in s.drop:
        await store.runner.schema(statement)
    await store._run(
        f"MATCH (n) WHERE n.space = $space REMOVE n:{s.events_label}:{s.chunks_label}",
        writable=True,
    )
    await store._run("MATCH (x:MnemoSpace {space: $space}) REMOVE x.labelled", writable=True)
    reopened = await make(space)
    assert set((await vector_indexes(reopened)).values()) == {dims}
    count = f"MATCH (n:{s.events_label}) RETURN count(n) AS n"
    assert (await reopened._run(count))[0]["n"] == 2 * MIN_EVENTS
    await reopened._run("CALL db.awaitIndexes(300)")
    exact = await make(space, index_min_events=None)
    seen = await routes_match_exact(reopened, exact, dims, seed=14)
    assert exact_scans(seen) == 0
