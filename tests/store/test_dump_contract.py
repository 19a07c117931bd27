"""Store contract, part 5: a whole memory moves between stores as a dump (``engine.dump``).

A memory with every kind of data (caller and allocated ids with holes, chunks over CJK and
astral text, merged aliases, relation properties, attitudes per event, zero and missing
vectors, topics with related paths and a rebinding, idempotency records) is exported from the
store under test, restored into a fresh space of *every* available store, and exported again:
the lines must be identical, and so must what the restored store answers. Restores are
all-or-nothing: into a non-empty space (CONFLICT) or from a bad or truncated dump, the target
is left as it was.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from mnemoql.engine import dump
from mnemoql.engine.drafts import TopicDraft
from mnemoql.engine.errors import Conflict, InvalidInput
from mnemoql.engine.models import EMPTY_FILTERS, Filters, VectorSet, epoch_ms
from mnemoql.engine.store.base import Store
from mnemoql.engine.text import content_hash
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
    vec,
)
from tests.store.factories import STORE_FACTORIES, StoreFactory

CJK = "周三，Alice 在柏林和 Bob 讨论图记忆的检索；😀🎉 astral 字符也要按码点切分。" * 3


async def build_memory(store: Store) -> dict[str, str]:
    """Every kind of data a memory can hold; returns a few ids by name."""
    first = await store.apply_save(
        plan(
            [
                event(
                    "e1",
                    axis(0),
                    content=CJK,
                    chunk_vectors=[axis(0), vec(1, 1), axis(2)],
                    time="上周三",
                ),
                event("e2", vec(1, 2), given_id="book_ch3_e12", chunk_vectors=[axis(1)]),
            ],
            [
                person("alice", "Alice", ["Ali"], vec(0, 0, 1), description="a person"),
                person("bob", "Bob", [], None),  # no vector
                concept("graph", "图记忆", ["graph memory"], axis(3)),
                concept("zero", "Nothing", [], np.zeros(DIMS, np.float32)),  # zero vector
                location("berlin", "Berlin", [], axis(4)),
            ],
            [
                rel("PARTICIPATED_IN", "alice", "e1", role="host"),
                rel("PARTICIPATED_IN", "bob", "e1"),
                rel("PARTICIPATED_IN", "alice", "e2", role="guest"),
                rel("OCCURRED_AT", "e1", "berlin"),
                rel("MENTIONS", "e1", "graph"),
                rel("MENTIONS", "e2", "graph"),
                rel("MENTIONS", "e2", "zero"),
                rel("HAS_ATTITUDE", "alice", "graph", event_ref="e1", attitude="likes"),
                rel("HAS_ATTITUDE", "alice", "graph", event_ref="e2", attitude="doubts"),
                rel("HAS_ATTITUDE", "bob", "alice", event_ref="e1", attitude="trusts"),
            ],
            key="first-save",
        )
    )
    p2 = plan(
        [event("e3", axis(5), chunk_vectors=[axis(5), axis(6)]), event("e4", None)],
        [person("ali", "ALI", ["Alice B."], merge_into=first.refs["alice"])],
        [rel("PARTICIPATED_IN", "ali", "e3", role="author"), rel("MENTIONS", "e3", "concept_1")],
        day="2026-03-02",
        clock="11:30:00",
        key="second-save",
    )
    p2.topic = TopicDraft("work->mnemoql->api", ["hiring", "work->ops"], 0.55, 0.35, 0.5)
    second = await store.apply_save(p2)
    p3 = plan([event("e5", axis(7))], day="2026-03-03")
    p3.topic = TopicDraft("生活->旅行", [], 0.25, 0.75, 1.0)
    third = await store.apply_save(p3)
    await store.bind_topic(
        TopicDraft("work->mnemoql->api", ["生活"], 0.9, 0.1, 0.2),
        [second.event_ids[0], third.event_ids[0]],
        epoch_ms("2026-03-04T08:00:00+08:00"),
    )
    doomed = await save_one(store, axis(1), day="2026-03-04")
    await store.forget(doomed)  # a hole in ids and insertion numbers
    await save_one(store, vec(1, 1, 1), day="2026-03-05")
    return {"e1": first.event_ids[0], "given": "book_ch3_e12", "alice": first.refs["alice"],
            "e3": second.event_ids[0], "e4": second.event_ids[1]}  # fmt: skip


async def lines_of(store: Store, *, vectors: bool = True) -> list[str]:
    return [line async for line in dump.export_lines(store, vectors=vectors)]


async def restore(store: Store, lines: Iterable[str]) -> dict[str, int]:
    return await store.import_records(dump.DumpReader(lines).records())


@dataclass
class Fresh:
    """Fresh spaces of any registered store, closed and dropped at the end of the test."""

    tmp: Path
    opened: list[tuple[Store, StoreFactory, Path, str]]

    async def make(self, factory: StoreFactory) -> Store:
        path, space = self.tmp / uuid.uuid4().hex[:8], f"t{uuid.uuid4().hex[:12]}"
        store = factory.make(path, space)
        await store.open()
        self.opened.append((store, factory, path, space))
        return store


@pytest.fixture
async def fresh(tmp_path: Path) -> AsyncIterator[Fresh]:
    f = Fresh(tmp_path / "fresh", [])
    yield f
    for store, factory, path, space in f.opened:
        await store.close()
        if factory.cleanup is not None:
            await factory.cleanup(path, space)


def available() -> list[tuple[str, StoreFactory]]:
    return [(n, f) for n, f in sorted(STORE_FACTORIES.items()) if f.skip_reason() is None]


async def answers(store: Store, ids: dict[str, str]) -> list[object]:
    """What the restored store must answer exactly like the original."""
    events = await store.get_events(
        [ids["e1"], ids["given"], ids["e3"], ids["e4"]], with_vectors=True
    )
    chunks = await store.get_chunks([ids["e1"], ids["e3"]], with_vectors=True)
    graph = await store.graph(100, 100, topics=True)
    q = vec(1, 0.2, 0.1)
    summary = await store.route("summary", q, EMPTY_FILTERS, frozenset(), 10)
    chunk = await store.route("chunk", q, Filters((frozenset({ids["alice"]}),)), frozenset(), 10)
    top = await store.entity_vector_top("Concept", axis(3), 5)
    return [
        await store.get_meta(),
        await store.counts(),
        [
            (
                e.id,
                e.summary,
                e.content,
                e.time,
                e.create_time,
                e.create_date,
                e.content_hash,
                e.has_chunks,
                None if e.embedding is None else e.embedding.tobytes(),
            )
            for e in events
        ],
        {
            k: [
                (
                    c.chunk_index,
                    c.start,
                    c.end,
                    c.text,
                    c.text_hash,
                    c.embedding.tobytes() if c.embedding is not None else None,
                )
                for c in v
            ]
            for k, v in chunks.items()
        },
        await store.topic_rows(),
        await store.event_dates(),
        (graph.nodes, graph.relations, [(t.path, t.name, t.parent) for t in graph.topics]),
        # scores in 4 decimals: the stores compute cosine in different float32 arithmetic
        [(h.event_id, round(h.score, 4), h.chunk_index, h.start, h.end) for h in summary],
        [(h.event_id, round(h.score, 4), h.chunk_index, h.start, h.end) for h in chunk],
        await store.recent_events(EMPTY_FILTERS, frozenset(), 10),
        await store.find_entities("Person", ["alice b.", "ali"]),
        await store.resolve_terms("graph memory"),
        [(e, round(s, 4)) for e, s in top],
        await store.neighbours([ids["alice"]], None, "both", 20),
        await store.replay("first-save"),
        await store.replay("second-save"),
        await store.positional_events("book", "3"),
    ]


def normalised(items: list[object]) -> list[object]:
    # Topic.seq numbers are store-internal (Neo4j shares its counter with nodes): compare order
    topics, bindings = items[4]  # type: ignore[misc]
    return [*items[:4], ([(t.path, t.name, t.parent) for t in topics], bindings), *items[5:]]


# ---------------------------------------------------------------- round trips


async def test_a_memory_round_trips_through_every_store_unchanged(
    store: Store, fresh: Fresh
) -> None:
    ids = await build_memory(store)
    original = await lines_of(store)
    before = normalised(await answers(store, ids))
    assert original[0] == '{"format":"mnemoql-memory","kind":"header","vectors":true,"version":2}'
    # the forgotten event_5 still counts: the marks are the highest ids ever taken
    assert original[-2] == '{"concept":2,"event":6,"kind":"ids","location":1,"person":2}'
    assert original[-1] == (
        '{"counts":{"binding":4,"chunk":6,"ids":1,"meta":1,"node":11,"relation":12,'
        '"save_record":2,"topic":7},"kind":"end"}'
    )
    assert len(original) == len(set(original))
    for _name, factory in available():
        target = await fresh.make(factory)
        counts = await restore(target, original)
        assert counts == _counts(original)
        again = await lines_of(target)
        assert again == original  # byte for byte, in the same order
        assert normalised(await answers(target, ids)) == before
        # and back into a fresh space of the store under test
        back = await fresh.make(STORE_FACTORIES[_factory_name(store)])
        await restore(back, again)
        assert await lines_of(back) == original


def _counts(lines: list[str]) -> dict[str, int]:
    reader = dump.DumpReader(lines)
    for _ in reader.records():
        pass
    return dict(reader.counts)


def _factory_name(store: Store) -> str:
    return "embedded" if type(store).__name__ == "EmbeddedStore" else "neo4j"


async def test_a_restored_memory_keeps_allocating_after_its_highest_ids(
    store: Store, fresh: Fresh
) -> None:
    await build_memory(store)
    target = await fresh.make(STORE_FACTORIES[_factory_name(store)])
    await restore(target, await lines_of(store))
    result = await target.apply_save(
        plan([event("e", axis(0))], [person("p", "Carol"), concept("c", "new")])
    )
    # 1 + the restored high-water mark: event_5, forgotten in the original, is not reused
    assert result.event_ids == ["event_7"]
    assert result.refs["p"] == "person_3" and result.refs["c"] == "concept_3"
    replay = await target.apply_save(plan([event("x", axis(1))], key="first-save"))
    assert replay.replayed and replay.event_ids == ["event_1", "book_ch3_e12"]
    assert (await target.counts()).events == 7


async def test_a_version_1_dump_counts_on_from_its_highest_ids(store: Store) -> None:
    """Dumps made before the ``ids`` record: the restored store starts after the highest id."""
    source = [
        '{"format":"mnemoql-memory","kind":"header","vectors":false,"version":1}',
        '{"dimensions":8,"kind":"meta","model":"test-embedder","schema_version":1,'
        '"updated_at":"2026-03-01T09:00:00+08:00"}',
        '{"content":"c","content_hash":"' + content_hash("c") + '","create_date":"2026-03-01",'
        '"create_time":"2026-03-01T10:00:00+08:00","id":"event_4","kind":"node","label":"Event",'
        '"summary":"s","time":null}',
        '{"counts":{"meta":1,"node":1},"kind":"end"}',
    ]
    await restore(store, source)
    assert await save_one(store, axis(0)) == "event_5"
    assert (await lines_of(store, vectors=False))[-2] == (
        '{"concept":0,"event":5,"kind":"ids","location":0,"person":0}'
    )


async def test_an_ids_record_below_the_ids_of_the_dump_is_refused(store: Store) -> None:
    await save_one(store, axis(0))
    lines = await lines_of(store, vectors=False)
    assert lines[-2] == '{"concept":0,"event":1,"kind":"ids","location":0,"person":0}'
    lines[-2] = '{"concept":0,"event":0,"kind":"ids","location":0,"person":0}'
    with pytest.raises(InvalidInput, match="event_1"):
        for _ in dump.DumpReader(lines).records():
            pass


async def test_an_export_without_vectors_carries_none(store: Store, fresh: Fresh) -> None:
    ids = await build_memory(store)
    lines = await lines_of(store, vectors=False)
    assert lines[0].endswith('"vectors":false,"version":2}')
    assert not any('"embedding"' in line for line in lines)
    target = await fresh.make(STORE_FACTORIES[_factory_name(store)])
    await restore(target, lines)
    assert await lines_of(target, vectors=False) == lines
    (e1,) = await target.get_events([ids["e1"]], with_vectors=True)
    assert e1.embedding is None and e1.content == CJK
    assert await target.route("summary", axis(0), EMPTY_FILTERS, frozenset(), 5) == []
    assert (await target.get_chunks([ids["e1"]]))[ids["e1"]][1].text == CJK[
        len(CJK) // 3 : 2 * (len(CJK) // 3)
    ]
    # Issue #13, case 4: a memory without vectors says so, until it is re-embedded
    meta = await target.get_meta()
    assert meta is not None and meta.stale is True
    assert (await store.get_meta()).stale is False  # type: ignore[union-attr]
    await target.replace_vectors(
        VectorSet(events={ids["e1"]: axis(0)}, entities={}, chunks=[], meta=META)
    )
    assert await target.get_meta() == META  # stale no more
    # a dump that carries vectors restores fresh
    with_vectors = await fresh.make(STORE_FACTORIES[_factory_name(store)])
    await restore(with_vectors, await lines_of(store, vectors=True))
    assert (await with_vectors.get_meta()).stale is False  # type: ignore[union-attr]


async def test_an_empty_memory_round_trips(store: Store, fresh: Fresh) -> None:
    lines = await lines_of(store)
    assert lines == [dump.header_line(True), '{"counts":{},"kind":"end"}']
    target = await fresh.make(STORE_FACTORIES[_factory_name(store)])
    assert await restore(target, lines) == {}
    assert await target.get_meta() is None


# ---------------------------------------------------------------- all or nothing


async def test_restoring_into_a_non_empty_space_is_a_conflict(store: Store, fresh: Fresh) -> None:
    await build_memory(store)
    lines = await lines_of(store)
    target = await fresh.make(STORE_FACTORIES[_factory_name(store)])
    await save_one(target, axis(0))
    before = await lines_of(target)
    with pytest.raises(Conflict) as err:
        await restore(target, lines)
    assert err.value.code == "CONFLICT" and "not empty" in err.value.message
    assert await lines_of(target) == before
    with pytest.raises(Conflict):  # the store under test holds the memory itself
        await restore(store, lines)


def big_dump(events: int) -> list[str]:
    """A valid dump of ``events`` events (several import batches), as lines."""
    meta = {"kind": "meta", "model": "test-embedder", "dimensions": DIMS,
            "updated_at": "2026-03-01T09:00:00+08:00", "schema_version": 1}  # fmt: skip
    records: list[dict[str, object]] = [meta]
    for i in range(1, events + 1):
        content = f"event number {i}"
        records.append({
            "kind": "node", "label": "Event", "id": f"event_{i}", "summary": f"s{i}",
            "content": content, "time": None, "create_time": "2026-03-01T10:00:00+08:00",
            "create_date": "2026-03-01", "content_hash": content_hash(content),
            "embedding": axis(i % DIMS),
        })  # fmt: skip
    records.append({"kind": "node", "label": "Concept", "id": "concept_1", "name": "c",
                    "aliases": [], "description": None,
                    "create_time": "2026-03-01T10:00:00+08:00"})  # fmt: skip
    records += [{"kind": "relation", "type": "MENTIONS", "source": f"event_{i}",
                 "target": "concept_1", "props": {}} for i in range(1, events + 1)]  # fmt: skip
    counts = {"meta": 1, "node": events + 1, "relation": events}
    return [
        dump.header_line(True),
        *(dump.encode(r) for r in records),
        dump.encode({"kind": "end", "counts": counts}),
    ]


@pytest.mark.parametrize(
    "damage",
    ["truncated", "bad relation at the end", "wrong end counts", "duplicate id late"],
)
async def test_a_bad_dump_found_late_leaves_the_space_empty(
    store: Store, damage: str, fresh: Fresh
) -> None:
    lines = big_dump(1200)  # more than two Neo4j batches are written before the damage shows
    if damage == "truncated":
        lines = lines[:-1]
    elif damage == "bad relation at the end":
        lines.insert(-1, dump.encode({"kind": "relation", "type": "MENTIONS",
                                      "source": "concept_1", "target": "event_1", "props": {}}))  # fmt: skip
    elif damage == "wrong end counts":
        lines[-1] = lines[-1].replace('"relation":1200', '"relation":1199')
    else:
        lines.insert(1100, lines[5])
    with pytest.raises(InvalidInput):
        await restore(store, lines)
    assert await lines_of(store) == [dump.header_line(True), '{"counts":{},"kind":"end"}']
    assert await store.get_meta() is None
    await restore(store, big_dump(1200))  # and it can be restored properly afterwards
    assert (await store.counts()).relations == 1200


async def test_an_unfinished_neo4j_restore_is_cleared_by_the_next(store: Store) -> None:
    if _factory_name(store) != "neo4j":
        pytest.skip("Neo4j only: the embedded store restores in one transaction")
    run = store._run  # type: ignore[attr-defined]
    await run(  # what a restore cut off by an outage leaves behind
        "MERGE (s:MnemoSpace {space: $space}) SET s.importing = 'gone', s.seq = 1 "
        "CREATE (:Event {space: $space, id: 'book_ch1_e1', seq: 1})",
        writable=True,
    )
    counts = await restore(store, big_dump(10))
    assert counts == {"meta": 1, "node": 11, "relation": 10}
    assert await store.get_events(["book_ch1_e1"]) == []
    assert (await store.counts()).events == 10
    rows = await run("MATCH (s:MnemoSpace {space: $space}) RETURN s.importing AS i, s.seq AS n")
    assert rows == [{"i": None, "n": 11}]
