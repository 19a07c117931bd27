"""What one search asks of the embedded store, in as few trips as it can (issue #30, "a search
near its index"): the route pool carries the concepts delivery shows, the two ANN indexes are
searched side by side, and the lexical route rides on the pool's catch-up."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from mnemoql.engine.models import EMPTY_FILTERS, Entity
from mnemoql.engine.store.embedded import EmbeddedStore
from mnemoql.engine.store.embedded._ann import AnnSettings, Hnsw
from tests.store._builders import axis, chunks_for, concept, event, plan, rel, vec

MANY = 55  # MENTIONS of one event: past the 50 an evidence page shows


async def _delivery_concepts(store: EmbeddedStore, ids: list[str]) -> dict[str, object]:
    """The concepts as delivery reads them without a pool (``Retriever._concepts``)."""
    rows = await store.neighbours(ids, "MENTIONS", "out", 50)
    others = list(dict.fromkeys(r.other_id for mine in rows.values() for r in mine))
    names = {n.id: n.name for n in await store.get_nodes(others) if isinstance(n, Entity)}
    return {
        i: tuple((r.other_id, names.get(r.other_id, r.other_id)) for r in mine)
        for i, mine in rows.items()
    }


async def test_the_pool_carries_each_events_concepts_as_delivery_reads_them(
    tmp_path: Path,
) -> None:
    store = EmbeddedStore(tmp_path)
    await store.open()
    try:
        concepts = [concept(f"c{i}", f"topic {i}", vector=axis(3)) for i in range(MANY)]
        result = await store.apply_save(
            plan(
                [event("a", axis(0), chunk_vectors=[axis(0)]), event("b", vec(1, 1))],
                concepts,
                [rel("MENTIONS", "a", f"c{i}") for i in range(MANY)] + [rel("MENTIONS", "b", "c7")],
            )
        )
        a, b = result.event_ids
        pool = await store.route_pool(axis(0), EMPTY_FILTERS, frozenset(), 5)
        assert pool.concepts is not None, "the embedded pool leaves concepts to delivery"
        assert sorted(pool.concepts) == sorted(pool.events) == sorted([a, b])
        assert pool.concepts == await _delivery_concepts(store, [a, b])
        # by concept id as strings order (concept_10 before concept_2), the first 50
        ids = sorted(result.created["Concept"])[:50]
        assert [c for c, _ in pool.concepts[a]] == ids and len(ids) == 50
        assert pool.concepts[b] == ((result.refs["c7"], "topic 7"),)
    finally:
        await store.close()


@contextmanager
def index_threads() -> Iterator[list[tuple[str, str]]]:
    """(thread name, index kind) of every ANN index search meanwhile."""
    seen: list[tuple[str, str]] = []
    original = Hnsw.search

    def search(self: Hnsw, query: np.ndarray, count: int) -> np.ndarray | None:
        seen.append((threading.current_thread().name, self.kind))
        return original(self, query, count)

    Hnsw.search = search  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        Hnsw.search = original  # type: ignore[method-assign]


async def test_the_two_indexes_are_searched_on_two_threads_with_the_exact_pages(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(3)
    dims = len(axis(0))
    vecs = rng.standard_normal((600, dims)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    events = []
    for i, v in enumerate(vecs):
        ev = event(f"e{i:04d}", v, content=f"event {i} " + "y" * 40)
        ev.chunks = chunks_for(ev.content, [v])
        events.append(ev)
    stores = {}
    for name, ann in (("exact", AnnSettings(mode="exact")), ("ann", AnnSettings(min_vectors=0))):
        stores[name] = EmbeddedStore(tmp_path / name, ann=ann)
        await stores[name].open()
        await stores[name].apply_save(plan(events))
    try:
        q = vecs[0] + 0.3 * vecs[1]
        with index_threads() as seen:
            got = await stores["ann"].route_pool(q, EMPTY_FILTERS, frozenset(), 10)
        want = await stores["exact"].route_pool(q, EMPTY_FILTERS, frozenset(), 10)
        assert [h.event_id for h in got.summary] == [h.event_id for h in want.summary]
        assert [h.event_id for h in got.chunk] == [h.event_id for h in want.chunk]
        kinds = {kind: name for name, kind in seen}
        assert set(kinds) == {"summary", "chunk"}, seen
        assert kinds["chunk"].startswith("mnemoql-ann-"), seen  # the side thread
        assert not kinds["summary"].startswith("mnemoql-ann-"), seen  # beside it
    finally:
        for s in stores.values():
            await s.close()


async def test_the_pools_lexical_route_sees_another_processes_write(tmp_path: Path) -> None:
    """The pool catches up once, before both its vector and lexical routes."""
    first, second = EmbeddedStore(tmp_path), EmbeddedStore(tmp_path)
    await first.open()
    try:
        await first.apply_save(plan([event("a", axis(0), content="a storm at the lighthouse")]))
        await second.open()
        try:
            saved = await second.apply_save(
                plan(
                    [
                        event(
                            "b", axis(1), content="order XK-4471-B shipped", chunk_vectors=[axis(1)]
                        )
                    ],
                    key="k2",
                )
            )
        finally:
            await second.close()
        pool = await first.route_pool(
            axis(0), EMPTY_FILTERS, frozenset(), 5, text="where is XK-4471-B"
        )
        assert [h.event_id for h in pool.lexical] == saved.event_ids
        assert saved.event_ids[0] in pool.events and saved.event_ids[0] in (pool.concepts or {})
    finally:
        await first.close()
