"""Relay: four PageInfo fields, first/after and last/before on every connection, cursors bound
to their connection, no Node id in a helper type's ``id``, caller ids that name one node.

relay-compiler and relay-runtime themselves run against a real server in
tests/web/test_clients.py; these tests pin the server's side of the contract."""

from __future__ import annotations

from typing import Any

import pytest
from graphql import GraphQLObjectType

from mnemoql.resolvers import schema
from tests.api.conftest import Api

SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds } }"
PAGE = "{ cursor node { id } }"
INFO = "pageInfo { hasNextPage hasPreviousPage startCursor endCursor }"


def _extraction(n: int) -> dict[str, Any]:
    people = [{"ref": f"p{i}", "name": f"Person {i:02d}"} for i in range(n)]
    return {
        "events": [
            {
                "ref": "e",
                "summary": "a big meeting",
                "participants": [{"person": p["ref"]} for p in people],
            }
        ],
        "persons": people,
    }


async def _world(api: Api, events: int = 7) -> None:
    for i in range(events):
        await api.gql(SAVE, input={"content": f"memory number {i}", "id": f"m_{i:02d}"})


async def _walk(api: Api, field: str, args: str, size: int, backward: bool) -> list[str]:
    """Every node id of a root connection, paging forward or backward."""
    seen: list[str] = []
    cursor = None
    for _ in range(50):
        paging = f"last: {size}" if backward else f"first: {size}"
        if cursor:
            paging += f', {"before" if backward else "after"}: "{cursor}"'
        q = f"{{ {field}({paging}{args}) {{ edges {PAGE} {INFO} }} }}"
        conn = (await api.gql(q))[field]
        ids = [e["node"]["id"] for e in conn["edges"]]
        info = conn["pageInfo"]
        if ids:
            assert info["startCursor"] == conn["edges"][0]["cursor"]
            assert info["endCursor"] == conn["edges"][-1]["cursor"]
        seen = ids + seen if backward else seen + ids
        if not info["hasPreviousPage" if backward else "hasNextPage"]:
            return seen
        assert info["hasNextPage" if backward else "hasPreviousPage"] == (cursor is not None)
        cursor = info["startCursor" if backward else "endCursor"]
    raise AssertionError("paging did not end")


@pytest.mark.parametrize("args", ["", ", sort: {field: ID, direction: ASC}"])
async def test_root_connections_page_both_ways(api: Api, args: str) -> None:
    await _world(api)
    forward = await _walk(api, "events", args, 3, backward=False)
    assert len(forward) == len(set(forward)) == 7
    assert await _walk(api, "events", args, 2, backward=True) == forward
    first = (await api.gql(f"{{ events(first: 7{args}) {{ edges {PAGE} {INFO} }} }}"))["events"]
    assert first["pageInfo"]["hasNextPage"] is False
    assert first["pageInfo"]["hasPreviousPage"] is False


async def test_relation_connections_page_both_ways(api: Api) -> None:
    await api.gql(SAVE, input={"content": "a meeting of many", "extraction": _extraction(5)})
    q = "query($a: String, $b: String, $f: Int, $l: Int) { node(id: \"event_1\") { ... on Event { participants(first: $f, after: $a, last: $l, before: $b) { edges { cursor node { name } } %s } } } }"
    names = [f"Person {i:02d}" for i in range(5)]
    page = (await api.gql(q % INFO, f=2))["node"]["participants"]
    assert [e["node"]["name"] for e in page["edges"]] == names[:2]
    rest = (await api.gql(q % INFO, f=5, a=page["pageInfo"]["endCursor"]))["node"]["participants"]
    assert [e["node"]["name"] for e in rest["edges"]] == names[2:]
    assert rest["pageInfo"]["hasPreviousPage"] and not rest["pageInfo"]["hasNextPage"]
    tail = (await api.gql(q % INFO, l=2))["node"]["participants"]
    assert [e["node"]["name"] for e in tail["edges"]] == names[3:]
    assert tail["pageInfo"]["hasPreviousPage"] and not tail["pageInfo"]["hasNextPage"]
    back = (await api.gql(q % INFO, l=2, b=tail["pageInfo"]["startCursor"]))["node"]
    assert [e["node"]["name"] for e in back["participants"]["edges"]] == names[1:3]
    assert back["participants"]["pageInfo"]["hasNextPage"]
    # and the other way round: a person's events
    person = (await api.gql('{ persons(last: 1) { edges { node { id } } } }'))["persons"]
    pid = person["edges"][0]["node"]["id"]
    events = await api.gql(
        'query($id: ID!) { node(id: $id) { ... on Person { events(last: 5) { edges { node { id } } } } } }',
        id=pid,
    )
    assert [e["node"]["id"] for e in events["node"]["events"]["edges"]] == ["event_1"]


