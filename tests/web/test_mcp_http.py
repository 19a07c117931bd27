"""``/mcp`` of a real ``mnemoql serve``: the SDK's streamable HTTP client, bearer tokens, spaces."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.web.mcp_support import (
    INIT,
    error_code,
    events,
    http_client,
    ok,
    record,
    serving,
    text,
    walk,
)

LEGACY, STATELESS = "legacy-token-0123456789", "stateless-token-0123456789"
WRITER_A, READER_A, WRITER_B = "writer-a-0123456789", "reader-a-0123456789", "writer-b-0123456789"
TOKENS = [
    {"token": LEGACY, "space": "legacy", "scopes": ["read", "write"]},
    {"token": STATELESS, "space": "stateless", "scopes": ["read", "write"]},
    {"token": WRITER_A, "space": "a", "scopes": ["read", "write"]},
    {"token": READER_A, "space": "a", "scopes": ["read"]},
    {"token": WRITER_B, "space": "b", "scopes": ["read", "write"]},
]
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(Path(tmp_path_factory.mktemp("mcp-http")), TOKENS) as url:
        yield url


async def test_an_mcp_session_is_an_evidence_session(service: str) -> None:
    # legacy: the initialize handshake and Mcp-Session-Id; no call names a session
    async with http_client(service, LEGACY, mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        await walk(client, stateless=False)


async def test_a_stateless_client_carries_the_session_it_was_given(service: str) -> None:
    # the SDK's default: protocol 2026-07-28, no protocol session at all
    async with http_client(service, STATELESS) as client:
        assert client.protocol_version == "2026-07-28"
        await walk(client, stateless=True)


async def test_a_stateless_client_gets_new_events_from_its_second_search(service: str) -> None:
    # issue 27 item 3: on main the second search repeated the same 4 events unless the agent
    # passed `session` back; the client's connection now stands for its session
    async with http_client(service, WRITER_A) as saver:
        for n in range(1, 9):
            ok(await saver.call_tool("memory_save", record(n, "wyvern", "wyv")))
    async with http_client(service, WRITER_A) as client:
        assert client.protocol_version == "2026-07-28"
        one = ok(await client.call_tool("memory_search", {"query": "wyvern"}))
        two = ok(await client.call_tool("memory_search", {"query": "wyvern"}))
        first = {i["event_id"] for i in one["items"]}
        assert len(first) == 4 and one["session"] == two["session"]
        assert two["items"] and not first & {i["event_id"] for i in two["items"]}
    async with http_client(service, WRITER_A) as other:  # another client: its own session
        again = ok(await other.call_tool("memory_search", {"query": "wyvern"}))
        assert {i["event_id"] for i in again["items"]} == first
        # a client that reconnects follows with the cursor: the next page, its session's
        more = ok(await other.call_tool("memory_search", {"cursor": again["cursor"]}))
        assert more["session"] == again["session"]
        assert more["items"] and not first & {i["event_id"] for i in more["items"]}


async def test_two_agents_never_hide_each_others_results(service: str) -> None:
    async with http_client(service, WRITER_A, mode="legacy") as saver:
        for n in range(1, 7):
            ok(await saver.call_tool("memory_save", record(n, "griffin")))
    async with (
        http_client(service, WRITER_A, mode="legacy") as one,
        http_client(service, WRITER_A, mode="legacy") as two,
    ):
        first = ok(await one.call_tool("memory_search", {"query": "griffin"}))
        other = ok(await two.call_tool("memory_search", {"query": "griffin"}))
        assert first["session"] != other["session"]
        assert first["items"] == other["items"]  # the same token, yet neither hid anything
        more = ok(await one.call_tool("memory_search", {"query": "griffin"}))
        assert not {i["event_id"] for i in more["items"]} & {i["event_id"] for i in first["items"]}


async def test_a_read_only_token_cannot_save_and_spaces_never_meet(service: str) -> None:
    async with http_client(service, WRITER_A) as writer:
        ok(await writer.call_tool("memory_save", record(1, "basilisk", "bestiary")))
        held = await events(writer)
    async with http_client(service, READER_A) as reader:
        refused = await reader.call_tool("memory_save", record(2, "basilisk", "bestiary"))
        assert error_code(refused) == "FORBIDDEN" and "'write' scope" in text(refused)
        forget = await reader.call_tool("memory_forget", {"event_id": "bestiary_ch1_e01"})
        assert error_code(forget) == "FORBIDDEN"
        found = ok(await reader.call_tool("memory_search", {"query": "basilisk"}))
        assert "bestiary_ch1_e01" in [i["event_id"] for i in found["items"]]
        assert await events(reader) == held
    async with http_client(service, WRITER_B) as b:
        assert await events(b) == 0
        assert ok(await b.call_tool("memory_search", {"query": "basilisk"}))["items"] == []
        assert error_code(await b.call_tool("memory_read", {"event_id": "bestiary_ch1_e01"})) == (
            "NOT_FOUND"
        )
        kraken = {"content": "Only space b knows the kraken.", "id": "kraken_note"}
        ok(await b.call_tool("memory_save", kraken))
    async with http_client(service, WRITER_A) as writer:
        seen = ok(await writer.call_tool("memory_search", {"query": "kraken"}))["items"]
        assert "kraken" not in " ".join(i["summary"] for i in seen)
        assert error_code(await writer.call_tool("memory_read", {"event_id": "kraken_note"})) == (
            "NOT_FOUND"
        )
        assert await events(writer) == held


async def test_a_bad_argument_gets_a_coded_error_and_writes_nothing(service: str) -> None:
    async with http_client(service, WRITER_B) as client:
        before = await events(client)
        bad = [
            ("memory_save", {"content": "x", "extraction": {"events": [{"ref": 1}]}}, "EXTRACTION_INVALID"),
            ("memory_save", {"content": "x", "topic": "work"}, "BAD_USER_INPUT"),
            ("memory_save", {"content": "x", "idempotency_key": "k" * 201}, "BAD_USER_INPUT"),
            ("memory_save", {"content": "x", "id": "event_999"}, "INVALID_ID"),
            ("memory_search", {"query": "x", "time_hint": "next century"}, "TIME_HINT_INVALID"),
            ("memory_search", {"query": "x", "target": "Location"}, "BAD_USER_INPUT"),
            ("memory_expand", {"cursor": "cur_0000000000000000", "concept_id": "concept_1"}, "CURSOR_INVALID"),
            ("memory_nearby", {"cursor": "cur_0", "event_id": "a_ch1_e1", "before": 11}, "OUT_OF_RANGE"),
            ("memory_read", {"event_id": "nope"}, "NOT_FOUND"),
            ("memory_forget", {}, "BAD_USER_INPUT"),
        ]  # fmt: skip
        for tool, arguments, code in bad:
            got = await client.call_tool(tool, arguments)
            assert error_code(got) == code, (tool, arguments, text(got))
            assert len(text(got)) > len(code) + 2  # the code, then how to fix it
        assert await events(client) == before
        with pytest.raises(MCPError):
            await client.call_tool("memory_delete_everything", {})


async def test_an_unknown_extraction_field_is_refused_as_graphql_refuses_it(service: str) -> None:
    # MCP's extraction model ignored unknown fields: a misspelled relation was dropped silently
    event = {"ref": "e1", "summary": "Alice met Bob"}
    cases = [
        ({"events": [{**event, "participant": [{"person": "p1"}]}]}, "events[0].participant"),
        ({"events": [event], "relations": [{"from": "e1"}]}, "relations"),
    ]
    save = "mutation($i: SaveInput!) { save(input: $i) { eventIds } }"
    async with (
        http_client(service, WRITER_B) as client,
        httpx.AsyncClient(base_url=service, timeout=60) as http,
    ):
        before = await events(client)
        for extraction, field in cases:
            args = {"content": "Alice met Bob.", "extraction": extraction}
            got = await client.call_tool("memory_save", args)
            r = await http.post(
                "/graphql",
                json={"query": save, "variables": {"i": args}},
                headers={"Authorization": f"Bearer {WRITER_B}"},
            )
            (error,) = r.json()["errors"]
            assert error["extensions"]["code"] == error_code(got) == "EXTRACTION_INVALID"
            assert text(got) == f"EXTRACTION_INVALID: {error['message']}"
            assert f"unknown field(s) {field}:" in error["message"]
        assert await events(client) == before


async def test_mcp_and_graphql_are_two_edges_of_one_memory(service: str) -> None:
    async with http_client(service, WRITER_A) as client:
        saved = ok(await client.call_tool("memory_save", {"content": "The phoenix rose at dawn."}))
    query = '{ search(query: "phoenix") { items { eventId } } }'
    async with httpx.AsyncClient(base_url=service, timeout=60) as http:
        r = await http.post(
            "/graphql", json={"query": query}, headers={"Authorization": f"Bearer {WRITER_A}"}
        )
    assert r.status_code == 200, r.text
    assert r.json()["data"]["search"]["items"][0]["eventId"] == saved["event_ids"][0]


async def test_tokens_guard_mcp_sessions_and_the_host_header(service: str) -> None:
    async with httpx.AsyncClient(base_url=service, timeout=60) as http:
        for headers in ({}, {"Authorization": "Bearer not-a-token-at-all"}):
            r = await http.post("/mcp", json=INIT, headers={**ACCEPT, **headers})
            assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
            assert r.json()["error"]["message"].startswith("UNAUTHENTICATED")
        opened = await http.post(
            "/mcp", json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {WRITER_A}"}
        )
        assert opened.status_code == 200, opened.text
        sid = opened.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        mine = {**ACCEPT, "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
        other = await http.post(
            "/mcp", json=listing, headers={**mine, "Authorization": f"Bearer {READER_A}"}
        )
        assert other.status_code == 404  # another token cannot continue the session
        same = await http.post(
            "/mcp", json=listing, headers={**mine, "Authorization": f"Bearer {WRITER_A}"}
        )
        assert same.status_code == 200 and "memory_search" in same.text
        rebound = await http.post(
            "/mcp",
            json=INIT,
            headers={**ACCEPT, "Authorization": f"Bearer {WRITER_A}", "Host": "evil.example"},
        )
        assert rebound.status_code in (403, 421)  # DNS rebinding: not a loopback name
