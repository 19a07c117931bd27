"""Memory spaces: a token sees and touches only its own space, on every query, mutation and
export path; ids, idempotency keys, sessions and cursors exist independently per space."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.spaces import Spaces
from tests.api.conftest import Api, running
from tests.api.test_auth import Caller, token_settings
from tests.api.test_evidence import EXPAND, NEARBY, SEARCH, extraction
from tests.api.test_save import COUNTS

A_TOKEN = "alice-token-0123456789abcdef"
B_TOKEN = "bob-token-0123456789abcdefgh"
TOKENS = [
    {"token": A_TOKEN, "space": "alice", "scopes": ["read", "write"]},
    {"token": B_TOKEN, "space": "bob", "scopes": ["read", "write"]},
]
SAVE = (
    "mutation($input: SaveInput!) { save(input: $input) { eventIds createdPersons "
    "createdConcepts createdLocations replayed } }"
)
EMPTY = {"events": 0, "persons": 0, "concepts": 0, "locations": 0, "chunks": 0, "relationships": 0}
LISTS = """{
  events { totalCount edges { node { id summary } } }
  persons { totalCount edges { node { id name } } }
  concepts { totalCount edges { node { id name } } }
  locations { totalCount edges { node { id name } } }
}"""
GRAPH = "{ graph { nodes { id: nodeId } relationships { type } truncatedNodes } }"


@pytest.fixture
async def two(tmp_path: Path) -> AsyncIterator[tuple[Api, Caller, Caller]]:
    async with running(token_settings(tmp_path, TOKENS)) as api:
        yield api, Caller(api, A_TOKEN), Caller(api, B_TOKEN)


async def seed_alice(a: Caller) -> dict[str, Any]:
    """Alice's memory: a chapter of positional records with a person, concepts and a place."""
    ids: list[str] = []
    for rec in range(1, 6):
        ex = extraction(f"Alice diary record {rec} about the lighthouse", ["Alice"], ["lighthouse"])
        ex["locations"] = [{"ref": "l0", "name": "Brest"}]
        ex["events"][0]["locations"] = ["l0"]
        saved = await a.gql(
            SAVE,
            input={
                "content": f"Alice: record {rec}, the lighthouse at Brest. " + "sea " * 40,
                "id": f"diary_ch1_e{rec:02d}",
                "extraction": ex,
                "idempotencyKey": f"alice-{rec}",
            },
        )
        ids += saved["save"]["eventIds"]
    plain = await a.gql(
        SAVE,
        input={
            "content": "Alice: a plain note on the lighthouse keeper.",
            "extraction": extraction("plain lighthouse note", ["Alice"], ["lighthouse"]),
        },
    )
    ids += plain["save"]["eventIds"]
    page = (await a.gql(SEARCH, q="lighthouse", s="shared-name"))["search"]
    assert page["items"] and page["cursor"]
    counts = (await a.gql(COUNTS))["memoryIndex"]["counts"]
    return {"ids": ids, "page": page, "counts": counts}


async def test_another_space_sees_nothing_on_any_read_path(
    two: tuple[Api, Caller, Caller],
) -> None:
    _, a, b = two
    seeded = await seed_alice(a)
    ids, page = seeded["ids"], seeded["page"]
    assert "event_1" in ids and "diary_ch1_e03" in ids

    assert (await b.gql(COUNTS))["memoryIndex"]["counts"] == EMPTY
    for node_id in [*ids, "person_1", "concept_1", "location_1"]:
        found = await b.gql("query($id: ID!) { node(id: $id) { id } }", id=node_id)
        assert found["node"] is None, node_id
    nodes = await b.gql("query($ids: [ID!]!) { nodes(ids: $ids) { id } }", ids=ids)
    assert nodes["nodes"] == [None] * len(ids)
    lists = await b.gql(LISTS)
    for name in ("events", "persons", "concepts", "locations"):
        assert lists[name] == {"totalCount": 0, "edges": []}, name
    graph = (await b.gql(GRAPH))["graph"]
    assert graph["nodes"] == [] and graph["relationships"] == []
    assert (await b.code('{ read(eventId: "diary_ch1_e01") { text } }')) == "NOT_FOUND"
    assert (await b.code('{ read(eventId: "event_1") { text } }')) == "NOT_FOUND"
    assert (await b.code('{ neighbourhood(id: "person_1") { nodes { id: nodeId } } }')) == "NOT_FOUND"

    # evidence: nothing to find, and Alice's cursor means nothing here -- even with her session
    for session in ("shared-name", None):
        found = (await b.gql(SEARCH, q="lighthouse", s=session))["search"]
        assert found["items"] == [] and found["cursor"] is None
        by_entity = (await b.gql(SEARCH, e=["Alice", "lighthouse"], s=session))["search"]
        assert by_entity["items"] == []
    concept = page["expandConcepts"][0]
    for session in ("shared-name", "other"):
        code = await b.code(EXPAND, c=page["cursor"], id=concept, s=session)
        assert code in {"CURSOR_INVALID", "CURSOR_SESSION"}, code
        code = await b.code(NEARBY, c=page["cursor"], id="diary_ch1_e03", s=session)
        assert code in {"CURSOR_INVALID", "CURSOR_SESSION"}, code
    targeted = await b.gql('{ search(query: "Alice", target: PERSON) { items { eventId } text } }')
    assert targeted["search"]["items"] == []

    # Alice still sees all of it, and her cursor still works in her own space
    assert (await a.gql(COUNTS))["memoryIndex"]["counts"] == seeded["counts"]
    expanded = (await a.gql(EXPAND, c=page["cursor"], id=concept, s="shared-name"))["expand"]
    assert expanded["chainCount"] >= page["chainCount"]


