"""Store contract, part 1: lifecycle, writes, ids, atomicity, merging, idempotency,
re-vectorize, deletion and persistence. Only the ``Store`` protocol is used."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from mnemoql.engine.errors import Conflict, InvalidInput, NotFound
from mnemoql.engine.models import (
    EMPTY_FILTERS,
    Chunk,
    Entity,
    Event,
    MemoryMeta,
    VectorSet,
)
from mnemoql.engine.store.base import Store, route_pool_by_parts
from mnemoql.engine.text import text_hash
from tests.store._builders import (
    DIMS,
    META,
    axis,
    concept,
    event,
    location,
    person,
    plan,
    rel,
    save_one,
)
from tests.store.conftest import Reopen, StoreLocation

# ---------------------------------------------------------------- lifecycle


async def test_store_satisfies_the_protocol_and_starts_empty(store: Store) -> None:
    assert isinstance(store, Store)
    assert await store.ping() is True
    assert await store.get_meta() is None
    counts = await store.counts()
    assert (counts.events, counts.persons, counts.concepts, counts.locations) == (0, 0, 0, 0)
    assert (counts.chunks, counts.relations) == (0, 0)


def test_constructor_has_no_side_effects(store_location: StoreLocation, tmp_path: Path) -> None:
    store_location.make()
    assert not store_location.path.exists()
    assert list(tmp_path.iterdir()) == []


async def test_first_save_creates_meta_and_later_saves_keep_it(store: Store) -> None:
    await save_one(store, axis(0))
    assert await store.get_meta() == META
    other = MemoryMeta(model="other", dimensions=8, updated_at="2027-01-01T00:00:00+08:00")
    await store.apply_save(plan([event("e", axis(1))], meta=other))
    assert await store.get_meta() == META


# ---------------------------------------------------------------- id allocation


async def test_ids_are_allocated_per_prefix_in_plan_order(store: Store) -> None:
    result = await store.apply_save(
        plan(
            [event("e1", axis(0)), event("e2", axis(1))],
            [
                person("p1", "Alice"),
                concept("c1", "Graph"),
                person("p2", "Bob"),
                location("l1", "Paris"),
            ],
        )
    )
    assert result.event_ids == ["event_1", "event_2"]
    assert result.refs == {
        "e1": "event_1",
        "e2": "event_2",
        "p1": "person_1",
        "c1": "concept_1",
        "p2": "person_2",
        "l1": "location_1",
    }
    assert result.created["Person"] == ["person_1", "person_2"]
    assert result.created["Concept"] == ["concept_1"]
    assert result.created["Location"] == ["location_1"]
    assert result.merged == []
    assert result.replayed is False

    again = await store.apply_save(plan([event("e", axis(2))], [person("p", "Carol")]))
    assert again.event_ids == ["event_3"]
    assert again.refs["p"] == "person_3"


async def test_concurrent_saves_get_unique_gap_free_ids(store: Store) -> None:
    plans = [
        plan(
            [event("e", axis(i % 8))],
            [person("p", f"Person {i}")],
            [rel("PARTICIPATED_IN", "p", "e")],
        )
        for i in range(20)
    ]
    results = await asyncio.gather(*(store.apply_save(p) for p in plans))
    events = sorted((r.event_ids[0] for r in results), key=lambda i: int(i.split("_")[1]))
    persons = sorted((r.refs["p"] for r in results), key=lambda i: int(i.split("_")[1]))
    assert events == [f"event_{n}" for n in range(1, 21)]
    assert persons == [f"person_{n}" for n in range(1, 21)]
    counts = await store.counts()
    assert (counts.events, counts.persons, counts.relations) == (20, 20, 20)


async def test_imported_ids_are_ignored_by_the_allocator(store: Store) -> None:
    imported = await store.apply_save(
        plan(
            [
                event("a", axis(0), given_id="book_ch3_e12"),
                event("b", axis(1), given_id="event_ch33_e06"),
            ]
        )
    )
    assert imported.event_ids == ["book_ch3_e12", "event_ch33_e06"]
    assert imported.refs == {"a": "book_ch3_e12", "b": "event_ch33_e06"}
    assert await save_one(store, axis(2)) == "event_1"


async def test_allocator_counts_on_from_the_highest_id_ever_taken(store: Store) -> None:
    ids = [await save_one(store, axis(0)) for _ in range(3)]
    assert ids == ["event_1", "event_2", "event_3"]
    await store.forget("event_2")  # a hole below the maximum is not reused
    assert await save_one(store, axis(0)) == "event_4"
    ten = [await save_one(store, axis(0)) for _ in range(7)]
    assert ten[-1] == "event_11"  # numeric, not string, maximum (event_9 > event_11 as text)
    assert await save_one(store, axis(0)) == "event_12"


async def test_forgotten_ids_are_never_handed_out_again(store: Store, reopen: Reopen) -> None:
    """Issue #13, case 1: forget(event_1), then the next save must not become event_1."""
    first = await store.apply_save(
        plan(
            [event("e", axis(0), content="Dave's note")],
            [person("p", "Dave"), concept("c", "note"), location("l", "Leeds")],
            [rel("PARTICIPATED_IN", "p", "e"), rel("MENTIONS", "e", "c"),
             rel("OCCURRED_AT", "e", "l")],
            key="K",
        )
    )  # fmt: skip
    assert first.event_ids == ["event_1"]
    assert await store.forget("event_1") == ["event_1", "person_1", "concept_1", "location_1"]
    second = await store.apply_save(
        plan(
            [event("e", axis(1), content="Erin's tulips")],
            [person("p", "Erin"), concept("c", "tulips"), location("l", "Leiden")],
        )
    )
    assert second.event_ids == ["event_2"]
    assert second.created == {"Person": ["person_2"], "Concept": ["concept_2"],
                              "Location": ["location_2"]}  # fmt: skip
    # the marks survive forgetting the newest ids, re-vectorizing and reopening
    await store.forget("event_2")
    await store.replace_vectors(
        VectorSet(events={}, entities={}, chunks=[], meta=MemoryMeta("other", DIMS, "now"))
    )
    await store.close()
    again = await reopen()
    assert (await again.counts()).events == 0
    third = await again.apply_save(plan([event("e", axis(2))], [person("p", "Frank")]))
    assert third.event_ids == ["event_3"] and third.created == {"Person": ["person_3"]}


