"""The embedded store's fast paths at a size where they matter (~20k events), checked for
correctness against brute-force numpy. Nothing here measures time: speed is reported by
``bench/``, never asserted."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from mnemoql.engine.drafts import EntityDraft, EventDraft, RelationDraft, SavePlan
from mnemoql.engine.models import EMPTY_FILTERS, Chunk, Filters, Hit, MemoryMeta, VectorSet
from mnemoql.engine.store.embedded import EmbeddedStore

N_EVENTS = 20_000
N_PERSONS = 40
DIMS = 16
BATCH = 1000
DAYS = ["2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04", "2026-03-05"]
META = MemoryMeta("sanity", DIMS, "2026-03-01T00:00:00+08:00")

F32 = npt.NDArray[np.float32]


@dataclass
class World:
    ids: list[str]
    vectors: F32  # unit rows, one per event
    days: list[str]
    chunks: list[list[F32]]  # per event, by chunk_index
    people: list[set[int]]  # per event, person numbers taking part
    person_ids: list[str]


def _unit(rng: np.random.Generator, n: int) -> F32:
    m = rng.standard_normal((n, DIMS)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


async def _build(store: EmbeddedStore) -> World:
    rng = np.random.default_rng(7)
    people_plan = SavePlan(
        events=[],
        entities=[
            EntityDraft(f"p{i}", "Person", f"Person {i}", [], None, None) for i in range(N_PERSONS)
        ],
        relations=[],
        create_time="2026-03-01T00:00:00+08:00",
        create_date="2026-03-01",
        meta=META,
    )
    refs = (await store.apply_save(people_plan)).refs
    person_ids = [refs[f"p{i}"] for i in range(N_PERSONS)]
    world = World([], _unit(rng, N_EVENTS), [], [], [], person_ids)
    for start in range(0, N_EVENTS, BATCH):
        day = DAYS[(start // BATCH) % len(DAYS)]
        drafts, rels = [], []
        for i in range(start, start + BATCH):
            n_chunks = int(rng.integers(0, 4))
            cvecs = list(_unit(rng, n_chunks)) if n_chunks else []
            chunks = [
                Chunk("", j, j * 10, j * 10 + 10, f"c{j}", f"h{j}", v) for j, v in enumerate(cvecs)
            ]
            drafts.append(
                EventDraft(
                    f"e{i}", f"s{i}", f"content {i}", None, f"hash{i}", world.vectors[i], chunks
                )
            )
            people = {
                int(p) for p in rng.choice(N_PERSONS, size=int(rng.integers(1, 3)), replace=False)
            }
            rels += [RelationDraft("PARTICIPATED_IN", person_ids[p], f"e{i}") for p in people]
            world.chunks.append(cvecs)
            world.people.append(people)
            world.days.append(day)
        result = await store.apply_save(
            SavePlan(drafts, [], rels, f"{day}T10:00:00+08:00", day, META)
        )
        world.ids += result.event_ids
    return world


def _truth(
    world: World, scores: Sequence[float | None], keep: Iterator[bool], limit: int
) -> list[tuple[str, float]]:
    rows = [
        (float(s), world.ids[i])
        for i, (s, ok) in enumerate(zip(scores, keep, strict=True))
        if ok and s is not None
    ]
    rows.sort(key=lambda r: (-r[0], r[1]))
    return [(i, s) for s, i in rows[:limit]]


def _assert_ranking(hits: list[Hit], truth: list[tuple[str, float]]) -> None:
    assert len(hits) == len(truth)
    got = {h.event_id: h.score for h in hits}
    for hit, (tid, tscore) in zip(hits, truth, strict=True):
        assert hit.score == pytest.approx(tscore, abs=1e-5)
        if hit.event_id != tid:  # only a float-rounding near-tie may swap neighbours
            assert got.get(tid, -9.0) == pytest.approx(tscore, abs=1e-5)


def _summary_scores(world: World, q: F32) -> list[float | None]:
    return list((world.vectors.astype(np.float64) @ q.astype(np.float64)).tolist())


def _chunk_scores(world: World, q: F32) -> list[float | None]:
    return [max(float(v @ q) for v in cv) if cv else None for cv in world.chunks]


async def test_routes_match_brute_force_at_20k_events(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path)
    await store.open()
    world = await _build(store)
    rng = np.random.default_rng(11)
    queries = _unit(rng, 4)
    excluded = frozenset(world.ids[::37])
    group = {3, 17}
    group_ids = frozenset(world.person_ids[p] for p in group)
    restrict = frozenset(world.ids[::5])
    cases = [
        (EMPTY_FILTERS, frozenset(), None, lambda i: True),
        (EMPTY_FILTERS, excluded, None, lambda i: world.ids[i] not in excluded),
        (
            Filters(date_from="2026-03-02", date_to="2026-03-03"),
            frozenset(),
            None,
            lambda i: "2026-03-02" <= world.days[i] <= "2026-03-03",
        ),
        (Filters(groups=(group_ids,)), frozenset(), None, lambda i: bool(world.people[i] & group)),
        (EMPTY_FILTERS, excluded, restrict, lambda i: i % 5 == 0 and world.ids[i] not in excluded),
    ]
    try:
        for reopened in (False, True):
            if reopened:  # the same answers from mirrors rebuilt from disk
                await store.close()
                store = EmbeddedStore(tmp_path)
                await store.open()
            for q in queries:
                for filters, exclude, only, keep in cases:
                    for route, scores in (("summary", _summary_scores), ("chunk", _chunk_scores)):
                        hits = await store.route(route, q, filters, exclude, 40, restrict=only)  # type: ignore[arg-type]
                        truth = _truth(
                            world, scores(world, q), (keep(i) for i in range(N_EVENTS)), 40
                        )
                        _assert_ranking(hits, truth)
                        if route == "chunk":
                            for h in hits:
                                row = world.ids.index(h.event_id)
                                cs = [float(v @ q) for v in world.chunks[row]]
                                assert h.chunk_index == int(np.argmax(cs))
                                assert (h.start, h.end) == (
                                    h.chunk_index * 10,
                                    h.chunk_index * 10 + 10,
                                )
            counts = await store.counts()
            assert counts.events == N_EVENTS
            assert counts.chunks == sum(len(c) for c in world.chunks)
    finally:
        await store.close()


async def test_appends_after_a_reload_extend_the_same_ranking(tmp_path: Path) -> None:
    """Rows appended to mirrors rebuilt from disk rank together with the loaded ones."""
    store = EmbeddedStore(tmp_path)
    await store.open()
    rng = np.random.default_rng(3)
    vectors = _unit(rng, 3000)
    ids: list[str] = []
    try:
        for round_ in range(3):
            for start in range(0, 1000, 250):
                block = vectors[round_ * 1000 + start : round_ * 1000 + start + 250]
                drafts = [
                    EventDraft(
                        f"e{i}", "s", "c", None, f"h{i}", v, [Chunk("", 0, 0, 1, "c", "h", v)]
                    )
                    for i, v in enumerate(block)
                ]
                result = await store.apply_save(
                    SavePlan(drafts, [], [], "2026-03-01T10:00:00+08:00", "2026-03-01", META)
                )
                ids += result.event_ids
            await store.close()
            store = EmbeddedStore(tmp_path)
            await store.open()
        q = _unit(rng, 1)[0]
        scores = (vectors.astype(np.float64) @ q.astype(np.float64)).tolist()
        truth = sorted(zip(scores, ids, strict=True), key=lambda r: (-r[0], r[1]))[:50]
        for route in ("summary", "chunk"):
            hits = await store.route(route, q, EMPTY_FILTERS, frozenset(), 50)  # type: ignore[arg-type]
            _assert_ranking(hits, [(i, s) for s, i in truth])
    finally:
        await store.close()


async def test_replace_vectors_with_chunks_in_any_order(tmp_path: Path) -> None:
    """Re-vectorize may hand chunks over in any order; each event's best chunk still wins."""
    store = EmbeddedStore(tmp_path)
    await store.open()
    rng = np.random.default_rng(5)
    n = 3000
    drafts = [EventDraft(f"e{i}", "s", "c", None, f"h{i}", None, []) for i in range(n)]
    try:
        ids = (
            await store.apply_save(
                SavePlan(drafts, [], [], "2026-03-01T10:00:00+08:00", "2026-03-01", META)
            )
        ).event_ids
        summary = _unit(rng, n)
        per_event = [list(_unit(rng, int(k))) for k in rng.integers(0, 4, size=n)]
        chunks = [
            Chunk(ids[i], j, j, j + 1, "c", "h", v)
            for i, vs in enumerate(per_event)
            for j, v in enumerate(vs)
        ]
        order = rng.permutation(len(chunks))
        new_meta = MemoryMeta("sanity-2", DIMS, "2026-03-02T00:00:00+08:00")
        await store.replace_vectors(
            VectorSet(
                events={ids[i]: summary[i] for i in range(n)},
                entities={},
                chunks=[chunks[int(k)] for k in order],
                meta=new_meta,
            )
        )
        world = World(ids, summary, ["2026-03-01"] * n, per_event, [set()] * n, [])
        for q in _unit(rng, 3):
            for route, scores in (("summary", _summary_scores), ("chunk", _chunk_scores)):
                hits = await store.route(route, q, EMPTY_FILTERS, frozenset(), 30)  # type: ignore[arg-type]
                _assert_ranking(hits, _truth(world, scores(world, q), iter([True] * n), 30))
                if route == "chunk":
                    for h in hits:
                        cs = [float(v @ q) for v in per_event[ids.index(h.event_id)]]
                        assert h.chunk_index == int(np.argmax(cs)) == h.start
    finally:
        await store.close()
