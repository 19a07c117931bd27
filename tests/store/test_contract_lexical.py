"""Store contract, part 5: the lexical (BM25) route over chunk texts and summaries, on every
store, and the full-text index it reads staying derived from the stored texts."""

from __future__ import annotations

import uuid

import pytest

from mnemoql.engine.models import EMPTY_FILTERS, Filters
from mnemoql.engine.store.base import Store
from tests.store._builders import at_cosine, axis, concept, event, person, plan, rel
from tests.store.conftest import StoreLocation

NONE: frozenset[str] = frozenset()
ONE = {"chunk_vectors": [axis(0)]}  # one chunk holding the whole content

TEXTS = {
    "berlin": "Alice moved to Berlin last spring to work on the graph database migration.",
    "tokyo": "Bob went cycling in Tokyo with friends; the weather was lovely.",
    "budget": "The quarterly budget review moved to Friday, after the release.",
    "zh": "今天北京下雨了，我们讨论了图数据库的部署方案。",
    "plain": "Nothing much happened at all today, just a quiet afternoon at home.",
}


async def _world(store: Store) -> dict[str, str]:
    """One event per text: its content is the text (one chunk), its summary a short label."""
    drafts = [
        event(
            key,
            at_cosine(0.5),
            summary=f"note {i}",
            content=text,
            chunk_vectors=[at_cosine(0.5)],
        )
        for i, (key, text) in enumerate(TEXTS.items())
    ]
    result = await store.apply_save(plan(drafts))
    return result.refs


async def _lex(store: Store, text: str, **kw: object) -> list[str]:
    hits = await store.lexical_route(
        text,
        kw.pop("filters", EMPTY_FILTERS),  # type: ignore[arg-type]
        kw.pop("exclude", NONE),  # type: ignore[arg-type]
        kw.pop("limit", 10),  # type: ignore[arg-type]
        kw.pop("restrict", None),  # type: ignore[arg-type]
    )
    return [h.event_id for h in hits]


async def test_lexical_route_ranks_by_bm25_over_chunk_texts(store: Store) -> None:
    r = await _world(store)
    assert await _lex(store, "where did Alice move? Berlin") == [r["berlin"]]
    assert await _lex(store, "who moved to Berlin") == [r["berlin"], r["budget"]]
    assert await _lex(store, "moved on Friday") == [r["budget"], r["berlin"]]
    assert await _lex(store, "cycling weather") == [r["tokyo"]]
    # stop words and unknown words match nothing
    assert await _lex(store, "the of and") == []
    assert await _lex(store, "xylophone") == []


async def test_lexical_hits_are_distinct_events_with_the_best_chunk_range(store: Store) -> None:
    r = await _world(store)
    hits = await store.lexical_route("graph database migration", EMPTY_FILTERS, NONE, 10)
    assert [h.event_id for h in hits] == [r["berlin"]]
    hit = hits[0]
    assert hit.score > 0
    chunks = {c.chunk_index: c for c in (await store.get_chunks([r["berlin"]]))[r["berlin"]]}
    assert hit.chunk_index is not None
    chunk = chunks[hit.chunk_index]
    assert (hit.start, hit.end) == (chunk.start, chunk.end)
    assert "migration" in chunk.text


async def test_lexical_route_reads_summaries_too(store: Store) -> None:
    ids = (
        await store.apply_save(
            plan(
                [
                    event("s", axis(0), summary="Quarterly planning offsite", content="…", **ONE),
                    event("c", axis(0), summary="x", content="We planned the offsite.", **ONE),
                ]
            )
        )
    ).event_ids
    hits = await store.lexical_route("quarterly offsite", EMPTY_FILTERS, NONE, 10)
    assert [h.event_id for h in hits] == ids  # the summary has both terms
    assert hits[0].chunk_index is None  # a summary hit has no chunk range


async def test_lexical_route_matches_chinese_by_bigrams(store: Store) -> None:
    r = await _world(store)
    assert await _lex(store, "图数据库怎么部署") == [r["zh"]]
    assert await _lex(store, "北京天气") == [r["zh"]]


async def test_lexical_route_applies_filters_exclusions_and_restrict(store: Store) -> None:
    r = await _world(store)
    both = await _lex(store, "moved")
    assert both == [r["budget"], r["berlin"]]  # the shorter text scores higher
    assert await _lex(store, "moved", exclude=frozenset({r["berlin"]})) == [r["budget"]]
    assert await _lex(store, "moved", restrict=frozenset({r["budget"], "event_404"})) == [
        r["budget"]
    ]
    assert await _lex(store, "moved", restrict=frozenset()) == []
    assert await _lex(store, "moved", limit=1) == both[:1]
    assert await _lex(store, "moved", filters=Filters(date_from="2026-03-02")) == []
    assert await _lex(store, "moved", filters=Filters(date_to="2026-03-01")) == both