async def test_duplicate_given_id_conflicts_and_writes_nothing(store: Store) -> None:
    await save_one(store, axis(0), given_id="book_ch1_e1")
    before = await store.counts()
    bad = plan(
        [event("a", axis(1), given_id="book_ch1_e2"), event("b", axis(2), given_id="book_ch1_e1")],
        [person("p", "Alice")],
        [rel("PARTICIPATED_IN", "p", "a")],
    )
    with pytest.raises(Conflict):
        await store.apply_save(bad)
    assert await store.counts() == before
    assert await store.id_counts(["book_ch1_e2", "book_ch1_e1"]) == {
        "book_ch1_e2": 0,
        "book_ch1_e1": 1,
    }
    assert await store.resolve_terms("alice") == frozenset()
    nxt = await store.apply_save(plan([event("e", axis(0))], [person("p", "Bob")]))
    assert nxt.event_ids == ["event_1"] and nxt.refs["p"] == "person_1"


async def test_same_given_id_twice_in_one_plan_conflicts(store: Store) -> None:
    with pytest.raises(Conflict):
        await store.apply_save(
            plan(
                [event("a", axis(0), given_id="x_ch1_e1"), event("b", axis(1), given_id="x_ch1_e1")]
            )
        )
    assert (await store.counts()).events == 0


@pytest.mark.parametrize(
    "bad_id", ["event_5", "person_2", "has space", "semi;colon", "", "x" * 200]
)
async def test_given_ids_outside_the_caller_id_form_are_rejected(store: Store, bad_id: str) -> None:
    with pytest.raises(InvalidInput):
        await save_one(store, axis(0), given_id=bad_id)
    assert (await store.counts()).events == 0


