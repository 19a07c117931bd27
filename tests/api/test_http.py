"""GraphQL over HTTP: media types, statuses and JSON error bodies (the spec's, and what the
graphql-http audit in tests/web/test_clients.py checks against a real server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemoql.web.graphql_http import GRAPHQL_RESPONSE, negotiate
from tests.api.conftest import Api, offline_settings, running

GQL = {"accept": GRAPHQL_RESPONSE, "content-type": "application/json"}
OK = "{ memoryIndex { counts { events } } }"


@pytest.mark.parametrize(
    ("accept", "media"),
    [
        (None, "application/json"),
        ("*/*", "application/json"),
        ("application/json", "application/json"),
        (GRAPHQL_RESPONSE, GRAPHQL_RESPONSE),
        (f"{GRAPHQL_RESPONSE}, application/json;q=0.9", GRAPHQL_RESPONSE),
        (f"application/json, {GRAPHQL_RESPONSE};q=0.5", "application/json"),
        ("text/html", "application/json"),
    ],
)
def test_accept_picks_the_media_type(accept: str | None, media: str) -> None:
    assert negotiate(accept) == media


async def test_graphql_response_json_gives_request_errors_a_4xx_without_data(api: Api) -> None:
    for query, variables in [
        ("{ events(", {}),  # parse
        ("{ nothingHere }", {}),  # validation
        ("query($n: Int!) { events(first: $n) { totalCount } }", {"n": "abc"}),  # variables
    ]:
        r = await api.client.post(
            "/graphql", json={"query": query, "variables": variables}, headers=GQL
        )
        assert r.status_code == 400, r.text
        assert r.headers["content-type"] == f"{GRAPHQL_RESPONSE}; charset=utf-8"
        assert "data" not in r.json() and r.json()["errors"]
    # legacy application/json: the same error is a 200 with data null
    r = await api.client.post("/graphql", json={"query": "{ nothingHere }"})
    assert r.status_code == 200 and r.json()["data"] is None
    assert r.headers["content-type"] == "application/json; charset=utf-8"


async def test_an_execution_error_keeps_data_and_a_200(api: Api) -> None:
    r = await api.client.post(
        "/graphql", json={"query": '{ read(eventId: "event_404") { text } }'}, headers=GQL
    )
    assert r.status_code == 200
    body = r.json()
    assert body["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    assert "data" in body and body["errors"][0]["path"] == ["read"]
    r = await api.client.post("/graphql", json={"query": OK}, headers=GQL)
    assert r.status_code == 200 and r.json() == {"data": {"memoryIndex": {"counts": {"events": 0}}}}


async def test_a_mutation_over_get_is_a_405_and_queries_work(api: Api) -> None:
    r = await api.client.get(
        "/graphql",
        params={"query": 'mutation { forget(eventId: "x") { deletedIds } }'},
        headers={"accept": "application/json"},
    )
    assert r.status_code == 405 and r.headers["allow"] == "POST"
    assert r.json()["errors"][0]["extensions"]["code"] == "METHOD_NOT_ALLOWED"
    r = await api.client.get("/graphql", params={"query": OK}, headers={"accept": GRAPHQL_RESPONSE})
    assert r.status_code == 200 and r.json()["data"]["memoryIndex"]["counts"]["events"] == 0


@pytest.mark.parametrize(
    ("method", "kwargs", "status"),
    [
        ("PUT", {"json": {"query": OK}}, 405),
        ("POST", {"content": b"{not json", "headers": {"content-type": "application/json"}}, 400),
        ("POST", {"content": b"query=1", "headers": {"content-type": "text/plain"}}, 400),
        ("POST", {"json": {"variables": {}}}, 400),
        ("POST", {"json": {"query": OK, "operationName": 7}}, 400),
        ("POST", {"json": {"query": OK, "variables": [1]}}, 400),
    ],
)
async def test_transport_errors_have_json_bodies(
    api: Api, method: str, kwargs: dict[str, object], status: int
) -> None:
    r = await api.client.request(method, "/graphql", **kwargs)  # type: ignore[arg-type]
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    (error,) = r.json()["errors"]
    assert error["message"] and error["extensions"]["code"]


async def test_unknown_and_ambiguous_operations_are_request_errors(api: Api) -> None:
    two = "query A { memoryIndex { model } } query B { memoryIndex { model } }"
    for body in [{"query": two}, {"query": OK, "operationName": "Nope"}]:
        r = await api.client.post("/graphql", json=body, headers=GQL)
        assert r.status_code == 400, r.text
        assert "data" not in r.json()
        assert r.json()["errors"][0]["extensions"]["code"] in {
            "GRAPHQL_VALIDATION_FAILED",
            "BAD_REQUEST",
        }


async def test_a_subscription_over_http_is_a_request_error(api: Api) -> None:
    r = await api.client.post(
        "/graphql", json={"query": "subscription { revectorize { phase } }"}, headers=GQL
    )
    assert r.status_code == 400 and "data" not in r.json()
    assert r.json()["errors"][0]["extensions"]["code"] == "WEBSOCKET_REQUIRED"


async def test_a_refused_token_in_graphql_response_json_has_no_data(tmp_path: Path) -> None:
    token = "a-read-token-0123456789"
    grants = {"tokens": [{"token": token, "space": "alice", "scopes": ["read"]}]}
    async with running(offline_settings(tmp_path, auth=grants)) as secured:
        r = await secured.client.post("/graphql", json={"query": OK}, headers=GQL)
        assert r.status_code == 401 and "data" not in r.json()
        assert r.headers["content-type"] == f"{GRAPHQL_RESPONSE}; charset=utf-8"
        headers = {**GQL, "authorization": f"Bearer {token}"}
        r = await secured.client.post(
            "/graphql", json={"query": 'mutation { forget(eventId: "x") { deletedIds } }'},
            headers=headers,
        )
        assert r.status_code == 403 and "data" not in r.json()
        assert r.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"
