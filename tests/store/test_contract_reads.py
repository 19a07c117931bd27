"""Store contract, part 2: the retrieval routes and the event/entity lookups behind search,
expand, nearby and save merging. Only the ``Store`` protocol is used."""

from __future__ import annotations

import numpy as np
import pytest

from mnemoql.engine.models import EMPTY_FILTERS, Filters
from mnemoql.engine.store.base import Store
from mnemoql.engine.text import normalise_name
from tests.store._builders import (
    at_cosine,
    axis,
    concept,
    event,
    location,
    person,
    plan,
    rel,
    save_one,
    vec,
)

NONE: frozenset[str] = frozenset()


async def _ids(store: Store, *vectors: np.ndarray) -> list[str]:
    result = await store.apply_save(plan([event(f"e{i}", v) for i, v in enumerate(vectors)]))
    return result.event_ids


# ---------------------------------------------------------------- summary route


async def test_summary_route_orders_by_raw_cosine(store: Store) -> None:
    ids = await _ids(
        store, at_cosine(0.2), at_cosine(0.9), at_cosine(-1.0), at_cosine(0.5), axis(1)
    )
    hits = await store.route("summary", axis(0), EMPTY_FILTERS, NONE, 10)
    assert [h.event_id for h in hits] == [ids[1], ids[3], ids[0], ids[4], ids[2]]
    # raw cosine in [-1, 1], not Neo4j's (1 + cos) / 2
    assert [h.score for h in hits] == pytest.approx([0.9, 0.5, 0.2, 0.0, -1.0], abs=1e-5)
    assert all(h.chunk_index is None for h in hits)


async def test_summary_route_breaks_ties_by_id(store: Store) -> None:
    same = at_cosine(0.7)
    ids = await _ids(store, *([same] * 11), axis(0))
    imported = await store.apply_save(
        plan([event("b", same, given_id="b_ch1_e1"), event("a", same, given_id="a_ch1_e1")])
    )
    hits = await store.route("summary", axis(0), EMPTY_FILTERS, NONE, 20)
    assert hits[0].event_id == ids[11]
    tied = [h.event_id for h in hits[1:]]
    assert tied == sorted([*ids[:11], *imported.event_ids])  # "event_10" < "event_2" as text
    assert tied[:2] == ["a_ch1_e1", "b_ch1_e1"]
    cut = await store.route("summary", axis(0), EMPTY_FILTERS, NONE, 4)
    assert [h.event_id for h in cut] == [ids[11], *tied[:3]]


async def test_route_normalises_stored_and_query_vectors(store: Store) -> None:
    raw = np.zeros(8, dtype=np.float32)
    raw[:2] = [3.0, 4.0]
    await save_one(store, raw)
    hits = await store.route("summary", axis(0) * 5, EMPTY_FILTERS, NONE, 1)
    assert hits[0].score == pytest.approx(0.6, abs=1e-5)


async def test_route_limit_and_empty_store(store: Store) -> None:
    assert await store.route("summary", axis(0), EMPTY_FILTERS, NONE, 5) == []
    assert await store.route("chunk", axis(0), EMPTY_FILTERS, NONE, 5) == []
    await _ids(store, *(at_cosine(c) for c in (0.1, 0.2, 0.3, 0.4, 0.5)))
    assert len(await store.route("summary", axis(0), EMPTY_FILTERS, NONE, 3)) == 3
    assert await store.route("summary", axis(0), EMPTY_FILTERS, NONE, 0) == []


async def test_events_without_a_vector_are_not_candidates(store: Store) -> None:
    with_vec = await save_one(store, at_cosine(0.1))
    without = await save_one(store, None)
    hits = await store.route("summary", axis(0), EMPTY_FILTERS, NONE, 5)
    assert [h.event_id for h in hits] == [with_vec]
    assert without in await store.recent_events(EMPTY_FILTERS, NONE, 5)