# ---------------------------------------------------------------- atomicity


async def test_a_plan_failing_midway_writes_nothing(store: Store) -> None:
    bad = plan(
        [event("e1", axis(0), chunk_vectors=[axis(1), axis(2)])],
        [person("p1", "Alice", ["Ali"]), concept("c1", "Graph")],
        [
            rel("PARTICIPATED_IN", "p1", "e1"),
            rel("MENTIONS", "e1", "c1"),
            rel("MENTIONS", "e1", "ghost"),  # neither a ref nor an existing node
        ],
        key="save-1",
    )
    with pytest.raises(NotFound):
        await store.apply_save(bad)
    counts = await store.counts()
    assert (counts.events, counts.persons, counts.concepts, counts.chunks, counts.relations) == (
        0,
        0,
        0,
        0,
        0,
    )
    assert await store.get_meta() is None
    assert await store.replay("save-1") is None
    assert await store.resolve_terms("ali") == frozenset()
    assert await store.route("summary", axis(0), EMPTY_FILTERS, frozenset(), 5) == []
    assert await store.route("chunk", axis(1), EMPTY_FILTERS, frozenset(), 5) == []
    # and the ids it would have taken are still free
    assert await save_one(store, axis(0)) == "event_1"


async def test_relations_must_respect_the_schema(store: Store) -> None:
    bad = plan([event("e", axis(0))], [person("p", "Alice")], [rel("MENTIONS", "e", "p")])
    with pytest.raises(InvalidInput):
        await store.apply_save(bad)
    unknown_type = plan([event("e", axis(0))], [person("p", "Alice")], [rel("KNOWS", "p", "e")])  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        await store.apply_save(unknown_type)
    assert (await store.counts()).events == 0


async def test_relations_may_point_at_existing_nodes(store: Store) -> None:
    first = await store.apply_save(
        plan([event("e", axis(0))], [concept("c", "Graph")], [rel("MENTIONS", "e", "c")])
    )
    concept_id = first.refs["c"]
    second = await store.apply_save(
        plan([event("e", axis(1))], [], [rel("MENTIONS", "e", concept_id)])
    )
    assert await store.events_mentioning(concept_id) == frozenset({"event_1", second.event_ids[0]})


async def test_repeated_relations_are_stored_once(store: Store) -> None:
    result = await store.apply_save(
        plan(
            [event("e1", axis(0)), event("e2", axis(1))],
            [person("p", "Alice"), concept("c", "Graph")],
            [
                rel("MENTIONS", "e1", "c"),
                rel("MENTIONS", "e1", "c"),
                rel("PARTICIPATED_IN", "p", "e1", role="host"),
                rel("PARTICIPATED_IN", "p", "e1", role="host"),
                # one attitude per event it was stated in
                rel("HAS_ATTITUDE", "p", "c", attitude="likes", event_ref="e1"),
                rel("HAS_ATTITUDE", "p", "c", attitude="likes", event_ref="e1"),
                rel("HAS_ATTITUDE", "p", "c", attitude="loves", event_ref="e2"),
            ],
        )
    )
    assert (await store.counts()).relations == 4
    attitudes = (await store.neighbours([result.refs["p"]], "HAS_ATTITUDE", "out", 10))[
        result.refs["p"]
    ]
    # event_ref is resolved to the id allocated for that event
    assert sorted(n.rel.properties["event_id"] for n in attitudes) == ["event_1", "event_2"]
    assert {n.rel.properties["attitude"] for n in attitudes} == {"likes", "loves"}


# ---------------------------------------------------------------- merging


