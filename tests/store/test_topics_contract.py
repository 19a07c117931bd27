"""Store contract, part 4: the topic tree and the date index (SPEC §2) as graph data.

Topic nodes and their BINDS / SUBTOPIC relationships are written by ``apply_save`` (from
``plan.topic``) and ``bind_topic``, read back by ``topic_rows`` to rebuild the in-memory index,
and shown by ``graph(..., topics=True)``. Only the ``Store`` protocol is used.
"""

from __future__ import annotations

import pytest

from mnemoql.engine.drafts import TopicDraft
from mnemoql.engine.errors import InvalidInput, NotFound
from mnemoql.engine.models import Binding, Event, Topic, epoch_ms
from mnemoql.engine.store.base import Store
from tests.store._builders import axis, concept, event, person, plan, rel
from tests.store.conftest import Reopen

STAMP = epoch_ms("2026-03-01T10:00:00+08:00")


def draft(
    path: str,
    related: list[str] | None = None,
    profile: tuple[float, float, float] = (0.55, 0.35, 0.5),
) -> TopicDraft:
    return TopicDraft(path, list(related or []), *profile)


async def save(
    store: Store,
    topic: TopicDraft | None,
    refs: tuple[str, ...] = ("e",),
    *,
    day: str = "2026-03-01",
    clock: str = "10:00:00",
) -> list[str]:
    p = plan([event(r, axis(i)) for i, r in enumerate(refs)], day=day, clock=clock)
    p.topic = topic
    return (await store.apply_save(p)).event_ids


def tree(topics: list[Topic]) -> list[tuple[str, str, str | None]]:
    return [(t.path, t.name, t.parent) for t in topics]


async def test_a_save_binds_every_new_event_and_creates_the_lineage(store: Store) -> None:
    e1, e2 = await save(store, draft("work->mnemoql->api", ["hiring", "work->ops"]), ("a", "b"))
    topics, bindings = await store.topic_rows()
    assert tree(topics) == [
        ("work", "work", None),
        ("work->mnemoql", "mnemoql", "work"),
        ("work->mnemoql->api", "api", "work->mnemoql"),
        ("hiring", "hiring", None),
        ("work->ops", "ops", "work"),
    ]
    assert [t.id for t in topics][:2] == ["topic:work", "topic:work->mnemoql"]
    seqs = [t.seq for t in topics]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    expected = Binding("work->mnemoql->api", e1, STAMP, 0.55, 0.35, 0.5, ("hiring", "work->ops"))
    assert bindings == [expected, Binding(**{**_fields(expected), "event_id": e2})]


def _fields(b: Binding) -> dict[str, object]:
    return {name: getattr(b, name) for name in Binding.__slots__}


async def test_existing_topics_are_reused_and_keep_their_creation_order(store: Store) -> None:
    first = await save(store, draft("b->x"))
    second = await save(store, draft("a", ["b->x"]), clock="11:00:00")
    third = await save(store, draft("b->y", ["a"]), clock="12:00:00")
    topics, bindings = await store.topic_rows()
    assert tree(topics) == [("b", "b", None), ("b->x", "x", "b"), ("a", "a", None),
                            ("b->y", "y", "b")]  # fmt: skip
    assert [(b.path, b.event_id, b.related) for b in bindings] == [
        ("b->x", first[0], ()),
        ("a", second[0], ("b->x",)),
        ("b->y", third[0], ("a",)),
    ]
    assert [b.timestamp for b in bindings] == [STAMP, STAMP + 3_600_000, STAMP + 7_200_000]


async def test_weights_round_trip_exactly(store: Store) -> None:
    odd = (0.949999988079071, 0.44999998807907104, 0.0)  # float32 values, widened
    (e,) = await save(store, draft("t", profile=odd))
    _, (b,) = await store.topic_rows()
    assert (b.activation, b.diffusion, b.context_independence) == odd
    assert b.event_id == e


async def test_a_save_without_topic_writes_no_topic_but_is_dated(store: Store) -> None:
    (e,) = await save(store, None, day="2026-03-02")
    assert await store.topic_rows() == ([], [])
    assert await store.event_dates() == [(e, "2026-03-02")]