async def test_route_rejects_a_query_of_another_width_with_no_hits(store: Store) -> None:
    await save_one(store, axis(0), chunk_vectors=[axis(0)])
    q = np.ones(4, dtype=np.float32)
    assert await store.route("summary", q, EMPTY_FILTERS, NONE, 5) == []
    assert await store.route("chunk", q, EMPTY_FILTERS, NONE, 5) == []


# ---------------------------------------------------------------- filters before the cut


async def test_exclusions_refill_the_pool(store: Store) -> None:
    ids = await _ids(store, *(at_cosine(1.0 - i / 20) for i in range(10)))
    hits = await store.route("summary", axis(0), EMPTY_FILTERS, frozenset(ids[:3]), 3)
    assert [h.event_id for h in hits] == ids[3:6]


async def test_date_filter_is_inclusive_and_applied_before_the_cut(store: Store) -> None:
    days = ["2026-02-27", "2026-02-28", "2026-03-01", "2026-03-02", "2026-03-03"]
    ids = [await save_one(store, at_cosine(0.9 - i / 10), day=d) for i, d in enumerate(days)]
    window = Filters(date_from="2026-02-28", date_to="2026-03-02")
    hits = await store.route("summary", axis(0), window, NONE, 2)
    assert [h.event_id for h in hits] == [ids[1], ids[2]]
    hits = await store.route("summary", axis(0), Filters(date_from="2026-03-02"), NONE, 5)
    assert [h.event_id for h in hits] == [ids[3], ids[4]]
    hits = await store.route("summary", axis(0), Filters(date_to="2026-02-27"), NONE, 5)
    assert [h.event_id for h in hits] == [ids[0]]


async def _entity_world(store: Store) -> dict[str, str]:
    """e1: Alice + Graph, e2: Alice + Paris, e3: Bob + Graph, e4: Bob alone; best first."""
    result = await store.apply_save(
        plan(
            [
                event("e1", at_cosine(0.9), chunk_vectors=[at_cosine(0.9)]),
                event("e2", at_cosine(0.8), chunk_vectors=[at_cosine(0.8)]),
                event("e3", at_cosine(0.7), chunk_vectors=[at_cosine(0.7)]),
                event("e4", at_cosine(0.95), chunk_vectors=[at_cosine(0.95)]),
            ],
            [
                person("a", "Alice"),
                person("b", "Bob"),
                concept("g", "Graph"),
                location("p", "Paris"),
            ],
            [
                rel("PARTICIPATED_IN", "a", "e1"),
                rel("MENTIONS", "e1", "g"),
                rel("PARTICIPATED_IN", "a", "e2"),
                rel("OCCURRED_AT", "e2", "p"),
                rel("PARTICIPATED_IN", "b", "e3"),
                rel("MENTIONS", "e3", "g"),
                rel("PARTICIPATED_IN", "b", "e4"),
                # an attitude is not adjacency: it must not make e4 pass a Graph filter
                rel("HAS_ATTITUDE", "b", "g", attitude="dislikes", event_ref="e4"),
            ],
        )
    )
    return result.refs


@pytest.mark.parametrize("route", ["summary", "chunk"])
async def test_entity_groups_and_across_or_within(store: Store, route: str) -> None:
    r = await _entity_world(store)

    async def hits(*groups: set[str], limit: int = 10) -> list[str]:
        f = Filters(groups=tuple(frozenset(g) for g in groups))
        return [h.event_id for h in await store.route(route, axis(0), f, NONE, limit)]  # type: ignore[arg-type]

    assert await hits({r["a"]}) == [r["e1"], r["e2"]]
    assert await hits({r["g"]}) == [r["e1"], r["e3"]]
    assert await hits({r["a"]}, {r["g"]}) == [r["e1"]]
    assert await hits({r["a"], r["b"]}, {r["g"], r["p"]}) == [r["e1"], r["e2"], r["e3"]]
    assert await hits({r["b"]}, limit=1) == [r["e4"]]
    assert await hits({r["g"]}, limit=1) == [r["e1"]]  # e4 scores higher but is filtered first
    assert await hits(set()) == []


