"""Third-party clients against a real ``mnemoql serve`` process, installed the README way:
gql over both websocket protocols (subscriptions, the live feed, the token and space rules),
the graphql-http server audit, and relay-compiler + relay-runtime paging every connection.

The npm tools come from tests/web/js (``npm ci``, run by .ci/run). Without them those tests
skip, except when CI=true or MNEMOQL_REQUIRE_JS=1: then they fail.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import pytest
from gql import Client, gql
from gql.transport.exceptions import (
    TransportConnectionFailed,
    TransportQueryError,
    TransportServerError,
)
from gql.transport.websockets import WebsocketsTransport

from tests.web.served import ALICE, ALICE_READ, BOB, JS, ROOT, TOKENS, Served, need_js, served

CHANGES = gql(
    "subscription { memoryChanges { sequence kind eventIds nodeIds deletedIds"
    " nodes { nodeId label name } relationships { relationshipId type source target } } }"
)
REVECTORIZE = gql("subscription { revectorize { phase done total report { model events } } }")
SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds merged { entityId } } }"
PERSONS = ["Ann", "Ben", "Cai"]
CONCEPTS = ["graphs", "memory", "relay"]


def extraction(n: int) -> dict[str, Any]:
    """One event with three people, three concepts and Berlin; the first also has attitudes."""
    ex: dict[str, Any] = {
        "events": [
            {
                "ref": "e",
                "summary": f"meeting {n} in Berlin",
                "participants": [{"person": f"p{i}", "role": "guest"} for i in range(3)],
                "locations": ["l"],
                "concepts": [f"c{i}" for i in range(3)],
            }
        ],
        "persons": [{"ref": f"p{i}", "name": name} for i, name in enumerate(PERSONS)],
        "concepts": [{"ref": f"c{i}", "name": name} for i, name in enumerate(CONCEPTS)],
        "locations": [{"ref": "l", "name": "Berlin"}],
    }
    if n == 0:
        ex["attitudes"] = [
            {"person": "p0", "target": f"c{i}", "attitude": "likes", "event": "e"} for i in range(3)
        ] + [{"person": f"p{i}", "target": "c0", "attitude": "studies", "event": "e"} for i in (1, 2)]
    return ex


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One real server for the module: spaces alice and bob, with tokens. The graphql-http
    audit sends dozens of malformed requests back to back on purpose: more than a client's
    refusals (docs/security.md) allow by default."""
    env = {"MNEMOQL_HTTP__REFUSALS_BURST": "1000"}
    with served(tmp_path_factory.mktemp("clients") / "data", tokens=TOKENS, env=env) as s:
        yield s


def transport(server: Served, token: str | None, protocol: str) -> WebsocketsTransport:
    payload = {"Authorization": f"Bearer {token}"} if token else {}
    return WebsocketsTransport(url=server.ws, init_payload=payload, subprotocols=[protocol])


PROTOCOLS = [WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL, WebsocketsTransport.APOLLO_SUBPROTOCOL]


async def post(server: Served, token: str, query: str, **variables: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=60) as client:
        r = await client.post(
            server.graphql,
            json={"query": query, "variables": variables},
            headers={"authorization": f"Bearer {token}"},
        )
    body: dict[str, Any] = r.json()
    assert not body.get("errors"), body
    data: dict[str, Any] = body["data"]
    return data


# ---------------------------------------------------------------- the install


def test_a_plain_install_brings_a_websocket_implementation() -> None:
    """``pip install -e .`` (no extras) must give uvicorn something to upgrade /graphql with."""
    plain = [r for r in metadata.requires("mnemoql") or [] if "extra ==" not in r]
    names = {re.split(r"[<>=!~;\s]", r, maxsplit=1)[0] for r in plain}
    assert names & {"websockets", "wsproto", "uvicorn[standard]"}, plain
    import websockets  # noqa: F401  (installed, not only declared)