async def test_merge_into_adds_new_aliases_only(store: Store) -> None:
    first = await store.apply_save(
        plan([event("e", axis(0))], [person("p", "Alice", ["Ali"], axis(3))])
    )
    alice = first.refs["p"]
    merged = await store.apply_save(
        plan(
            [event("e", axis(1))],
            [person("p", "Alicia", ["ALI", "A. Smith", "alice"], axis(4), merge_into=alice)],
            [rel("PARTICIPATED_IN", "p", "e")],
        )
    )
    assert merged.refs["p"] == alice
    assert merged.merged == [(alice, ["Alicia", "A. Smith"])]
    assert "Person" not in merged.created or merged.created["Person"] == []
    node = (await store.get_nodes([alice]))[0]
    assert isinstance(node, Entity)
    assert node.name == "Alice"
    assert node.aliases == ["Ali", "Alicia", "A. Smith"]
    assert (await store.counts()).persons == 1
    assert await store.resolve_terms("a. smith") == frozenset({alice})
    # the merged node keeps its own vector
    top = await store.entity_vector_top("Person", axis(3), 1)
    assert top[0][0].id == alice and top[0][1] == pytest.approx(1.0, abs=1e-5)
    # and the next new person still gets the next id
    nxt = await store.apply_save(plan([event("e", axis(0))], [person("p", "Bob")]))
    assert nxt.refs["p"] == "person_2"


async def test_a_new_entity_named_like_one_saved_since_the_plan_is_merged_into_it(
    store: Store,
) -> None:
    # Two writers made their plans before either saved: both think "Alice" and "graph" are new.
    # The second to commit merges into the first's nodes (by normalised name or alias, per
    # label) instead of creating them twice.
    first = await store.apply_save(
        plan(
            [event("e", axis(0))],
            [person("p", "Alice", ["Ali"], axis(3)), concept("c", "Graph")],
            [rel("PARTICIPATED_IN", "p", "e"), rel("MENTIONS", "e", "c")],
        )
    )
    alice, graph = first.refs["p"], first.refs["c"]
    second = await store.apply_save(
        plan(
            [event("e", axis(1))],
            [
                person("p", "ALI", ["Alice Smith"], axis(4)),
                concept("c", " graph "),
                location("l", "Alice"),  # another label: a new node of its own
            ],
            [rel("PARTICIPATED_IN", "p", "e"), rel("MENTIONS", "e", "c")],
        )
    )
    assert (second.refs["p"], second.refs["c"]) == (alice, graph)
    assert "Person" not in second.created and "Concept" not in second.created
    assert second.created["Location"] == [second.refs["l"]]
    assert dict(second.merged)[alice] == ["Alice Smith"]
    counts = await store.counts()
    assert (counts.persons, counts.concepts, counts.locations) == (1, 1, 1)
    node = (await store.get_nodes([alice]))[0]
    assert isinstance(node, Entity) and node.aliases == ["Ali", "Alice Smith"]
    top = await store.entity_vector_top("Person", axis(3), 1)  # keeps its own vector
    assert top[0][0].id == alice and top[0][1] == pytest.approx(1.0, abs=1e-5)


async def test_merge_into_an_unknown_node_fails_and_writes_nothing(store: Store) -> None:
    with pytest.raises(NotFound):
        await store.apply_save(
            plan([event("e", axis(0))], [concept("c", "Graph", merge_into="concept_9")])
        )
    assert (await store.counts()).events == 0


async def test_merge_into_a_node_of_another_label_is_rejected(store: Store) -> None:
    first = await store.apply_save(plan([event("e", axis(0))], [person("p", "Paris")]))
    with pytest.raises(InvalidInput):
        await store.apply_save(
            plan([event("e", axis(0))], [location("l", "Paris", merge_into=first.refs["p"])])
        )
    assert (await store.counts()).events == 1


# ---------------------------------------------------------------- idempotency and hashes


