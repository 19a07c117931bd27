"""Store contract, part 3: the graph reads behind GraphQL (nodes, keyset pages, ``where``,
neighbours, the explorer snapshot). Only the ``Store`` protocol is used."""

from __future__ import annotations

from typing import Any

import pytest

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.models import (
    AllOf,
    AnyOf,
    Cond,
    Entity,
    Event,
    Node,
    NodeLabel,
    Not,
    Page,
    SortSpec,
    Where,
)
from mnemoql.engine.store.base import Store
from tests.store._builders import axis, concept, event, location, person, plan, rel

# ---------------------------------------------------------------- a small world


async def _events(store: Store, n: int) -> list[str]:
    """``n`` events over three days (several per create_time), some with an occurrence time."""
    ids: list[str] = []
    for start in range(0, n, 4):
        batch = [
            event(
                f"e{i}",
                axis(i % 8),
                summary=f"summary {i:02d} {'alpha' if i % 3 == 0 else 'beta'}",
                time=None if i % 2 else f"t{i % 5}",
            )
            for i in range(start, min(n, start + 4))
        ]
        day = f"2026-03-0{1 + (start // 4) % 3}"
        result = await store.apply_save(plan(batch, day=day, clock=f"1{start % 10}:00:00"))
        ids += result.event_ids
    return ids


async def _all_pages(
    store: Store, label: NodeLabel, where: Where | None, sort: SortSpec, size: int
) -> list[Node]:
    seen: list[Node] = []
    after = None
    for _ in range(200):
        page = await store.list_nodes(label, where, sort, Page(first=size, after=after))
        assert len(page.nodes) <= size
        assert len(page.positions) == len(page.nodes)
        assert [p[1] for p in page.positions] == [n.id for n in page.nodes]
        seen += page.nodes
        if not page.has_next:
            return seen
        assert len(page.nodes) == size
        after = page.positions[-1]
    raise AssertionError("paging did not terminate")


def _field(node: Node, name: str) -> Any:
    value = getattr(node, name)
    return "" if value is None else value


# ---------------------------------------------------------------- list_nodes


@pytest.mark.parametrize(
    ("sort", "size"),
    [
        (("id", "ASC"), 7),
        (("id", "DESC"), 5),
        (("create_time", "DESC"), 3),
        (("create_date", "ASC"), 4),
        (("time", "ASC"), 6),
        (("summary", "DESC"), 25),
        (("summary", "ASC"), 1),
    ],
)
async def test_keyset_pages_have_no_duplicates_and_no_gaps(
    store: Store, sort: SortSpec, size: int
) -> None:
    ids = await _events(store, 23)
    nodes = await _all_pages(store, "Event", None, sort, size)
    got = [n.id for n in nodes]
    assert sorted(got) == sorted(ids) and len(set(got)) == len(got)
    field, direction = sort
    keys = [(_field(n, field), n.id) for n in nodes]
    assert keys == sorted(keys, reverse=direction == "DESC")


async def _all_pages_backward(
    store: Store, label: NodeLabel, where: Where | None, sort: SortSpec, size: int
) -> list[Node]:
    """Every node by walking backward from the end (Relay's last/before), in sort order."""
    seen: list[Node] = []
    before = None
    for _ in range(200):
        page = await store.list_nodes(label, where, sort, Page(first=0, last=size, before=before))
        assert len(page.nodes) <= size and not page.has_next
        assert [p[1] for p in page.positions] == [n.id for n in page.nodes]
        seen = page.nodes + seen
        if not page.has_previous:
            return seen
        assert len(page.nodes) == size
        before = page.positions[0]
    raise AssertionError("paging did not terminate")