async def test_a_cursor_only_pages_the_connection_that_issued_it(api: Api) -> None:
    await api.gql(SAVE, input={"content": "a meeting of many", "extraction": _extraction(3)})
    persons = (await api.gql("{ persons(first: 1) { edges { cursor } } }"))["persons"]
    cursor = persons["edges"][0]["cursor"]
    by_id = (await api.gql("{ persons(first: 1, sort: {field: ID}) { edges { cursor } } }"))
    by_id_cursor = by_id["persons"]["edges"][0]["cursor"]
    for foreign, given in [
        ('{ events(after: "C") { edges { cursor } } }', cursor),  # another list
        ('{ persons(after: "C", sort: {field: ID}) { edges { cursor } } }', cursor),  # sort
        ('{ persons(after: "C", where: {name: {contains: "1"}}) { edges { cursor } } }', cursor),
        ('{ persons(before: "C") { edges { cursor } } }', by_id_cursor),
        (
            '{ node(id: "event_1") { ... on Event { participants(after: "C") { edges { cursor } } } } }',
            cursor,
        ),
    ]:
        err = await api.error(foreign.replace('"C"', f'"{given}"'))
        assert err["extensions"]["code"] == "CURSOR_INVALID", (foreign, err)
        assert "another connection" in err["message"]
    # the same list, sort and filter takes it
    ok = await api.gql(f'{{ persons(after: "{cursor}") {{ edges {{ node {{ name }} }} }} }}')
    assert [e["node"]["name"] for e in ok["persons"]["edges"]] == ["Person 01", "Person 02"]


async def test_both_directions_at_once_is_refused(api: Api) -> None:
    for args in ["first: 1, last: 1", 'first: 1, before: "x"', 'last: 1, after: "x"']:
        err = await api.error(f"{{ events({args}) {{ edges {{ cursor }} }} }}")
        assert err["extensions"]["code"] == "BAD_USER_INPUT", (args, err)
    err = await api.error("{ events(last: 1000) { edges { cursor } } }")
    assert err["extensions"]["code"] == "OUT_OF_RANGE" and err["extensions"]["argument"] == "last"


def test_only_node_types_have_an_id_field() -> None:
    """A normalising cache (Relay, Apollo) keys records by `id`: only Node types may have it."""
    gql = schema._schema
    node = gql.type_map["Node"]
    with_id = {
        name
        for name, t in gql.type_map.items()
        if isinstance(t, GraphQLObjectType) and "id" in t.fields and not name.startswith("__")
    }
    nodes = {t.name for t in gql.get_possible_types(node)}  # type: ignore[arg-type]
    assert with_id == nodes == {"Event", "Person", "Concept", "Location", "Topic"}


async def test_helper_types_name_their_references(api: Api) -> None:
    await api.gql(SAVE, input={"content": "a meeting of many", "extraction": _extraction(2)})
    saved = await api.gql(
        'mutation { save(input: {content: "again", extraction: {events: [{ref: "e", summary: "s", participants: [{person: "p"}]}], persons: [{ref: "p", name: "Person 00"}]}}) { merged { entityId entity { id ... on Person { name } } } refs { ref nodeId node { id } } } }'
    )
    merged = saved["save"]["merged"]
    assert merged and merged[0]["entity"]["id"] == merged[0]["entityId"]
    assert all(r["node"]["id"] == r["nodeId"] for r in saved["save"]["refs"])
    graph = await api.gql("{ graph { nodes { nodeId node { id } } relationships { relationshipId source } } }")
    assert all(n["node"]["id"] == n["nodeId"] for n in graph["graph"]["nodes"])


@pytest.mark.parametrize("bad", ["topic:Berlin", "Topic:work", "TOPIC:x->y"])
async def test_a_caller_id_cannot_name_a_topic(api: Api, bad: str) -> None:
    err = await api.error(SAVE, input={"content": "in Berlin", "id": bad, "topicPath": "Berlin"})
    assert err["extensions"]["code"] == "INVALID_ID"
    assert "topic:" in err["message"]
    # the topic stays reachable and no event took its id
    assert (await api.gql('{ memoryIndex { counts { events } } }'))["memoryIndex"]["counts"][
        "events"
    ] == 0
    ok = await api.gql(SAVE, input={"content": "in Berlin", "id": "berlin:1", "topicPath": "Berlin"})
    assert ok["save"]["eventIds"] == ["berlin:1"]
    node = await api.gql('{ node(id: "topic:Berlin") { __typename id } }')
    assert node["node"] == {"__typename": "Topic", "id": "topic:Berlin"}


async def test_topic_bindings_page_both_ways(api: Api) -> None:
    for i in range(4):
        await api.gql(
            SAVE, input={"content": f"api note {i}", "id": f"note_{i}", "topicPath": "work->api"}
        )
    q = 'query($f: Int, $a: String, $l: Int, $b: String) { topic(path: "work->api") { bindings(first: $f, after: $a, last: $l, before: $b) { totalCount edges { cursor node { id } } INFO } } }'.replace(
        "INFO", INFO
    )
    page = (await api.gql(q, f=3))["topic"]["bindings"]
    assert [e["node"]["id"] for e in page["edges"]] == ["note_0", "note_1", "note_2"]
    assert page["pageInfo"]["hasNextPage"] and not page["pageInfo"]["hasPreviousPage"]
    tail = (await api.gql(q, l=2))["topic"]["bindings"]
    assert [e["node"]["id"] for e in tail["edges"]] == ["note_2", "note_3"]
    assert tail["pageInfo"]["hasPreviousPage"] and not tail["pageInfo"]["hasNextPage"]
    back = (await api.gql(q, l=5, b=tail["pageInfo"]["startCursor"]))["topic"]["bindings"]
    assert [e["node"]["id"] for e in back["edges"]] == ["note_0", "note_1"]
    assert back["pageInfo"]["hasNextPage"] and not back["pageInfo"]["hasPreviousPage"]
    events = (await api.gql("{ events(first: 1) { edges { cursor } } }"))["events"]
    err = await api.error(q, a=events["edges"][0]["cursor"])  # a cursor of another list
    assert err["extensions"]["code"] == "CURSOR_INVALID"