async def test_idempotency_key_replays_the_first_result(store: Store) -> None:
    p = plan(
        [event("e", axis(0))], [person("p", "Alice")], [rel("PARTICIPATED_IN", "p", "e")], key="k-1"
    )
    first = await store.apply_save(p)
    recorded = await store.replay("k-1")
    assert recorded is not None and recorded.replayed is True
    assert (recorded.event_ids, recorded.created, recorded.merged, recorded.refs) == (
        first.event_ids,
        first.created,
        first.merged,
        first.refs,
    )
    again = await store.apply_save(p)
    assert again.replayed is True and again.event_ids == first.event_ids
    counts = await store.counts()
    assert (counts.events, counts.persons, counts.relations) == (1, 1, 1)
    assert await store.replay("k-2") is None


async def test_concurrent_saves_with_one_key_write_once(store: Store) -> None:
    p = plan([event("e", axis(0))], key="same")
    results = await asyncio.gather(*(store.apply_save(p) for _ in range(5)))
    assert {r.event_ids[0] for r in results} == {"event_1"}
    assert sum(not r.replayed for r in results) == 1
    assert (await store.counts()).events == 1


async def test_events_with_hash_oldest_first(store: Store) -> None:
    # the oldest has the id that sorts last, so id order cannot pass for age order
    a = await save_one(store, axis(0), content="same text", day="2026-03-01", given_id="z_old")
    await save_one(store, axis(1), content="other text", day="2026-03-02")
    b = await save_one(store, axis(2), content="same text", day="2026-03-03")
    both = await store.apply_save(
        plan(
            [event("x", axis(3), content="same text"), event("y", axis(4), content="same text")],
            day="2026-03-04",
        )
    )
    hashed = (await store.get_events([a]))[0].content_hash
    assert await store.events_with_hash(hashed) == [a, b, *both.event_ids]
    assert await store.events_with_hash("0" * 64) == []


# ---------------------------------------------------------------- re-vectorize


async def _two_events(store: Store) -> list[str]:
    result = await store.apply_save(
        plan(
            [event("e1", axis(0), chunk_vectors=[axis(0), axis(1)]), event("e2", axis(1))],
            [concept("c", "Graph", vector=axis(2))],
            [rel("MENTIONS", "e1", "c")],
        )
    )
    return result.event_ids


async def test_route_pool_is_both_routes_with_their_events_hashes_and_concepts(
    store: Store,
) -> None:
    e1, e2 = await _two_events(store)
    q = axis(0) + 0.5 * axis(1)
    pool = await store.route_pool(q, EMPTY_FILTERS, frozenset(), 5)
    parts = await route_pool_by_parts(store, q, EMPTY_FILTERS, frozenset(), 5)
    assert (pool.summary, pool.chunk, pool.chunk_hashes) == (
        parts.summary, parts.chunk, parts.chunk_hashes,
    )  # fmt: skip
    assert [h.event_id for h in pool.summary] == [e1, e2]
    assert pool.summary == await store.route("summary", q, EMPTY_FILTERS, frozenset(), 5)
    assert pool.chunk == await store.route("chunk", q, EMPTY_FILTERS, frozenset(), 5)
    assert sorted(pool.events) == sorted([e1, e2])
    assert all(e.embedding is not None for e in pool.events.values())
    content = pool.events[e1].content
    assert pool.chunk_hashes[e1] == {c.text_hash for c in (await store.get_chunks([e1]))[e1]}
    assert content and pool.chunk_hashes[e2] == frozenset()
    if pool.concepts is not None:  # read on the way by stores that can
        assert pool.concepts == {e1: (("concept_1", "Graph"),), e2: ()}
    # exclusions and restrictions apply to the pool as to the routes
    only = await store.route_pool(q, EMPTY_FILTERS, frozenset({e1}), 5)
    assert list(only.events) == [e2] and [h.event_id for h in only.summary] == [e2]
    assert (await store.route_pool(q, EMPTY_FILTERS, frozenset(), 5, frozenset())).events == {}


async def test_all_for_revectorize_returns_every_event_and_entity(store: Store) -> None:
    ids = await _two_events(store)
    events, entities = await store.all_for_revectorize()
    assert sorted(e.id for e in events) == sorted(ids)
    assert all(isinstance(e, Event) and e.content.startswith("content of") for e in events)
    assert [(e.label, e.name) for e in entities] == [("Concept", "Graph")]