@pytest.mark.parametrize(
    ("sort", "size"),
    [(("id", "ASC"), 7), (("create_time", "DESC"), 3), (("time", "ASC"), 4), (("summary", "DESC"), 1)],
)
async def test_backward_pages_are_the_forward_order_read_from_the_end(
    store: Store, sort: SortSpec, size: int
) -> None:
    await _events(store, 23)
    forward = [n.id for n in await _all_pages(store, "Event", None, sort, 5)]
    backward = [n.id for n in await _all_pages_backward(store, "Event", None, sort, size)]
    assert backward == forward
    # last/before from the middle: the rows just before that position, still in sort order
    middle = await store.list_nodes("Event", None, sort, Page(first=10))
    before = await store.list_nodes(
        "Event", None, sort, Page(first=0, last=3, before=middle.positions[7])
    )
    assert [n.id for n in before.nodes] == forward[4:7]
    assert before.has_previous and not before.has_next
    filtered = Cond("summary", "contains", "alpha")
    alpha = [n.id for n in await _all_pages(store, "Event", filtered, sort, 50)]
    assert [n.id for n in await _all_pages_backward(store, "Event", filtered, sort, 2)] == alpha


async def test_a_page_is_forward_or_backward(store: Store) -> None:
    await _events(store, 3)
    with pytest.raises(InvalidInput):
        await store.list_nodes("Event", None, ("id", "ASC"), Page(first=2, before=("a", "a")))
    with pytest.raises(InvalidInput):
        await store.list_nodes("Event", None, ("id", "ASC"), Page(first=0, last=-1))
    with pytest.raises(InvalidInput):
        await store.neighbours(["event_1"], None, "both", 2, after="a", before="b")


async def test_list_nodes_page_shape_and_total(store: Store) -> None:
    ids = await _events(store, 10)
    page = await store.list_nodes("Event", None, ("id", "ASC"), Page(first=3))
    assert page.total == 10
    assert page.has_next is True
    assert [n.id for n in page.nodes] == sorted(ids)[:3]
    assert all(isinstance(n, Event) and n.embedding is None for n in page.nodes)
    assert page.positions[0] == (page.nodes[0].id, page.nodes[0].id)
    last = await store.list_nodes(
        "Event", None, ("id", "ASC"), Page(first=3, after=page.positions[-1])
    )
    assert [n.id for n in last.nodes] == sorted(ids)[3:6]
    empty = await store.list_nodes("Person", None, ("name", "ASC"), Page(first=5))
    assert (empty.nodes, empty.has_next) == ([], False)
    assert empty.total in (0, None)


async def test_list_entities_by_name(store: Store) -> None:
    await store.apply_save(
        plan(
            [event("e", axis(0))],
            [
                person("p1", "Carol"),
                person("p2", "alice"),
                person("p3", "Bob"),
                concept("c", "Zed"),
            ],
        )
    )
    nodes = await _all_pages(store, "Person", None, ("name", "ASC"), 2)
    assert [n.name for n in nodes if isinstance(n, Entity)] == ["Bob", "Carol", "alice"]
    assert all(isinstance(n, Entity) and n.label == "Person" for n in nodes)


WHERES: list[tuple[Where, Any]] = [
    (Cond("summary", "contains", "alpha"), lambda e: "alpha" in e.summary),
    (Cond("summary", "starts_with", "summary 1"), lambda e: e.summary.startswith("summary 1")),
    (Cond("create_date", "eq", "2026-03-02"), lambda e: e.create_date == "2026-03-02"),
    (
        Cond("create_date", "in", ["2026-03-01", "2026-03-03"]),
        lambda e: e.create_date != "2026-03-02",
    ),
    (Cond("create_date", "gt", "2026-03-01"), lambda e: e.create_date > "2026-03-01"),
    (Cond("create_date", "gte", "2026-03-02"), lambda e: e.create_date >= "2026-03-02"),
    (Cond("id", "lt", "event_2"), lambda e: e.id < "event_2"),
    (Cond("id", "lte", "event_2"), lambda e: e.id <= "event_2"),
    (Cond("time", "eq", None), lambda e: e.time is None),
    (
        AllOf((Cond("summary", "contains", "beta"), Cond("create_date", "eq", "2026-03-01"))),
        lambda e: "beta" in e.summary and e.create_date == "2026-03-01",
    ),
    (
        AnyOf((Cond("summary", "contains", "alpha"), Cond("create_date", "eq", "2026-03-03"))),
        lambda e: "alpha" in e.summary or e.create_date == "2026-03-03",
    ),
    (Not(Cond("summary", "contains", "alpha")), lambda e: "alpha" not in e.summary),
    (
        AllOf(
            (
                Not(AnyOf((Cond("id", "eq", "event_1"), Cond("id", "eq", "event_2")))),
                Cond("summary", "contains", "summary"),
            )
        ),
        lambda e: e.id not in ("event_1", "event_2"),
    ),
    (AllOf(()), lambda e: True),
    (AnyOf(()), lambda e: False),
    (Cond("id", "in", []), lambda e: False),
]