# ---------------------------------------------------------------- subscriptions


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_the_live_feed_follows_saves_merges_and_forgets_in_one_space(
    server: Served, protocol: str
) -> None:
    async with (
        Client(transport=transport(server, ALICE_READ, protocol)) as alice,
        Client(transport=transport(server, BOB, protocol)) as bob,
    ):
        feed = alice.subscribe(CHANGES)
        other = bob.subscribe(CHANGES)
        ready = (await anext(feed))["memoryChanges"]
        assert ready["kind"] == "READY"
        assert (await anext(other))["memoryChanges"]["kind"] == "READY"
        content = f"a {protocol} meeting"
        saved = await post(server, ALICE, SAVE, input={"content": content, "extraction": extraction(1)})
        change = (await asyncio.wait_for(anext(feed), 30))["memoryChanges"]
        assert change["kind"] == "SAVED" and change["sequence"] > ready["sequence"]
        assert change["eventIds"] == saved["save"]["eventIds"]
        labels = {n["label"] for n in change["nodes"]}
        assert "Event" in labels
        event_id = change["eventIds"][0]
        assert {"PARTICIPATED_IN", "OCCURRED_AT", "MENTIONS"} <= {
            r["type"] for r in change["relationships"]
        }
        assert all(event_id in (r["source"], r["target"]) for r in change["relationships"])
        if saved["save"]["merged"]:  # the second protocol's save merges into the first's people
            merged = (await asyncio.wait_for(anext(feed), 30))["memoryChanges"]
            assert merged["kind"] == "MERGED"
            assert {m["entityId"] for m in saved["save"]["merged"]} == set(merged["nodeIds"])
        forgot = await post(server, ALICE, 'mutation($id: ID!) { forget(eventId: $id) { deletedIds } }', id=event_id)
        gone = (await asyncio.wait_for(anext(feed), 30))["memoryChanges"]
        assert gone["kind"] == "FORGOTTEN"
        assert gone["deletedIds"] == forgot["forget"]["deletedIds"]
        # bob's feed saw none of alice's changes: its next one is its own save
        await post(server, BOB, SAVE, input={"content": "bob's own note"})
        own = (await asyncio.wait_for(anext(other), 30))["memoryChanges"]
        assert own["kind"] == "SAVED"
        assert [n["name"] for n in own["nodes"] if n["label"] == "Event"] != ["meeting 1 in Berlin"]
        await feed.aclose()
        await other.aclose()


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_revectorize_reports_its_progress(server: Served, protocol: str) -> None:
    async with Client(transport=transport(server, BOB, protocol)) as bob:
        steps = [r["revectorize"] async for r in bob.subscribe(REVECTORIZE)]
    assert steps[-1]["phase"] == "done" and steps[-1]["report"]["events"] >= 1
    assert {"embedding", "writing"} <= {s["phase"] for s in steps}


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_websockets_keep_the_token_and_scope_rules(server: Served, protocol: str) -> None:
    # no token: refused at connection_init
    with pytest.raises((TransportConnectionFailed, TransportServerError, TransportQueryError)):
        async with Client(transport=transport(server, None, protocol)) as anyone:
            await anext(anyone.subscribe(CHANGES))
    # a read token may follow the feed but not run revectorize: FORBIDDEN, not masked
    async with Client(transport=transport(server, ALICE_READ, protocol)) as reader:
        with pytest.raises(TransportQueryError) as refused:
            await anext(reader.subscribe(REVECTORIZE))
        error = refused.value.errors[0] if refused.value.errors else {}
        assert error["extensions"]["code"] == "FORBIDDEN", refused.value
        bad = gql("query($n: Int!) { events(first: $n) { totalCount } }")
        bad.variable_values = {"n": "abc"}
        with pytest.raises(TransportQueryError) as wrong:
            await reader.execute(bad)
        (error,) = wrong.value.errors or [{}]
        if protocol == WebsocketsTransport.APOLLO_SUBPROTOCOL:
            # the legacy protocol carries subscriptions only, and says so
            assert error["extensions"]["code"] == "OPERATION_NOT_SUPPORTED"
            assert "graphql-transport-ws" in error["message"]
        else:
            # a variable that does not fit keeps graphql-core's message
            assert "Int cannot represent non-integer value: 'abc'" in error["message"]
            assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "Traceback" not in server.output()