async def test_replace_vectors_swaps_vectors_chunks_and_meta(store: Store) -> None:
    e1, e2 = await _two_events(store)
    event1 = (await store.get_events([e1]))[0]
    new_chunk = Chunk(e1, 0, 0, 10, event1.content[:10], text_hash(event1.content[:10]), axis(5))
    meta = MemoryMeta(model="new-model", dimensions=8, updated_at="2026-04-01T00:00:00+08:00")
    await store.replace_vectors(
        VectorSet(
            events={e1: axis(6), e2: axis(7)},
            entities={"concept_1": axis(6)},
            chunks=[new_chunk],
            meta=meta,
        )
    )
    assert await store.get_meta() == meta
    hits = await store.route("summary", axis(6), EMPTY_FILTERS, frozenset(), 5)
    assert hits[0].event_id == e1 and hits[0].score == pytest.approx(1.0, abs=1e-5)
    old = await store.route("summary", axis(0), EMPTY_FILTERS, frozenset(), 5)
    assert all(h.score == pytest.approx(0.0, abs=1e-5) for h in old)
    chunk_hits = await store.route("chunk", axis(5), EMPTY_FILTERS, frozenset(), 5)
    assert [(h.event_id, h.chunk_index, h.start, h.end) for h in chunk_hits] == [(e1, 0, 0, 10)]
    chunks = await store.get_chunks([e1, e2])
    assert [c.text for c in chunks[e1]] == [event1.content[:10]]
    assert chunks.get(e2, []) == []
    assert (await store.counts()).chunks == 1
    top = await store.entity_vector_top("Concept", axis(6), 1)
    assert top[0][1] == pytest.approx(1.0, abs=1e-5)


async def test_replace_vectors_can_change_the_dimension(store: Store) -> None:
    e1, e2 = await _two_events(store)
    four = MemoryMeta(model="small", dimensions=4, updated_at="2026-04-01T00:00:00+08:00")
    v = np.array([0, 0, 1, 0], dtype=np.float32)
    w = np.array([0, 1, 0, 0], dtype=np.float32)
    await store.replace_vectors(VectorSet(events={e1: w, e2: v}, entities={}, chunks=[], meta=four))
    assert (await store.get_meta()) == four
    hits = await store.route("summary", v, EMPTY_FILTERS, frozenset(), 5)
    assert [h.event_id for h in hits] == [e2, e1]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert await store.route("chunk", v, EMPTY_FILTERS, frozenset(), 5) == []
    # saves at the new width land in the same index
    e3 = (await store.apply_save(plan([event("e", v)], meta=four))).event_ids[0]
    hits = await store.route("summary", v, EMPTY_FILTERS, frozenset(), 5)
    assert [h.event_id for h in hits[:2]] == sorted([e2, e3])


# ---------------------------------------------------------------- forget