async def test_lexical_route_applies_entity_groups(store: Store) -> None:
    result = await store.apply_save(
        plan(
            [
                event("a", axis(0), content="the release train leaves on Friday", **ONE),
                event("b", axis(0), content="the release notes are late", **ONE),
            ],
            [person("p", "Alice"), concept("c", "Release")],
            [rel("PARTICIPATED_IN", "p", "a"), rel("MENTIONS", "b", "c")],
        )
    )
    r = result.refs
    alice = Filters(groups=(frozenset({r["p"]}),))
    assert await _lex(store, "release", filters=alice) == [r["a"]]


async def test_route_pool_with_text_carries_the_lexical_hits_and_their_events(
    store: Store,
) -> None:
    r = await _world(store)
    pool = await store.route_pool(axis(5), EMPTY_FILTERS, NONE, 2, text="Tokyo cycling")
    assert [h.event_id for h in pool.lexical] == [r["tokyo"]]
    assert r["tokyo"] in pool.events  # found only lexically, still read with its vector
    assert pool.events[r["tokyo"]].embedding is not None
    assert pool.chunk_hashes[r["tokyo"]]
    plain = await store.route_pool(axis(5), EMPTY_FILTERS, NONE, 2)
    assert plain.lexical == []


async def test_forget_removes_an_event_from_the_lexical_route(store: Store) -> None:
    r = await _world(store)
    await store.forget(r["berlin"])
    assert await _lex(store, "Berlin migration") == []
    assert await _lex(store, "moved") == [r["budget"]]


async def test_lexical_route_survives_replace_vectors_and_reopen(
    store: Store, store_location: StoreLocation
) -> None:
    from mnemoql.engine.models import Chunk, MemoryMeta, VectorSet

    r = await _world(store)
    events = await store.get_events(list(r.values()), with_vectors=True)
    chunks = await store.get_chunks([e.id for e in events], with_vectors=True)
    await store.replace_vectors(
        VectorSet(
            events={e.id: axis(1) for e in events},
            entities={},
            chunks=[
                Chunk(c.event_id, c.chunk_index, c.start, c.end, c.text, c.text_hash, axis(2))
                for cs in chunks.values()
                for c in cs
            ],
            meta=MemoryMeta("other-model", 4, "2026-03-02T00:00:00+08:00"),
        )
    )
    assert await _lex(store, "Tokyo cycling") == [r["tokyo"]]
    await store.close()
    again = store_location.make()
    await again.open()
    try:
        assert await _lex(again, "图数据库") == [r["zh"]]
    finally:
        await again.close()


async def test_restore_into_another_space_gives_the_same_lexical_hits(
    store: Store, store_location: StoreLocation
) -> None:
    r = await _world(store)
    records = [rec async for rec in store.export_records()]
    other = store_location.factory.make(store_location.path, f"t{uuid.uuid4().hex[:12]}")
    await other.open()
    try:
        await other.import_records(records)
        for query in ("moved", "Tokyo cycling", "图数据库", "quiet afternoon"):
            assert await _lex(other, query) == await _lex(store, query), query
        assert await _lex(other, "Berlin") == [r["berlin"]]
    finally:
        await other.close()
        if store_location.factory.cleanup is not None:
            await store_location.factory.cleanup(store_location.path, other.space)


async def test_lexical_route_stays_inside_its_space(
    store: Store, store_location: StoreLocation
) -> None:
    mine = await _world(store)
    # a space whose name ends with ours after a dash: Lucene splits it into the same words
    other = store_location.factory.make(store_location.path, f"x-{store_location.space}")
    await other.open()
    try:
        theirs = (
            await other.apply_save(plan([event("e", axis(0), content=TEXTS["tokyo"] * 3, **ONE)]))
        ).event_ids
        assert await _lex(store, "Tokyo cycling") == [mine["tokyo"]]
        assert await _lex(other, "Tokyo cycling") == theirs
    finally:
        await other.close()
        if store_location.factory.cleanup is not None:
            await store_location.factory.cleanup(store_location.path, other.space)


@pytest.mark.parametrize("limit", [0, -1])
async def test_lexical_route_with_no_room_returns_nothing(store: Store, limit: int) -> None:
    await _world(store)
    assert await _lex(store, "moved", limit=limit) == []
