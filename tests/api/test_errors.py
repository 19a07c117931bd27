"""How errors leave the API: a client's mistake keeps graphql-core's message with a stable code
and no traceback in the log; only a true internal fault is masked (and logged once)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.api.conftest import Api

EVENTS = "query Page($n: Int!) { events(first: $n) { totalCount } }"
SAVE = "mutation Save($i: SaveInput!) { save(input: $i) { eventIds } }"


@pytest.mark.parametrize(
    ("query", "variables", "message"),
    [
        (
            EVENTS,
            {"n": "abc"},
            "Variable '$n' has invalid value: Int cannot represent non-integer value: 'abc'",
        ),
        (EVENTS, {}, "Variable '$n' has invalid value: Expected a value of non-null type 'Int!'"),
        (EVENTS, {"n": None}, "Variable '$n' has invalid value: Expected value of non-null type"),
        (
            SAVE,
            {"i": {"content": "x", "bogus": 1}},
            "Expected value of type 'SaveInput' not to include unknown field 'bogus'",
        ),
        (SAVE, {"i": {"time": "today"}}, "Expected value of type 'SaveInput' to include required field 'content'"),
    ],
)
async def test_a_variable_that_does_not_fit_keeps_its_message(
    api: Api, caplog: pytest.LogCaptureFixture, query: str, variables: dict[str, Any], message: str
) -> None:
    caplog.set_level(logging.DEBUG)
    body = await api.post(query, variables)
    (error,) = body["errors"]
    assert message in error["message"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert body["data"] is None
    # a client's mistake is not the service's fault: no traceback, nothing at ERROR
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_parse_and_validation_errors_have_their_codes(api: Api) -> None:
    err = await api.error("{ events(")
    assert err["message"].startswith("Syntax Error")
    assert err["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"
    err = await api.error('{ events(first: "abc") { totalCount } }')
    assert err["message"] == 'Int cannot represent non-integer value: "abc"'
    assert err["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    err = await api.error("{ nothingHere }")
    assert "Cannot query field 'nothingHere'" in err["message"]
    assert err["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"


async def test_several_operations_need_an_operation_name(api: Api) -> None:
    two = "query A { memoryIndex { model } } query B { memoryIndex { dimensions } }"
    err = await api.error(two)
    assert "operationName" in err["message"] and "A, B" in err["message"]
    assert err["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    r = await api.client.post("/graphql", json={"query": two, "operationName": "B"})
    assert set(r.json()["data"]["memoryIndex"]) == {"dimensions"}
    r = await api.client.post("/graphql", json={"query": two, "operationName": "C"})
    assert r.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"
    assert 'Unknown operation named "C"' in r.json()["errors"][0]["message"]


async def test_a_subscription_over_post_says_to_use_the_websocket(api: Api) -> None:
    err = await api.error("subscription { revectorize { phase } }")
    assert err["extensions"]["code"] == "WEBSOCKET_REQUIRED"
    assert "websocket" in err["message"] and "graphql-transport-ws" in err["message"]


async def test_an_internal_fault_is_masked_and_logged_once(
    api: Api, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = api.app.state.memory

    async def broken() -> None:
        raise RuntimeError("the secret internals of a bug")

    monkeypatch.setattr(memory, "index", broken)
    caplog.set_level(logging.DEBUG)
    body = await api.post("{ memoryIndex { model } }")
    (error,) = body["errors"]
    assert error["message"] == "Internal server error"
    assert error["extensions"] == {"code": "INTERNAL_SERVER_ERROR"}
    assert "secret" not in str(body)
    logged = [r for r in caplog.records if r.exc_info]
    assert len(logged) == 1 and "secret internals" in str(logged[0].exc_info[1])  # type: ignore[index]