@pytest.mark.parametrize("route", ["summary", "chunk"])
async def test_restrict_limits_candidates(store: Store, route: str) -> None:
    r = await _entity_world(store)
    only = frozenset({r["e2"], r["e3"], "event_404"})
    got = await store.route(route, axis(0), EMPTY_FILTERS, NONE, 10, restrict=only)  # type: ignore[arg-type]
    assert [h.event_id for h in got] == [r["e2"], r["e3"]]
    got = await store.route(route, axis(0), EMPTY_FILTERS, frozenset({r["e2"]}), 10, restrict=only)  # type: ignore[arg-type]
    assert [h.event_id for h in got] == [r["e3"]]
    assert await store.route(route, axis(0), EMPTY_FILTERS, NONE, 10, restrict=frozenset()) == []  # type: ignore[arg-type]


# ---------------------------------------------------------------- chunk route


async def test_chunk_route_scores_each_event_by_its_best_chunk(store: Store) -> None:
    result = await store.apply_save(
        plan(
            [
                event("a", axis(7), chunk_vectors=[at_cosine(0.1), at_cosine(0.8), at_cosine(0.3)]),
                event("b", axis(7), chunk_vectors=[at_cosine(0.6), at_cosine(0.6)]),
                event("legacy", at_cosine(0.99)),  # no chunks: summary route only
            ]
        )
    )
    a, b, legacy = result.event_ids
    hits = await store.route("chunk", axis(0), EMPTY_FILTERS, NONE, 10)
    assert [h.event_id for h in hits] == [a, b]  # distinct events
    assert hits[0].score == pytest.approx(0.8, abs=1e-5)
    chunks = (await store.get_chunks([a]))[a]
    assert (hits[0].chunk_index, hits[0].start, hits[0].end) == (1, chunks[1].start, chunks[1].end)
    assert hits[1].chunk_index == 0  # equal chunks: the first one
    assert hits[1].score == pytest.approx(0.6, abs=1e-5)
    summary = await store.route("summary", axis(0), EMPTY_FILTERS, NONE, 10)
    assert summary[0].event_id == legacy
    events = await store.get_events([legacy, a])
    assert [e.has_chunks for e in events] == [False, True]


async def test_chunk_route_ties_break_by_id_and_limit_counts_events(store: Store) -> None:
    same = at_cosine(0.5)
    result = await store.apply_save(
        plan(
            [event(f"e{i}", axis(7), chunk_vectors=[same, same, at_cosine(0.1)]) for i in range(12)]
        )
    )
    hits = await store.route("chunk", axis(0), EMPTY_FILTERS, NONE, 5)
    assert [h.event_id for h in hits] == sorted(result.event_ids)[:5]
    assert all(h.chunk_index == 0 for h in hits)


async def test_chunk_route_exclusions_refill(store: Store) -> None:
    ids = (
        await store.apply_save(
            plan(
                [event(f"e{i}", axis(7), chunk_vectors=[at_cosine(0.9 - i / 20)]) for i in range(6)]
            )
        )
    ).event_ids
    hits = await store.route("chunk", axis(0), EMPTY_FILTERS, frozenset(ids[:2]), 2)
    assert [h.event_id for h in hits] == ids[2:4]


# ---------------------------------------------------------------- recent events