async def test_event_dates_follow_insertion_order(store: Store) -> None:
    a = await save(store, None, ("x", "y"), day="2026-03-05", clock="09:00:00")
    b = await save(store, draft("t"), day="2026-03-01", clock="08:00:00")
    c = await save(store, None, day="2026-03-05", clock="10:00:00")
    assert await store.event_dates() == [
        (a[0], "2026-03-05"),
        (a[1], "2026-03-05"),
        (b[0], "2026-03-01"),
        (c[0], "2026-03-05"),
    ]


async def test_rebinding_refreshes_the_profile_and_merges_related_paths(store: Store) -> None:
    (e,) = await save(store, draft("main", ["related"], (0.9, 0.1, 0.9)))
    later = STAMP + 60_000
    await store.bind_topic(draft("main", ["related-2", "related"], (0.2, 0.3, 0.4)), [e], later)
    topics, bindings = await store.topic_rows()
    assert tree(topics) == [("main", "main", None), ("related", "related", None),
                            ("related-2", "related-2", None)]  # fmt: skip
    assert bindings == [Binding("main", e, later, 0.2, 0.3, 0.4, ("related", "related-2"))]
    # a second topic for the same event is a second binding
    await store.bind_topic(draft("other->x"), [e], later)
    assert [(b.path, b.event_id) for b in (await store.topic_rows())[1]] == [
        ("main", e),
        ("other->x", e),
    ]


async def test_bind_topic_is_atomic_and_checks_its_events(store: Store) -> None:
    (e,) = await save(store, None)
    with pytest.raises(NotFound):
        await store.bind_topic(draft("t"), [e, "event_404"], STAMP)
    with pytest.raises(InvalidInput):
        await store.bind_topic(draft("a->->b"), [e], STAMP)
    with pytest.raises(InvalidInput):
        await store.bind_topic(draft("t", profile=(1.5, 0.0, 0.0)), [e], STAMP)
    assert await store.topic_rows() == ([], [])


async def test_a_bad_topic_rolls_the_whole_save_back(store: Store) -> None:
    with pytest.raises(InvalidInput):
        await save(store, draft("ok", [""]))
    assert (await store.counts()).events == 0
    assert await store.topic_rows() == ([], [])
    assert await store.event_dates() == []


async def test_idempotent_replay_binds_nothing_new(store: Store) -> None:
    p = plan([event("e", axis(0))], key="k1")
    p.topic = draft("t")
    first = await store.apply_save(p)
    p2 = plan([event("e", axis(0))], key="k1")
    p2.topic = draft("other")
    again = await store.apply_save(p2)
    assert again.replayed and again.event_ids == first.event_ids
    topics, bindings = await store.topic_rows()
    assert tree(topics) == [("t", "t", None)] and len(bindings) == 1


async def test_forget_drops_the_bindings_and_keeps_the_topics(store: Store) -> None:
    e1, e2 = await save(store, draft("a->b"), ("x", "y"))
    await store.forget(e1)
    topics, bindings = await store.topic_rows()
    assert tree(topics) == [("a", "a", None), ("a->b", "b", "a")]
    assert [b.event_id for b in bindings] == [e2]
    assert await store.event_dates() == [(e2, "2026-03-01")]


async def test_topics_stay_out_of_entity_reads(store: Store) -> None:
    p = plan(
        [event("e", axis(0))],
        [person("p", "Alice"), concept("c", "graphs")],
        [rel("PARTICIPATED_IN", "p", "e"), rel("MENTIONS", "e", "c")],
    )
    p.topic = draft("graphs->neo4j")
    r = await store.apply_save(p)
    e = r.refs["e"]
    counts = await store.counts()
    assert (counts.events, counts.persons, counts.concepts, counts.relations) == (1, 1, 1, 2)
    assert await store.resolve_terms("graphs") == frozenset({r.refs["c"]})
    assert await store.get_nodes(["topic:graphs", e]) == [None, (await store.get_events([e]))[0]]
    got = (await store.neighbours([e], None, "both", 10))[e]
    assert {n.rel.type for n in got} == {"PARTICIPATED_IN", "MENTIONS"}
    assert await store.id_counts(["topic:graphs"]) == {"topic:graphs": 0}
    plain = await store.graph(5000, 30000)
    assert plain.topics == [] and {x.type for x in plain.relations} == {
        "PARTICIPATED_IN",
        "MENTIONS",
    }