@pytest.mark.parametrize(("where", "expected"), WHERES, ids=[str(i) for i in range(len(WHERES))])
async def test_where_filters(store: Store, where: Where, expected: Any) -> None:
    await _events(store, 14)
    everything = await _all_pages(store, "Event", None, ("id", "ASC"), 100)
    want = [n.id for n in everything if expected(n)]
    got = await _all_pages(store, "Event", where, ("id", "ASC"), 4)
    assert [n.id for n in got] == want
    page = await store.list_nodes("Event", where, ("id", "ASC"), Page(first=2))
    assert page.total in (len(want), None)


INJECTIONS = [
    "id) OR 1=1 --",
    "id; DROP TABLE nodes; --",
    "name",  # a real field, but not of Event
    "embedding",
    "content_hash",
    "n.id OR true",
    "`id`",
    "",
]


@pytest.mark.parametrize("field", INJECTIONS)
async def test_unknown_where_and_sort_fields_are_rejected(store: Store, field: str) -> None:
    ids = await _events(store, 3)
    with pytest.raises(InvalidInput):
        await store.list_nodes("Event", Cond(field, "eq", "x"), ("id", "ASC"), Page(first=5))
    with pytest.raises(InvalidInput):
        await store.list_nodes("Event", None, (field, "ASC"), Page(first=5))
    with pytest.raises(InvalidInput):
        await store.list_nodes(
            "Event", Not(AllOf((Cond(field, "contains", "x"),))), ("id", "ASC"), Page(5)
        )
    page = await store.list_nodes("Event", None, ("id", "ASC"), Page(first=10))
    assert sorted(n.id for n in page.nodes) == sorted(ids)


@pytest.mark.parametrize(
    ("where", "sort"),
    [
        (Cond("id", "like", "x"), ("id", "ASC")),  # unknown operator
        (Cond("id", "eq", "x"), ("id", "SIDEWAYS")),  # unknown direction
        (Cond("id", "eq", "x"), ("id", "ASC; DROP TABLE nodes")),
        (Cond("id", "in", "event_1"), ("id", "ASC")),  # 'in' needs a list
    ],
)
async def test_bad_operators_and_directions_are_rejected(
    store: Store, where: Any, sort: Any
) -> None:
    await _events(store, 2)
    with pytest.raises(InvalidInput):
        await store.list_nodes("Event", where, sort, Page(first=5))
    assert (await store.counts()).events == 2


async def test_values_are_parameters_not_sql(store: Store) -> None:
    await _events(store, 3)
    sneaky = Cond("id", "eq", "x' OR '1'='1")
    page = await store.list_nodes("Event", sneaky, ("id", "ASC"), Page(first=10))
    assert page.nodes == []
    after = ("x') OR 1=1 --", "y")
    page = await store.list_nodes("Event", None, ("id", "ASC"), Page(first=10, after=after))
    assert page.nodes == []  # every id sorts before "x..."
    assert (await store.counts()).events == 3


# ---------------------------------------------------------------- get_nodes


async def test_get_nodes_in_order_with_none_for_unknown(store: Store) -> None:
    result = await store.apply_save(
        plan([event("e", axis(0))], [person("p", "Alice", ["Ali"], axis(1), description="host")])
    )
    nodes = await store.get_nodes([result.refs["p"], "nope", result.refs["e"]])
    p, missing, e = nodes
    assert missing is None
    assert isinstance(p, Entity) and (p.label, p.name, p.aliases, p.description) == (
        "Person",
        "Alice",
        ["Ali"],
        "host",
    )
    assert p.create_time == "2026-03-01T10:00:00+08:00" and p.embedding is None
    assert isinstance(e, Event) and e.id == "event_1" and e.embedding is None