async def test_forget_deletes_the_event_and_prunes_orphaned_entities(store: Store) -> None:
    first = await store.apply_save(
        plan(
            [event("e1", axis(0), chunk_vectors=[axis(1), axis(2)])],
            [
                person("alice", "Alice"),
                person("bob", "Bob"),
                person("carol", "Carol"),
                concept("c", "Graph"),
                location("l", "Paris"),
            ],
            [
                rel("PARTICIPATED_IN", "alice", "e1"),
                rel("MENTIONS", "e1", "c"),
                rel("OCCURRED_AT", "e1", "l"),
                # attitudes stated in e1 go with it, whether or not their ends survive
                rel("HAS_ATTITUDE", "alice", "bob", attitude="trusts", event_ref="e1"),
                rel("HAS_ATTITUDE", "alice", "carol", attitude="admires", event_ref="e1"),
            ],
        )
    )
    refs = first.refs
    second = await store.apply_save(
        plan(
            [event("e2", axis(3))],
            [],
            [
                rel("PARTICIPATED_IN", refs["alice"], "e2"),
                rel("PARTICIPATED_IN", refs["carol"], "e2"),
            ],
        )
    )
    e1, e2 = refs["e1"], second.event_ids[0]

    deleted = await store.forget(e1)
    assert deleted[0] == e1
    # Alice and Carol still take part in event_2
    assert set(deleted[1:]) == {refs["bob"], refs["c"], refs["l"]}
    assert await store.id_counts([e1, refs["alice"], refs["bob"], refs["c"], refs["l"], e2]) == {
        e1: 0,
        refs["alice"]: 1,
        refs["bob"]: 0,
        refs["c"]: 0,
        refs["l"]: 0,
        e2: 1,
    }
    counts = await store.counts()
    assert (counts.events, counts.persons, counts.concepts, counts.locations) == (1, 2, 0, 0)
    assert (counts.chunks, counts.relations) == (0, 2)
    assert await store.get_chunks([e1]) in ({}, {e1: []})
    remaining = await store.route("summary", axis(0), EMPTY_FILTERS, frozenset(), 5)
    assert [h.event_id for h in remaining] == [e2]
    assert await store.route("chunk", axis(1), EMPTY_FILTERS, frozenset(), 5) == []
    assert await store.resolve_terms("graph") == frozenset()
    graph = await store.graph(100, 100)
    assert {n.id for n in graph.nodes} == {e2, refs["alice"], refs["carol"]}
    assert {(r.type, r.source) for r in graph.relations} == {
        ("PARTICIPATED_IN", refs["alice"]),
        ("PARTICIPATED_IN", refs["carol"]),
    }


async def test_forget_unknown_or_non_event_ids_raises(store: Store) -> None:
    result = await store.apply_save(
        plan([event("e", axis(0))], [person("p", "Alice")], [rel("PARTICIPATED_IN", "p", "e")])
    )
    with pytest.raises(NotFound):
        await store.forget("event_99")
    with pytest.raises(NotFound):
        await store.forget(result.refs["p"])
    assert (await store.counts()).events == 1


# ---------------------------------------------------------------- persistence


async def test_data_survives_close_and_reopen(store: Store, reopen: Reopen) -> None:
    result = await store.apply_save(
        plan(
            [event("e", axis(0), chunk_vectors=[axis(1)], time="yesterday")],
            [person("p", "Alice", ["Ali"], axis(2)), concept("c", "Graph", vector=axis(3))],
            [rel("PARTICIPATED_IN", "p", "e", role="host"), rel("MENTIONS", "e", "c")],
            key="persist",
        )
    )
    before_events = await store.get_events(result.event_ids, with_vectors=True)
    before_counts = await store.counts()
    await store.close()

    again = await reopen()
    assert await again.counts() == before_counts
    assert await again.get_meta() == META
    after = await again.get_events(result.event_ids, with_vectors=True)
    assert [
        (e.id, e.summary, e.content, e.time, e.create_time, e.create_date, e.content_hash)
        for e in after
    ] == [
        (e.id, e.summary, e.content, e.time, e.create_time, e.create_date, e.content_hash)
        for e in before_events
    ]
    assert after[0].embedding is not None
    np.testing.assert_allclose(after[0].embedding, axis(0), atol=1e-6)
    assert [
        h.event_id for h in await again.route("summary", axis(0), EMPTY_FILTERS, frozenset(), 3)
    ] == ["event_1"]
    chunk = await again.route("chunk", axis(1), EMPTY_FILTERS, frozenset(), 3)
    assert [(h.event_id, h.chunk_index) for h in chunk] == [("event_1", 0)]
    assert await again.resolve_terms("ali") == frozenset({result.refs["p"]})
    similar = await again.similar_entities("Concept", axis(3), 3, 0.9)
    assert [e.id for e, _ in similar] == [result.refs["c"]]
    replayed = await again.replay("persist")
    assert replayed is not None and replayed.event_ids == result.event_ids
    assert await save_one(again, axis(4)) == "event_2"