async def test_recent_events_by_create_time_then_id_descending(store: Store) -> None:
    a = await save_one(store, axis(0), day="2026-03-01", clock="09:00:00")
    b = await save_one(store, None, day="2026-03-03", clock="08:00:00")
    same = await store.apply_save(
        plan([event("x", axis(1)), event("y", axis(2))], day="2026-03-02", clock="12:00:00")
    )
    c, d = same.event_ids
    assert await store.recent_events(EMPTY_FILTERS, NONE, 10) == [b, d, c, a]
    assert await store.recent_events(EMPTY_FILTERS, NONE, 2) == [b, d]
    assert await store.recent_events(EMPTY_FILTERS, frozenset({b}), 2) == [d, c]
    window = Filters(date_from="2026-03-01", date_to="2026-03-02")
    assert await store.recent_events(window, NONE, 10) == [d, c, a]
    assert await store.recent_events(EMPTY_FILTERS, NONE, 10, restrict=frozenset({a, c})) == [c, a]


async def test_recent_events_apply_entity_groups(store: Store) -> None:
    r = await _entity_world(store)
    f = Filters(groups=(frozenset({r["a"], r["b"]}), frozenset({r["g"]})))
    assert await store.recent_events(f, NONE, 10) == sorted([r["e1"], r["e3"]], reverse=True)


# ---------------------------------------------------------------- event lookups


async def test_get_events_in_the_order_asked_skipping_unknown(store: Store) -> None:
    ids = await _ids(store, vec(3, 4), axis(1), axis(2))
    got = await store.get_events([ids[2], "event_99", ids[0]])
    assert [e.id for e in got] == [ids[2], ids[0]]
    assert all(e.embedding is None for e in got)
    with_vectors = await store.get_events([ids[0]], with_vectors=True)
    assert with_vectors[0].embedding is not None
    np.testing.assert_allclose(with_vectors[0].embedding, vec(3, 4), atol=1e-6)
    first = got[1]
    assert first.summary == "summary of e0" and first.content.startswith("content of e0")
    assert first.create_date == "2026-03-01" and first.create_time == "2026-03-01T10:00:00+08:00"


async def test_get_chunks_by_index_with_exact_ranges(store: Store) -> None:
    content = "0123456789" * 5
    eid = await save_one(store, axis(0), content=content, chunk_vectors=[axis(1), axis(2), axis(3)])
    chunks = (await store.get_chunks([eid]))[eid]
    assert [c.chunk_index for c in chunks] == [0, 1, 2]
    assert all(c.event_id == eid and c.id == f"{eid}#{c.chunk_index}" for c in chunks)
    assert all(content[c.start : c.end] == c.text for c in chunks)
    assert all(c.embedding is None for c in chunks)
    with_vectors = (await store.get_chunks([eid], with_vectors=True))[eid]
    assert with_vectors[2].embedding is not None
    np.testing.assert_allclose(with_vectors[2].embedding, axis(3), atol=1e-6)


async def test_id_counts(store: Store) -> None:
    eid = await save_one(store, axis(0), given_id="book_ch1_e1")
    assert await store.id_counts([eid, "event_1", "nope"]) == {eid: 1, "event_1": 0, "nope": 0}


async def test_events_mentioning(store: Store) -> None:
    r = await _entity_world(store)
    assert await store.events_mentioning(r["g"]) == frozenset({r["e1"], r["e3"]})
    assert await store.events_mentioning(r["p"]) == frozenset()  # OCCURRED_AT is not MENTIONS
    assert await store.events_mentioning("concept_404") == frozenset()


async def test_positional_events_match_prefix_and_literal_chapter(store: Store) -> None:
    given = [
        "book_ch3_e1",
        "book_ch3_e02",
        "book_ch3_e10",
        "book_ch33_e1",
        "book_ch03_e5",
        "other_ch3_e1",
        "book_ch3_e1x",
        "my.book_ch3_e4",
    ]
    await store.apply_save(plan([event(g, axis(0), given_id=g) for g in given]))
    got = await store.positional_events("book", "3")
    assert sorted(got) == sorted(["book_ch3_e1", "book_ch3_e02", "book_ch3_e10"])
    assert await store.positional_events("book", "03") == ["book_ch03_e5"]
    assert await store.positional_events("my.book", "3") == ["my.book_ch3_e4"]
    assert await store.positional_events("book", "4") == []