# ---------------------------------------------------------------- neighbours


async def _star(store: Store) -> dict[str, str]:
    result = await store.apply_save(
        plan(
            [event("e1", axis(0)), event("e2", axis(1))],
            [
                person("a", "Alice"),
                person("b", "Bob"),
                person("c", "Carol"),
                concept("g", "Graph"),
                concept("h", "Hash"),
                location("l", "Lyon"),
            ],
            [
                rel("PARTICIPATED_IN", "a", "e1", role="host"),
                rel("PARTICIPATED_IN", "b", "e1"),
                rel("PARTICIPATED_IN", "c", "e1", role="guest"),
                rel("MENTIONS", "e1", "h"),
                rel("MENTIONS", "e1", "g"),
                rel("OCCURRED_AT", "e1", "l"),
                rel("PARTICIPATED_IN", "a", "e2"),
                rel("HAS_ATTITUDE", "a", "g", attitude="likes", event_ref="e1"),
                rel("HAS_ATTITUDE", "a", "b", attitude="trusts", event_ref="e2"),
            ],
        )
    )
    return result.refs


async def test_neighbours_order_types_and_directions(store: Store) -> None:
    r = await _star(store)
    e1 = r["e1"]
    both = (await store.neighbours([e1], None, "both", 10))[e1]
    assert [(n.rel.type, n.other_id, n.direction) for n in both] == [
        ("MENTIONS", r["g"], "out"),
        ("MENTIONS", r["h"], "out"),
        ("OCCURRED_AT", r["l"], "out"),
        ("PARTICIPATED_IN", r["a"], "in"),
        ("PARTICIPATED_IN", r["b"], "in"),
        ("PARTICIPATED_IN", r["c"], "in"),
    ]
    assert all(n.node_id == e1 for n in both)
    host = both[3]
    assert (host.rel.source, host.rel.target, host.rel.properties) == (r["a"], e1, {"role": "host"})
    assert both[4].rel.properties == {}

    out = (await store.neighbours([e1], None, "out", 10))[e1]
    assert {n.rel.type for n in out} == {"MENTIONS", "OCCURRED_AT"}
    incoming = (await store.neighbours([e1], None, "in", 10))[e1]
    assert {n.rel.type for n in incoming} == {"PARTICIPATED_IN"}
    # by type first, then other id: person_2 (HAS_ATTITUDE) comes before event_1
    alice = (await store.neighbours([r["a"]], None, "both", 10))[r["a"]]
    assert [(n.rel.type, n.other_id) for n in alice] == [
        ("HAS_ATTITUDE", r["g"]),
        ("HAS_ATTITUDE", r["b"]),
        ("PARTICIPATED_IN", r["e1"]),
        ("PARTICIPATED_IN", r["e2"]),
    ]
    mentions = (await store.neighbours([e1], "MENTIONS", "both", 10))[e1]
    assert [n.other_id for n in mentions] == [r["g"], r["h"]]
    assert (await store.neighbours([e1], "MENTIONS", "in", 10))[e1] == []


async def test_neighbours_limit_and_after_per_node(store: Store) -> None:
    r = await _star(store)
    e1, alice = r["e1"], r["a"]
    got = await store.neighbours([e1, alice, "nope"], "PARTICIPATED_IN", "both", 2)
    assert [n.other_id for n in got[e1]] == [r["a"], r["b"]]
    assert [n.other_id for n in got[alice]] == [r["e1"], r["e2"]]
    assert got.get("nope", []) == []
    nxt = await store.neighbours([e1], "PARTICIPATED_IN", "in", 2, after=r["b"])
    assert [n.other_id for n in nxt[e1]] == [r["c"]]
    attitude = (await store.neighbours([alice], "HAS_ATTITUDE", "out", 5))[alice]
    assert [(n.other_id, n.rel.properties) for n in attitude] == [
        (r["g"], {"attitude": "likes", "event_id": e1}),
        (r["b"], {"attitude": "trusts", "event_id": r["e2"]}),
    ]
    bob = (await store.neighbours([r["b"]], "HAS_ATTITUDE", "in", 5))[r["b"]]
    assert [(n.other_id, n.direction, n.rel.source) for n in bob] == [(alice, "in", alice)]