async def test_another_space_cannot_change_anything(two: tuple[Api, Caller, Caller]) -> None:
    _, a, b = two
    seeded = await seed_alice(a)
    assert await b.code('mutation { forget(eventId: "event_1") { deletedIds } }') == "NOT_FOUND"
    code = await b.code('mutation { forget(eventId: "diary_ch1_e02") { deletedIds } }')
    assert code == "NOT_FOUND"
    report = await b.gql("mutation { revectorize { events persons concepts chunks } }")
    assert report["revectorize"] == {"events": 0, "persons": 0, "concepts": 0, "chunks": 0}
    # the same caller id and idempotency key are new in Bob's space: saved, not replayed
    mine = await b.gql(
        SAVE,
        input={
            "content": "Bob: my own first record.",
            "id": "diary_ch1_e01",
            "idempotencyKey": "alice-1",
            "extraction": extraction("Bob's record", ["Bob"]),
        },
    )
    assert mine["save"]["eventIds"] == ["diary_ch1_e01"] and mine["save"]["replayed"] is False
    assert mine["save"]["createdPersons"] == ["person_1"]  # ids are allocated per space
    many = await b.gql(
        "mutation($i: [SaveInput!]!) { saveMany(inputs: $i) { results { eventIds } } }",
        i=[{"content": "Bob again", "extraction": extraction("Bob again", ["Bob"])}],
    )
    assert many["saveMany"]["results"][0]["eventIds"] == ["event_1"]

    assert (await a.gql(COUNTS))["memoryIndex"]["counts"] == seeded["counts"]
    texts = {}
    for who in (a, b):
        read = await who.gql('{ read(eventId: "diary_ch1_e01", limit: 12) { text } }')
        texts[who] = read["read"]["text"]
    assert texts[a].startswith("Alice") and texts[b].startswith("Bob")
    person = await b.gql('{ node(id: "person_1") { ... on Person { name } } }')
    assert person["node"]["name"] == "Bob"
    graph_b = (await b.gql(GRAPH))["graph"]
    assert {n["id"] for n in graph_b["nodes"]} == {"diary_ch1_e01", "event_1", "person_1"}
    # Bob's forget removes Bob's record only
    await b.gql('mutation { forget(eventId: "diary_ch1_e01") { deletedIds } }')
    assert (await a.gql('{ node(id: "diary_ch1_e01") { id } }'))["node"] is not None


async def test_topic_recall_and_activation_stay_in_their_space(
    two: tuple[Api, Caller, Caller],
) -> None:
    _, a, b = two
    saved = await a.gql(
        SAVE,
        input={
            "content": "Alice: the lighthouse log, day one.",
            "topicPath": "travel/brest",
            "extraction": extraction("lighthouse log day one", ["Alice"], ["lighthouse"]),
        },
    )
    (event_id,) = saved["save"]["eventIds"]
    recall = '{ recall(topicPath: "travel/brest") { memories { event { id } } } }'
    mine = await a.gql(recall)
    assert [m["event"]["id"] for m in mine["recall"]["memories"]] == [event_id]
    assert (await b.gql(recall))["recall"]["memories"] == []
    bind = 'mutation($id: ID!) { bindTopic(eventId: $id, topicPath: "travel/brest") { path } }'
    assert await b.code(bind, id=event_id) == "NOT_FOUND"
    activated = await b.gql(
        '{ activate(input: ["Alice, what about the lighthouse in brest?"]) '
        "{ memories { event { id } } } }"
    )
    assert activated["activate"]["memories"] == []


async def test_each_space_has_its_own_store_memory_and_sessions(
    two: tuple[Api, Caller, Caller], tmp_path: Path
) -> None:
    api, a, b = two
    await a.gql(SAVE, input={"content": "Alice: hello.", "extraction": extraction("hello")})
    await b.gql(COUNTS)
    spaces: Spaces = api.app.state.spaces
    assert spaces.names == ["alice", "bob", "default"]
    alice, bob = await spaces.get("alice"), await spaces.get("bob")
    assert alice is not bob and alice.store is not bob.store
    assert (alice.store.space, bob.store.space) == ("alice", "bob")
    assert alice.providers is bob.providers  # one HTTP client and embedder for all spaces
    assert alice.sessions is not bob.sessions and alice.cursors is not bob.cursors
    assert alice.ingestor.lock is not bob.ingestor.lock
    assert await spaces.get("alice") is alice  # cached
    assert (tmp_path / "memory-alice.db").is_file() and (tmp_path / "memory-bob.db").is_file()
    with pytest.raises(InvalidInput):
        await spaces.get("../escape")


async def test_spaces_survive_a_restart(tmp_path: Path) -> None:
    settings = token_settings(tmp_path, TOKENS)
    async with running(settings) as api:
        await Caller(api, A_TOKEN).gql(
            SAVE, input={"content": "Alice: persisted.", "extraction": extraction("persisted")}
        )
    async with running(settings) as api:
        a, b = Caller(api, A_TOKEN), Caller(api, B_TOKEN)
        assert (await a.gql(COUNTS))["memoryIndex"]["counts"]["events"] == 1
        assert (await b.gql(COUNTS))["memoryIndex"]["counts"]["events"] == 0
