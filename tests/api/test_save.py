"""save / saveMany and the typed graph, over GraphQL, on the embedded store."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.api.conftest import Api, offline_settings, running

SAVE = """
mutation($input: SaveInput!) {
  save(input: $input) {
    eventIds createdPersons createdConcepts createdLocations
    merged { id: entityId aliasesAdded } refs { ref id: nodeId } replayed message
  }
}"""

COUNTS = "{ memoryIndex { counts { events persons concepts locations chunks relationships } } }"

EXTRACTION = {
    "events": [
        {
            "ref": "e1",
            "summary": "Alice moved to Berlin for the Neo4j migration",
            "time": "last week",
            "participants": [{"person": "p1", "role": "engineer"}],
            "locations": ["l1"],
            "concepts": ["c1", "c2"],
        }
    ],
    "persons": [{"ref": "p1", "name": "Alice", "aliases": ["Al"]}],
    "concepts": [{"ref": "c1", "name": "Neo4j"}, {"ref": "c2", "name": "migration"}],
    "locations": [{"ref": "l1", "name": "Berlin"}],
    "attitudes": [{"person": "p1", "target": "c1", "attitude": "enthusiastic", "event": "e1"}],
}
TEXT = "Alice: I moved to Berlin last week to work on the Neo4j migration. 我很喜欢图数据库。"


async def counts(api: Api) -> dict[str, int]:
    data = await api.gql(COUNTS)
    result: dict[str, int] = data["memoryIndex"]["counts"]
    return result


async def test_save_with_client_extraction_builds_the_typed_graph(api: Api) -> None:
    saved = (await api.gql(SAVE, input={"content": TEXT, "extraction": EXTRACTION}))["save"]
    assert saved["eventIds"] == ["event_1"]
    assert saved["createdPersons"] == ["person_1"]
    assert saved["createdConcepts"] == ["concept_1", "concept_2"]
    assert saved["createdLocations"] == ["location_1"]
    assert {r["ref"]: r["id"] for r in saved["refs"]}["c2"] == "concept_2"
    assert saved["message"].startswith("saved 1 event(s): event_1")  # MNEMOQL_LOCALE: en

    data = await api.gql(
        """{ node(id: "event_1") { __typename ... on Event {
              summary time length legacy
              content(start: 0, limit: 5) { text start end total next }
              chunks { index start end }
              participants { edges { role node { id name aliases } } }
              locations { edges { node { name } } }
              concepts { edges { node { id name } } } } } }"""
    )
    ev = data["node"]
    assert ev["__typename"] == "Event"
    assert ev["time"] == "last week"
    assert ev["length"] == len(TEXT)
    assert ev["legacy"] is False
    assert ev["content"] == {"text": "Alice", "start": 0, "end": 5, "total": len(TEXT), "next": 5}
    assert ev["chunks"] == [{"index": 0, "start": 0, "end": len(TEXT)}]
    assert ev["participants"]["edges"] == [
        {"role": "engineer", "node": {"id": "person_1", "name": "Alice", "aliases": ["Al"]}}
    ]
    assert [e["node"]["name"] for e in ev["locations"]["edges"]] == ["Berlin"]
    assert [e["node"]["id"] for e in ev["concepts"]["edges"]] == ["concept_1", "concept_2"]

    person = (
        await api.gql(
            """{ node(id: "person_1") { ... on Person {
                 events { edges { role node { id } } }
                 attitudes { edges { attitude eventId node { id ... on Concept { name } } } } } } }"""
        )
    )["node"]
    assert person["events"]["edges"] == [{"role": "engineer", "node": {"id": "event_1"}}]
    assert person["attitudes"]["edges"] == [
        {
            "attitude": "enthusiastic",
            "eventId": "event_1",
            "node": {"id": "concept_1", "name": "Neo4j"},
        }
    ]
    concept = (
        await api.gql(
            '{ node(id: "concept_1") { ... on Concept { events { edges { node { id } } } attitudes { edges { node { id } } } } } }'
        )
    )["node"]
    assert concept["events"]["edges"] == [{"node": {"id": "event_1"}}]
    assert concept["attitudes"]["edges"] == [{"node": {"id": "person_1"}}]


async def test_entities_merge_by_normalised_name_and_alias(api: Api) -> None:
    await api.gql(SAVE, input={"content": TEXT, "extraction": EXTRACTION})
    second = {
        "events": [
            {
                "ref": "e1",
                "summary": "Al visited ＢＥＲＬＩＮ again",
                "participants": [{"person": "p"}],
                "locations": ["l"],
                "concepts": ["c"],
            }
        ],
        "persons": [{"ref": "p", "name": "al", "aliases": ["Alice Smith"]}],
        "locations": [{"ref": "l", "name": "ＢＥＲＬＩＮ"}],
        "concepts": [{"ref": "c", "name": "NEO4J", "aliases": ["graph database"]}],
    }
    saved = (
        await api.gql(SAVE, input={"content": "Al was in Berlin again.", "extraction": second})
    )["save"]
    assert saved["eventIds"] == ["event_2"]
    assert (
        saved["createdPersons"] == []
        and saved["createdLocations"] == []
        and saved["createdConcepts"] == []
    )
    merged = {m["id"]: m["aliasesAdded"] for m in saved["merged"]}
    assert merged["person_1"] == ["Alice Smith"]
    assert merged["concept_1"] == ["graph database"]
    assert (await counts(api))["persons"] == 1
    person = (
        await api.gql(
            '{ node(id: "person_1") { ... on Person { aliases events { edges { node { id } } } } } }'
        )
    )["node"]
    assert person["aliases"] == ["Al", "Alice Smith"]
    assert {e["node"]["id"] for e in person["events"]["edges"]} == {"event_1", "event_2"}


async def test_offline_extractor_saves_without_any_key(api: Api) -> None:
    saved = (
        await api.gql(
            SAVE,
            input={
                "content": "Alice: I moved to Berlin last week.\n\nBob: Welcome to Germany, Alice!"
            },
        )
    )["save"]
    assert saved["eventIds"]
    names = (await api.gql("{ persons { edges { node { name } } } }"))["persons"]["edges"]
    assert {"Alice", "Bob"} <= {e["node"]["name"] for e in names}


async def test_caller_ids_are_validated_and_unique(api: Api) -> None:
    ok = (
        await api.gql(
            SAVE,
            input={"content": "第三章第十二条记录", "id": "book_ch3_e12", "extraction": EXTRACTION},
        )
    )["save"]
    assert ok["eventIds"] == ["book_ch3_e12"]
    before = await counts(api)
    for bad in ["event_7", "has space", "", "a" * 200, "x'); DROP TABLE nodes; --"]:
        err = await api.error(SAVE, input={"content": "text", "id": bad, "extraction": EXTRACTION})
        assert err["extensions"]["code"] == "INVALID_ID", (bad, err)
    dup = await api.error(
        SAVE, input={"content": "again", "id": "book_ch3_e12", "extraction": EXTRACTION}
    )
    assert dup["extensions"]["code"] == "CONFLICT"
    assert await counts(api) == before
    # the allocator ignores positional ids
    nxt = (await api.gql(SAVE, input={"content": "next one", "extraction": EXTRACTION}))["save"]
    assert nxt["eventIds"] == ["event_1"]


async def test_bad_content_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    settings = offline_settings(tmp_path, limits={"max_content_chars": 50})
    async with running(settings) as api:
        for content, code in [
            ("", "BAD_USER_INPUT"),
            ("   \n ", "BAD_USER_INPUT"),
            ("x" * 51, "BAD_USER_INPUT"),
        ]:
            err = await api.error(SAVE, input={"content": content})
            assert err["extensions"]["code"] == code
        bad = {"events": [{"ref": "e1", "summary": "s", "concepts": ["nope"]}]}
        err = await api.error(SAVE, input={"content": "fine", "extraction": bad})
        assert err["extensions"]["code"] == "EXTRACTION_INVALID"
        assert "提取结果无效" in err["extensions"]["zh"]
        empty = await api.error(SAVE, input={"content": "fine", "extraction": {"events": []}})
        assert empty["extensions"]["code"] == "EXTRACTION_INVALID"
        assert (await counts(api))["events"] == 0


async def test_idempotency_key_and_content_hash_do_not_duplicate(api: Api) -> None:
    first = (
        await api.gql(
            SAVE, input={"content": TEXT, "extraction": EXTRACTION, "idempotencyKey": "k-1"}
        )
    )["save"]
    again = (
        await api.gql(
            SAVE, input={"content": TEXT, "extraction": EXTRACTION, "idempotencyKey": "k-1"}
        )
    )["save"]
    assert again["eventIds"] == first["eventIds"] and again["replayed"] is True
    by_hash = (
        await api.gql(SAVE, input={"content": TEXT, "extraction": EXTRACTION, "dedupeByHash": True})
    )["save"]
    assert by_hash["eventIds"] == first["eventIds"] and by_hash["replayed"] is True
    assert (await counts(api))["events"] == 1
    plain = (await api.gql(SAVE, input={"content": TEXT, "extraction": EXTRACTION}))["save"]
    assert plain["eventIds"] == ["event_2"]


async def test_twenty_concurrent_saves_get_unique_ids(api: Api) -> None:
    results = await asyncio.gather(
        *(
            api.gql(SAVE, input={"content": f"memory number {i}: Alice met Bob in Paris."})
            for i in range(20)
        )
    )
    ids = [i for r in results for i in r["save"]["eventIds"]]
    assert len(ids) == len(set(ids))
    assert sorted(int(i.split("_")[1]) for i in ids) == list(range(1, len(ids) + 1))
    assert (await counts(api))["events"] == len(ids)
    persons = (await api.gql("{ persons(first: 50) { edges { node { name } } } }"))["persons"][
        "edges"
    ]
    names = [e["node"]["name"] for e in persons]
    assert len(names) == len(set(names))  # merged, never duplicated under concurrency


async def test_save_many_reports_each_item(api: Api) -> None:
    data = await api.gql(
        """mutation($inputs: [SaveInput!]!) { saveMany(inputs: $inputs) {
             saved errors { index code } results { eventIds } } }""",
        inputs=[
            {"content": "one"},
            {"content": ""},
            {"content": "three", "id": "bad id"},
            {"content": "four"},
        ],
    )
    out = data["saveMany"]
    assert out["saved"] == 2
    assert [(e["index"], e["code"]) for e in out["errors"]] == [
        (1, "BAD_USER_INPUT"),
        (2, "INVALID_ID"),
    ]
    assert out["results"][1] is None and out["results"][0]["eventIds"]


async def test_content_ranges_are_exact_code_points(api: Api) -> None:
    text = "𝒜𝒷" + "中" * 900 + "😀end"
    await api.gql(SAVE, input={"content": text, "extraction": EXTRACTION})
    ev = (
        await api.gql(
            '{ node(id: "event_1") { ... on Event { length content(start: 1, limit: 2) { text end next } chunks { start end } } } }'
        )
    )["node"]
    assert ev["length"] == len(text) == 906
    assert ev["content"] == {"text": "𝒷中", "end": 3, "next": 3}
    assert ev["chunks"] == [{"start": 0, "end": 800}, {"start": 680, "end": 906}]
    tail = (
        await api.gql('{ read(eventId: "event_1", start: 902, limit: 10) { text end next total } }')
    )["read"]
    assert tail == {"text": "😀end", "end": 906, "next": None, "total": 906}
    err = await api.error('{ read(eventId: "event_1", start: 907) { text } }')
    assert err["extensions"]["code"] == "BAD_USER_INPUT"
    err = await api.error('{ read(eventId: "event_1", limit: 10001) { text } }')
    assert err["extensions"]["code"] == "OUT_OF_RANGE"
    err = await api.error('{ read(eventId: "event_404") { text } }')
    assert err["extensions"]["code"] == "NOT_FOUND"


async def test_root_connections_page_filter_and_sort(api: Api) -> None:
    for i in range(7):
        ex = {"events": [{"ref": "e", "summary": f"summary {i} {'cats' if i % 2 else 'dogs'}"}]}
        await api.gql(SAVE, input={"content": f"text {i}", "extraction": ex})
    seen: list[str] = []
    after = None
    while True:
        page = (
            await api.gql(
                "query($after: String) { events(first: 3, after: $after, sort: {field: ID, direction: ASC}) { totalCount edges { node { id } } pageInfo { hasNextPage endCursor } } }",
                after=after,
            )
        )["events"]
        seen += [e["node"]["id"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == sorted(seen) and len(seen) == len(set(seen)) == 7
    cats = (
        await api.gql(
            '{ events(where: {summary: {contains: "cats"}}) { edges { node { summary } } } }'
        )
    )["events"]["edges"]
    assert len(cats) == 3 and all("cats" in e["node"]["summary"] for e in cats)
    either = (
        await api.gql(
            '{ events(where: {OR: [{id: {eq: "event_1"}}, {id: {eq: "event_2"}}], NOT: {id: {eq: "event_2"}}}) { edges { node { id } } } }'
        )
    )["events"]["edges"]
    assert [e["node"]["id"] for e in either] == ["event_1"]
    err = await api.error("{ events(first: 1000) { edges { cursor } } }")
    assert err["extensions"]["code"] == "OUT_OF_RANGE"
    err = await api.error('{ events(after: "not-a-cursor") { edges { cursor } } }')
    assert err["extensions"]["code"] == "CURSOR_INVALID"
    assert (await api.gql('{ node(id: "event_999") { id } }'))["node"] is None


async def test_memory_survives_a_restart(tmp_path: Path) -> None:
    settings = offline_settings(tmp_path)
    async with running(settings) as api:
        await api.gql(SAVE, input={"content": TEXT, "extraction": EXTRACTION})
    async with running(settings) as api:
        assert (await counts(api))["events"] == 1
        text = (await api.gql('{ read(eventId: "event_1") { text } }'))["read"]["text"]
        assert text == TEXT
        saved = (await api.gql(SAVE, input={"content": "more", "extraction": EXTRACTION}))["save"]
        assert saved["eventIds"] == ["event_2"] and saved["createdPersons"] == []


async def test_graph_snapshot_has_no_vectors_and_respects_caps(api: Api) -> None:
    await api.gql(SAVE, input={"content": TEXT, "extraction": EXTRACTION})
    g = (
        await api.gql(
            "{ graph { nodes { id: nodeId label name properties } relationships { type source target properties } truncatedNodes truncatedRelationships } }"
        )
    )["graph"]
    assert [n["label"] for n in g["nodes"]] == ["Event", "Person", "Concept", "Concept", "Location"]
    assert all("embedding" not in n["properties"] for n in g["nodes"])
    assert {r["type"] for r in g["relationships"]} == {
        "PARTICIPATED_IN",
        "OCCURRED_AT",
        "MENTIONS",
        "HAS_ATTITUDE",
    }
    assert g["truncatedNodes"] is False
    small = (
        await api.gql(
            "{ graph(maxNodes: 2, maxRelationships: 0) { nodes { id: nodeId } relationships { type } truncatedNodes truncatedRelationships } }"
        )
    )["graph"]
    assert [n["id"] for n in small["nodes"]] == ["event_1", "person_1"]
    assert (
        small["relationships"] == [] and small["truncatedNodes"] and small["truncatedRelationships"]
    )
    err = await api.error("{ graph(maxNodes: 5001) { truncatedNodes } }")
    assert err["extensions"]["code"] == "OUT_OF_RANGE"


async def test_nodes_is_bounded_and_keeps_order(api: Api) -> None:
    await api.gql(SAVE, input={"content": TEXT, "extraction": EXTRACTION})
    got = (await api.gql('{ nodes(ids: ["concept_2", "nope", "event_1"]) { id } }'))["nodes"]
    assert got == [{"id": "concept_2"}, None, {"id": "event_1"}]
    err = await api.error("query($ids: [ID!]!) { nodes(ids: $ids) { id } }", ids=[f"event_{i}" for i in range(101)])
    assert err["extensions"]["code"] == "OUT_OF_RANGE"
