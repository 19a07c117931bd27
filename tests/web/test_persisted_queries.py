"""Automatic persisted queries (``web.persisted``): Apollo Client 4 with Apollo's own
persisted-query link against a real ``mnemoql serve``, over GET and POST, and the protocol's
edges by hand (a wrong hash, a bad version, a mutation by a hashed GET, the bounded store)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from strawberry.http import GraphQLRequestData

from mnemoql.web.persisted import PersistedQueries, PersistedQueryRefused, sha256_hex
from tests.web.served import ALICE, ALICE_READ, JS, TOKENS, Served, need_js, served

READ = "query Read($id: ID!) { read(eventId: $id, limit: 9) { eventId text total } }"
COUNT = "query Count { memoryIndex { counts { events } } }"
SAVE = "mutation Save($input: SaveInput!) { save(input: $input) { eventIds } }"
GRAPHQL_RESPONSE = {"accept": "application/graphql-response+json", "authorization": f"Bearer {ALICE}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("apq") / "data", tokens=TOKENS) as s:
        yield s


def apollo(server: Served, *clients: list[dict[str, Any]], get: bool, token: str = ALICE) -> Any:
    node = need_js("@apollo/client")
    plan = {"url": server.graphql, "token": token, "get": get, "clients": list(clients)}
    run = subprocess.run(
        [node, str(JS / "apollo-apq.mjs"), json.dumps(plan)],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def flow(requests: list[dict[str, Any]]) -> list[tuple[str, bool, bool]]:
    return [(r["method"], r["hashed"], r["withQuery"]) for r in requests]


@pytest.mark.parametrize("get", [True, False], ids=["GET", "POST"])
def test_apollos_link_registers_once_then_sends_the_hash_only(server: Served, get: bool) -> None:
    way = "Get" if get else "Post"  # documents of their own: each test starts unregistered
    event = f"apq_{way}"
    save = {"query": SAVE.replace("Save", f"Save{way}", 1), "mutation": True,
            "variables": {"input": {"content": "Persisted queries save bytes.", "id": event}}}  # fmt: skip
    read = {"query": READ.replace("Read", f"Read{way}", 1), "variables": {"id": event}}
    first = apollo(server, [save, read, read], get=get)
    assert first["results"][0] == [
        {"data": {"save": {"__typename": "SavePayload", "eventIds": [event]}}},
        {"data": {"read": {"__typename": "TextRange", "eventId": event, "text": "Persisted",
                           "total": 29}}},
        {"data": {"read": {"__typename": "TextRange", "eventId": event, "text": "Persisted",
                           "total": 29}}},
    ]  # fmt: skip
    method = "GET" if get else "POST"
    assert flow(first["requests"]) == [
        ("POST", True, False),  # the mutation's hash (a mutation never goes by GET) ...
        ("POST", True, True),  # ... unknown: registered with its text
        (method, True, False),  # the query's hash, unknown ...
        ("POST", True, True),  # ... registered
        (method, True, False),  # known now: the hash alone
    ]
    assert [r["status"] for r in first["requests"]] == [400, 200, 400, 200, 200]
    # a fresh client (a new page load) of another caller: the hash alone from the start
    again = apollo(server, [read], get=get, token=ALICE_READ)
    assert again["results"] == [[first["results"][0][1]]]
    assert flow(again["requests"]) == [(method, True, False)]


def test_a_miss_is_what_apollo_expects_in_either_media_type(server: Served) -> None:
    extensions = {"persistedQuery": {"version": 1, "sha256Hash": sha256_hex(COUNT + " ")}}
    for accept, status in (("application/graphql-response+json", 400), ("application/json", 200)):
        r = httpx.get(
            server.graphql,
            params={"extensions": json.dumps(extensions)},
            headers={**GRAPHQL_RESPONSE, "accept": accept},
        )
        assert r.status_code == status, r.text
        assert r.headers["cache-control"] == "no-store"  # a CDN must not keep the miss
        (error,) = r.json()["errors"]
        assert error["message"] == "PersistedQueryNotFound"
        assert error["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"


def test_a_hash_must_be_the_querys_own(server: Served) -> None:
    wrong = {"persistedQuery": {"version": 1, "sha256Hash": sha256_hex("{ __typename }")}}
    r = httpx.post(server.graphql, json={"query": COUNT, "extensions": wrong}, headers=GRAPHQL_RESPONSE)
    assert r.status_code == 400 and r.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert "SHA-256 of the query text" in r.json()["errors"][0]["message"]
    # nothing was registered under the wrong hash
    alone = httpx.post(server.graphql, json={"extensions": wrong}, headers=GRAPHQL_RESPONSE)
    assert alone.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    for bad in ({"version": 2, "sha256Hash": sha256_hex(COUNT)}, {"version": 1, "sha256Hash": "x"}, "v1"):
        r = httpx.post(server.graphql, json={"query": COUNT, "extensions": {"persistedQuery": bad}},
                       headers=GRAPHQL_RESPONSE)  # fmt: skip
        assert r.status_code == 400 and r.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"


def test_a_registered_mutation_still_needs_post(server: Served) -> None:
    text = 'mutation { forget(eventId: "apq_none") { deletedIds } }'
    hashed = {"persistedQuery": {"version": 1, "sha256Hash": sha256_hex(text)}}
    httpx.post(server.graphql, json={"query": text, "extensions": hashed}, headers=GRAPHQL_RESPONSE)
    r = httpx.get(server.graphql, params={"extensions": json.dumps(hashed)}, headers=GRAPHQL_RESPONSE)
    assert r.status_code in (400, 405), r.text  # registered or not, never run by GET
    assert r.json()["errors"][0]["extensions"]["code"] in ("METHOD_NOT_ALLOWED", "PERSISTED_QUERY_NOT_FOUND")


def request(query: str | None, digest: str) -> GraphQLRequestData:
    extensions = {"persistedQuery": {"version": 1, "sha256Hash": digest}}
    return GraphQLRequestData(query=query, variables=None, operation_name=None, extensions=extensions)


def test_the_store_is_bounded_by_documents_and_characters() -> None:
    store = PersistedQueries(max_documents=3, max_chars=100)
    texts = [f"query Q{n} {{ __typename }}" for n in range(5)]
    for text in texts:
        data, digest = store.resolve(request(text, sha256_hex(text)))
        assert digest == sha256_hex(text) and data.query == text
        store.register(digest, text)
    assert len(store) == 3 and store.chars == sum(len(t) for t in texts[2:])
    with pytest.raises(PersistedQueryRefused) as miss:
        store.resolve(request(None, sha256_hex(texts[0])))  # the oldest went first
    assert miss.value.error.extensions == {"code": "PERSISTED_QUERY_NOT_FOUND"}
    assert store.resolve(request(None, sha256_hex(texts[4])))[0].query == texts[4]
    store.register(sha256_hex("x" * 101), "x" * 101)  # larger than the whole store: not kept
    assert len(store) == 3 and store.chars <= 100
    store.register(sha256_hex("y" * 60), "y" * 60)
    assert store.chars <= 100 and store.resolve(request(None, sha256_hex("y" * 60)))[0].query


def test_what_ran_is_kept_even_with_a_field_error_and_what_did_not_validate_is_not(
    server: Served,
) -> None:
    def send(query: str | None, digest: str) -> dict[str, Any]:
        body: dict[str, Any] = {"extensions": {"persistedQuery": {"version": 1, "sha256Hash": digest}}}
        if query is not None:
            body["query"] = query
        return httpx.post(server.graphql, json=body, headers=GRAPHQL_RESPONSE).json()

    missing = '{ read(eventId: "apq_missing") { text } }'  # runs: a field error, no data
    assert send(missing, sha256_hex(missing))["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    assert send(None, sha256_hex(missing))["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    invalid = "{ noSuchField }"
    assert send(invalid, sha256_hex(invalid))["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert send(None, sha256_hex(invalid))["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
