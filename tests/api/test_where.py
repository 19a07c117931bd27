"""``where`` trees through GraphQL, from variables and from literals: each operator, AND / OR /
NOT at depth, and entity filters. schema/inputs.py builds these inputs itself (strawberry's
``from_input`` hook), so these tests pin that the objects it builds mean what the SDL says."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api

SAVE = "mutation($c: String!, $id: String) { save(input: {content: $c, id: $id}) { eventIds } }"
EVENTS = (
    "query($w: EventWhere) { events(first: 50, where: $w, sort: {field: ID, direction: ASC}) "
    "{ edges { node { id } } } }"
)
PERSONS = (
    "query($w: EntityWhere) { persons(first: 50, where: $w) { edges { node { name } } } }"
)
TEXTS = {
    "walk_1": "Alice walked to the harbour with Bob.",
    "walk_2": "Bob cooked dinner for Carol in Lisbon.",
    "walk_3": "Carol painted the harbour at dawn.",
    "note_1": "A grocery list: apples, bread, tea.",
}


@pytest.fixture
async def saved(api: Api) -> Api:
    for eid, text in TEXTS.items():
        await api.gql(SAVE, c=text, id=eid)
    return api


async def ids(api: Api, where: dict[str, Any] | None) -> list[str]:
    data = await api.gql(EVENTS, w=where)
    return [e["node"]["id"] for e in data["events"]["edges"]]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"id": {"eq": "walk_2"}}, ["walk_2"]),
        ({"id": {"in": ["note_1", "walk_3", "nope"]}}, ["note_1", "walk_3"]),
        ({"id": {"startsWith": "walk_"}}, ["walk_1", "walk_2", "walk_3"]),
        ({"id": {"gt": "walk_1", "lte": "walk_3"}}, ["walk_2", "walk_3"]),
        ({"content": {"contains": "harbour"}}, ["walk_1", "walk_3"]),
        ({"OR": [{"id": {"eq": "note_1"}}, {"content": {"contains": "Lisbon"}}]},
         ["note_1", "walk_2"]),
        ({"AND": [{"id": {"startsWith": "walk_"}}, {"NOT": {"content": {"contains": "Bob"}}}]},
         ["walk_3"]),
        ({"NOT": {"OR": [{"id": {"eq": "walk_1"}}, {"AND": [{"id": {"lt": "walk_"}}]}]}},
         ["walk_2", "walk_3"]),
        ({"id": {"startsWith": "walk_"}, "content": {"contains": "Carol"}}, ["walk_2", "walk_3"]),
        ({"createDate": {"gte": "2000-01-01"}, "id": {"lt": "walk_2"}}, ["note_1", "walk_1"]),
        ({"id": {"eq": None}}, ["note_1", "walk_1", "walk_2", "walk_3"]),
        ({}, ["note_1", "walk_1", "walk_2", "walk_3"]),
    ],
)
async def test_event_where_from_variables(saved: Api, where: dict[str, Any],
                                          expected: list[str]) -> None:  # fmt: skip
    assert await ids(saved, where) == expected


async def test_a_literal_tree_means_the_same_as_a_variable(saved: Api) -> None:
    literal = (
        '{ events(first: 50, where: {OR: [{id: {in: ["walk_1", "note_1"]}}, '
        '{NOT: {content: {contains: "a"}}}], AND: [{id: {startsWith: "walk"}}]}, '
        "sort: {field: ID, direction: ASC}) { edges { node { id } } } }"
    )
    data = await saved.gql(literal)
    got = [e["node"]["id"] for e in data["events"]["edges"]]
    assert got == ["walk_1"]
    assert got == await ids(saved, {"OR": [{"id": {"in": ["walk_1", "note_1"]}},
                                           {"NOT": {"content": {"contains": "a"}}}],
                                    "AND": [{"id": {"startsWith": "walk"}}]})  # fmt: skip


async def test_a_default_list_is_not_shared_between_requests(saved: Api) -> None:
    query = (
        'query($w: EventWhere = {id: {in: ["walk_1"]}}) { events(first: 5, where: $w) '
        "{ edges { node { id } } } }"
    )
    for _ in range(2):
        data = await saved.gql(query)
        assert [e["node"]["id"] for e in data["events"]["edges"]] == ["walk_1"]


SAVE_WITH = "mutation($input: SaveInput!) { save(input: $input) { eventIds } }"


async def test_entity_where_through_every_level(api: Api) -> None:
    people = ["Alice", "Bob", "Carol", "Caroline"]
    extraction = {"events": [{"ref": "e1", "summary": "a dinner",
                              "participants": [{"person": f"p{i}"} for i in range(4)]}],
                  "persons": [{"ref": f"p{i}", "name": n} for i, n in enumerate(people)]}
    await api.gql(SAVE_WITH, input={"content": "Alice, Bob, Carol and Caroline had dinner.",
                                    "extraction": extraction})  # fmt: skip
    where = {"OR": [{"name": {"eq": "Alice"}}, {"name": {"startsWith": "Car"}}],
             "NOT": {"name": {"in": ["Carol"]}}}  # fmt: skip
    data = await api.gql(PERSONS, w=where)
    assert [e["node"]["name"] for e in data["persons"]["edges"]] == ["Alice", "Caroline"]