async def test_graph_with_topics_puts_them_after_the_four_labels(store: Store) -> None:
    e1, e2 = await save(store, draft("b->c", ["a"], (0.9, 0.1, 0.9)), ("x", "y"))
    p = plan([event("z", axis(3))], [person("p", "Alice")], [rel("PARTICIPATED_IN", "p", "z")])
    p.topic = draft("b")
    e3 = (await store.apply_save(p)).event_ids[0]
    snap = await store.graph(5000, 30000, topics=True)
    assert [n.id for n in snap.nodes if isinstance(n, Event)] == [e1, e2, e3]
    assert [t.id for t in snap.topics] == ["topic:a", "topic:b", "topic:b->c"]
    assert (snap.truncated_nodes, snap.truncated_relations) == (False, False)
    assert [(x.type, x.source, x.target) for x in snap.relations] == [
        ("BINDS", "topic:b", e3),
        ("BINDS", "topic:b->c", e1),
        ("BINDS", "topic:b->c", e2),
        ("PARTICIPATED_IN", "person_1", e3),
        ("SUBTOPIC", "topic:b", "topic:b->c"),
    ]
    binds = snap.relations[1].properties
    assert binds == {
        "timestamp": STAMP,
        "activation_weight": 0.9,
        "diffusion_weight": 0.1,
        "context_independence_weight": 0.9,
        "related_paths": ["a"],
    }


async def test_graph_caps_cut_topics_first_and_their_links_with_them(store: Store) -> None:
    (e,) = await save(store, draft("b->c", ["a"]))
    snap = await store.graph(3, 30000, topics=True)  # the event, topic:a, topic:b
    assert [t.path for t in snap.topics] == ["a", "b"] and snap.truncated_nodes is True
    assert snap.relations == []  # b->c is gone, and with it BINDS and SUBTOPIC
    only_event = await store.graph(1, 30000, topics=True)
    assert [n.id for n in only_event.nodes] == [e] and only_event.topics == []
    assert only_event.truncated_nodes is True
    capped = await store.graph(5000, 1, topics=True)
    assert [(x.type, x.target) for x in capped.relations] == [("BINDS", e)]
    assert capped.truncated_relations is True
    exact = await store.graph(4, 2, topics=True)
    assert (exact.truncated_nodes, exact.truncated_relations) == (False, False)


async def test_topics_survive_close_and_reopen(store: Store, reopen: Reopen) -> None:
    (e,) = await save(store, draft("a->b", ["c"], (0.25, 0.5, 0.75)))
    before = await store.topic_rows()
    dates = await store.event_dates()
    await store.close()
    again = await reopen()
    assert await again.topic_rows() == before
    assert await again.event_dates() == dates == [(e, "2026-03-01")]
    await save(again, draft("a->d"), clock="11:00:00")
    topics, _ = await again.topic_rows()
    assert [t.path for t in topics] == ["a", "a->b", "c", "a->d"]
    assert topics[-1].seq > topics[-2].seq


@pytest.mark.parametrize(
    "path",
    [
        "a'}) MATCH (n) DETACH DELETE n //->b",
        'x"; DROP TABLE topics; --->`Topic`',
        "$space->{space: 'other'}->\\u0000 [x]",
        "标签->:Topic|Event->🙂",
    ],
)
async def test_topic_paths_are_data_never_query_text(store: Store, path: str) -> None:
    (e,) = await save(store, draft(path, [path + "->child"]))
    topics, (b,) = await store.topic_rows()
    assert b.path == path and b.related == (path + "->child",) and b.event_id == e
    assert topics[len(path.split("->")) - 1].path == path
    assert (await store.counts()).events == 1
    snap = await store.graph(5000, 30000, topics=True)
    assert ("BINDS", "topic:" + path, e) in {(x.type, x.source, x.target) for x in snap.relations}