# ---------------------------------------------------------------- entity resolution


async def test_resolve_terms_compares_nfkc_casefolded_names_and_aliases(store: Store) -> None:
    result = await store.apply_save(
        plan(
            [event("e", axis(0))],
            [
                person("p", "Ｊｏｈｎ　Ｓｍｉｔｈ", ["Straße Man"]),
                concept("c", "Neo4j", ["图数据库"]),
                location("l", "  Paris "),
            ],
        )
    )
    r = result.refs
    assert await store.resolve_terms(normalise_name("john smith")) == frozenset({r["p"]})
    assert await store.resolve_terms(normalise_name("STRASSE MAN")) == frozenset({r["p"]})
    assert await store.resolve_terms(normalise_name("NEO4J")) == frozenset({r["c"]})
    assert await store.resolve_terms(normalise_name("图数据库")) == frozenset({r["c"]})
    assert await store.resolve_terms(normalise_name("paris")) == frozenset({r["l"]})
    assert await store.resolve_terms(normalise_name("Lyon")) == frozenset()
    assert await store.resolve_terms(normalise_name("summary of e")) == frozenset()


async def test_resolve_terms_spans_labels(store: Store) -> None:
    result = await store.apply_save(
        plan([event("e", axis(0))], [person("p", "Jordan"), location("l", "Jordan")])
    )
    assert await store.resolve_terms("jordan") == frozenset({result.refs["p"], result.refs["l"]})


async def test_find_entities_by_label_name_or_alias(store: Store) -> None:
    result = await store.apply_save(
        plan(
            [event("e", axis(0))],
            [
                person("p", "Paris Hilton", ["Paris"]),
                location("l", "Paris"),
                concept("c", "Graph", ["图"]),
            ],
        )
    )
    r = result.refs
    assert [e.id for e in await store.find_entities("Location", ["paris"])] == [r["l"]]
    people = await store.find_entities("Person", ["paris", "nobody"])
    assert [(e.id, e.name, e.aliases) for e in people] == [(r["p"], "Paris Hilton", ["Paris"])]
    assert [e.id for e in await store.find_entities("Concept", ["图", "graph"])] == [r["c"]]
    assert await store.find_entities("Concept", []) == []


async def test_similar_entities_threshold_and_order(store: Store) -> None:
    result = await store.apply_save(
        plan(
            [event("e", axis(0))],
            [
                concept("c1", "one", vector=at_cosine(0.5)),
                concept("c2", "two", vector=at_cosine(1.0)),
                concept("c3", "three", vector=at_cosine(0.8)),
                concept("c4", "four", vector=at_cosine(-1.0)),
                concept("c5", "five"),  # no vector
                person("p", "same vector, other label", vector=at_cosine(1.0)),
            ],
        )
    )
    r = result.refs
    got = await store.similar_entities("Concept", axis(0), 5, 0.75)
    assert [(e.id, e.name) for e, _ in got] == [(r["c2"], "two"), (r["c3"], "three")]
    assert [s for _, s in got] == pytest.approx([1.0, 0.8], abs=1e-5)
    assert [e.id for e, _ in await store.similar_entities("Concept", axis(0), 1, 0.75)] == [r["c2"]]
    assert await store.similar_entities("Concept", axis(0), 5, 0.99999) != []
    assert await store.similar_entities("Location", axis(0), 5, -1.0) == []
    top = await store.entity_vector_top("Concept", axis(0), 3)
    assert [e.id for e, _ in top] == [r["c2"], r["c3"], r["c1"]]
    everything = await store.entity_vector_top("Concept", axis(0), 10)
    assert [e.id for e, _ in everything] == [r["c2"], r["c3"], r["c1"], r["c4"]]
    assert everything[-1][1] == pytest.approx(-1.0, abs=1e-5)