# ---------------------------------------------------------------- GraphQL over HTTP


def test_the_graphql_http_audit_finds_nothing(server: Served) -> None:
    node = need_js("graphql-http")
    run = subprocess.run(
        [node, str(JS / "audit.mjs"), server.graphql, ALICE],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    results = json.loads(run.stdout)
    assert len(results) > 50
    bad = [r for r in results if r["status"] in {"warn", "error"}]
    assert not bad, json.dumps(bad, indent=1)


# ---------------------------------------------------------------- Relay

# (type, field, parent record, the edges the test data gives it)
RELAY_CONNECTIONS = [
    ("Event", "participants", "event_1", 3),
    ("Event", "concepts", "event_1", 3),
    ("Event", "locations", "event_1", 1),
    ("Person", "events", "person_1", 3),
    ("Person", "attitudes", "person_1", 3),
    ("Concept", "events", "concept_1", 3),
    ("Concept", "attitudes", "concept_1", 3),
    ("Location", "events", "location_1", 3),
    ("Query", "events", "client:root", 3),
    ("Query", "persons", "client:root", 3),
    ("Query", "concepts", "client:root", 3),
    ("Query", "locations", "client:root", 1),
]


# Everything that puts node ids in other types: a cache that keys records by `id` must see
# each node's id only on the node itself (it warned 65 times on one such query before).
RELAY_EVERYTHING = """graphql`
  query PagesEverythingQuery {
    graph(includeTopics: true) {
      nodes { nodeId label name node { id __typename } }
      relationships { relationshipId type source target }
    }
    search(query: "relay meeting Berlin", resetSeen: true) {
      items {
        eventId summary quote { text } quoteRef { eventId event { id } }
        concepts { conceptId name concept { id name } }
        event { id summary participants(first: 5) { edges { node { id name } } } }
      }
      sharedConcepts { conceptId name concept { id } }
    }
    persons(first: 5) { edges { node { id name attitudes(first: 5) { edges { attitude node { id } } } } } }
    topics { nodes { id path } }
  }
`;
"""


def relay_source() -> str:
    """A fragment per connection and direction, each @refetchable and @connection-paged."""
    parts = [RELAY_EVERYTHING]
    for type_, field, _, _ in RELAY_CONNECTIONS:
        for way, args in (("Fwd", "first: $count, after: $cursor"), ("Bwd", "last: $count, before: $cursor")):
            name = f"{type_}{field.capitalize()}{way}"
            parts.append(
                f"graphql`\n  fragment Pages_{name[0].lower()}{name[1:]} on {type_}\n"
                f'  @refetchable(queryName: "Pages{name}Query")\n'
                '  @argumentDefinitions(count: {type: "Int", defaultValue: 1}, '
                'cursor: {type: "String"}) {\n'
                f'    {field}({args}) @connection(key: "Pages{name}_{field}") {{\n'
                "      edges { node { id } }\n    }\n  }\n`;\n"
            )
    return "\n".join(parts)


# The parents of RELAY_CONNECTIONS are the nodes of the first relay meeting: their ids are
# whatever the allocator hands out after the tests before (ids are never reused, so a forgotten
# event_1 is not the next event_1).
PARENTS: dict[str, str] = {}
SAVE_REFS = "mutation($input: SaveInput!) { save(input: $input) { refs { ref nodeId } } }"


@pytest.fixture(scope="module")
def relay_data(server: Served) -> dict[str, list[str]]:
    """Three meetings saved in space alice, and the ids each connection holds (paged at once)."""
    for n in range(3):
        saved = server.gql(
            SAVE_REFS, ALICE, input={"content": f"relay meeting {n}", "extraction": extraction(n)}
        )
        if n == 0:
            refs = {r["ref"]: r["nodeId"] for r in saved["save"]["refs"]}
            PARENTS.update({"event_1": refs["e"], "person_1": refs["p0"],
                            "concept_1": refs["c0"], "location_1": refs["l"]})  # fmt: skip
    truth: dict[str, list[str]] = {}
    for type_, field, symbolic, _ in RELAY_CONNECTIONS:
        parent = PARENTS.get(symbolic, symbolic)
        if type_ == "Query":
            q = f"{{ {field}(first: 50) {{ edges {{ node {{ id }} }} }} }}"
            conn = server.gql(q, ALICE)[field]
        else:
            q = f'{{ node(id: "{parent}") {{ ... on {type_} {{ {field}(first: 50) {{ edges {{ node {{ id }} }} }} }} }} }}'
            conn = server.gql(q, ALICE)["node"][field]
        truth[f"{type_}.{field}"] = [e["node"]["id"] for e in conn["edges"]]
    return truth


def test_relay_compiles_and_pages_every_connection_both_ways(
    server: Served, relay_data: dict[str, list[str]], tmp_path: Path
) -> None:
    node = need_js("relay-compiler", "relay-runtime")
    (tmp_path / "src").mkdir()
    (tmp_path / "__generated__").mkdir()
    (tmp_path / "src" / "Pages.js").write_text(relay_source(), encoding="utf-8")
    config = {
        "src": "./src",
        "schema": str(ROOT / "schema.graphql"),
        "language": "javascript",
        "artifactDirectory": "./__generated__",
    }
    (tmp_path / "relay.config.json").write_text(json.dumps(config), encoding="utf-8")
    compiler = JS / "node_modules" / ".bin" / "relay-compiler"
    built = subprocess.run(
        [str(compiler), "relay.config.json"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert built.returncode == 0, built.stdout + built.stderr
    plan = []
    for type_, field, symbolic, count in RELAY_CONNECTIONS:
        parent = PARENTS.get(symbolic, symbolic)
        assert len(relay_data[f"{type_}.{field}"]) == count, (type_, field, relay_data)
        for way, direction in (("Fwd", "forward"), ("Bwd", "backward")):
            name = f"{type_}{field.capitalize()}{way}"
            variables: dict[str, Any] = {"count": 1}
            if parent != "client:root":
                variables["id"] = parent
            plan.append(
                {
                    "artifact": str(tmp_path / "__generated__" / f"Pages{name}Query.graphql.js"),
                    "key": f"Pages{name}_{field}",
                    "parent": parent,
                    "variables": variables,
                    "direction": direction,
                    "truth": f"{type_}.{field}",
                }
            )
    plan.append(
        {
            "artifact": str(tmp_path / "__generated__" / "PagesEverythingQuery.graphql.js"),
            "key": "everything",
            "parent": "client:root",
            "variables": {},
            "direction": "once",
        }
    )
    (tmp_path / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    run = subprocess.run(
        [node, str(JS / "relay-run.mjs"), server.graphql, ALICE, str(tmp_path / "plan.json")],
        capture_output=True, text=True, timeout=300, cwd=JS,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["warnings"] == []
    for step, conn in zip(plan, report["connections"], strict=True):
        if step["direction"] == "once":
            continue
        truth = relay_data[step["truth"]]
        # one edge per page, merged by Relay's ConnectionHandler into the whole list, in order
        assert conn["edges"] == truth, (step["key"], conn)
        assert conn["pages"] == len(truth), (step["key"], conn)


async def test_a_client_offering_both_protocols_gets_graphql_transport_ws(server: Served) -> None:
    """gql offers the legacy protocol first; the server picks the one that also runs queries."""
    both = WebsocketsTransport(url=server.ws, init_payload={"Authorization": f"Bearer {ALICE_READ}"})
    async with Client(transport=both) as session:
        assert both.subprotocol == WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL
        data = await session.execute(gql("{ memoryIndex { counts { events } } }"))
    assert data["memoryIndex"]["counts"]["events"] >= 0