async def test_neighbours_backward_before_per_node(store: Store) -> None:
    r = await _star(store)
    e1, alice = r["e1"], r["a"]
    forward = [n.other_id for n in (await store.neighbours([e1], "PARTICIPATED_IN", "in", 10))[e1]]
    assert forward == [r["a"], r["b"], r["c"]]
    # the last two before c, in the same (other id) order
    back = await store.neighbours([e1, alice], "PARTICIPATED_IN", "both", 2, before=r["c"])
    assert [n.other_id for n in back[e1]] == [r["a"], r["b"]]
    assert [n.other_id for n in back[alice]] == [r["e1"], r["e2"]]
    one = (await store.neighbours([e1], "PARTICIPATED_IN", "in", 1, before=r["b"]))[e1]
    assert [(n.other_id, n.rel.source, n.direction) for n in one] == [(r["a"], r["a"], "in")]
    assert (await store.neighbours([e1], "PARTICIPATED_IN", "in", 5, before=r["a"]))[e1] == []
    # from the end: the last ones
    tail = (await store.neighbours([e1], "MENTIONS", "out", 1, backward=True))[e1]
    assert [n.other_id for n in tail] == [r["h"]]
    last2 = await store.neighbours([e1, alice], "PARTICIPATED_IN", "both", 2, backward=True)
    assert [n.other_id for n in last2[e1]] == [r["b"], r["c"]]
    assert [n.other_id for n in last2[alice]] == [r["e1"], r["e2"]]


# ---------------------------------------------------------------- graph snapshot


async def test_graph_orders_by_label_then_id_without_vectors(store: Store) -> None:
    r = await _star(store)
    await store.apply_save(
        plan([event("x", axis(2), chunk_vectors=[axis(3)], given_id="a_ch1_e1")])
    )
    snap = await store.graph(5000, 30000)
    assert (snap.truncated_nodes, snap.truncated_relations) == (False, False)
    labels = ["Event" if isinstance(n, Event) else n.label for n in snap.nodes]
    assert labels == ["Event"] * 3 + ["Person"] * 3 + ["Concept"] * 2 + ["Location"]
    assert [n.id for n in snap.nodes] == [
        "a_ch1_e1",
        r["e1"],
        r["e2"],
        r["a"],
        r["b"],
        r["c"],
        r["g"],
        r["h"],
        r["l"],
    ]
    assert all(n.embedding is None for n in snap.nodes)
    assert not any("#" in n.id for n in snap.nodes)  # no EventSource chunks
    assert len(snap.relations) == 9
    host = [
        x
        for x in snap.relations
        if x.type == "PARTICIPATED_IN" and x.source == r["a"] and x.target == r["e1"]
    ]
    assert [x.properties for x in host] == [{"role": "host"}]


async def test_graph_caps_keep_only_relations_between_returned_nodes(store: Store) -> None:
    r = await _star(store)
    snap = await store.graph(4, 30000)  # event_1, event_2, Alice, Bob
    assert snap.truncated_nodes is True and snap.truncated_relations is False
    kept = {n.id for n in snap.nodes}
    assert kept == {r["e1"], r["e2"], r["a"], r["b"]}
    assert {(x.source, x.target) for x in snap.relations} == {
        (r["a"], r["e1"]),
        (r["b"], r["e1"]),
        (r["a"], r["e2"]),
        (r["a"], r["b"]),
    }
    capped = await store.graph(5000, 3)
    assert capped.truncated_nodes is False and capped.truncated_relations is True
    assert len(capped.relations) == 3
    exact = await store.graph(9, 9)
    assert (exact.truncated_nodes, exact.truncated_relations) == (False, False)
    nothing = await store.graph(0, 0)
    assert nothing.nodes == [] and nothing.relations == [] and nothing.truncated_nodes is True
