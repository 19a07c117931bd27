"""Fair limits per client against a real ``mnemoql serve`` (issue #29 items 6 and 7): refused
requests, busy time and requests in flight are counted per token (else per address) and answered
429 ``RATE_LIMITED`` with ``Retry-After``; websocket operations are capped per token; a body must
arrive in time, and a client leaving mid-body is one INFO line. Each service is started with tiny
limits so the tests count requests, never time them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from tests.web.served import ALICE, BOB, TOKENS, Served, served

COUNT = {"query": "{ memoryIndex { counts { events } } }"}


def start(tmp_path: Path, **env: str) -> contextlib.AbstractContextManager[Served]:
    return served(tmp_path / "data", tokens=TOKENS, env=env)


def post(server: Served, token: str | None, body: dict[str, Any] = COUNT) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.post(server.graphql, json=body, headers=headers, timeout=60)


def rate_limited(r: httpx.Response) -> bool:
    if r.status_code != 429:
        return False
    assert int(r.headers["retry-after"]) >= 1
    assert r.json()["errors"][0]["extensions"]["code"] == "RATE_LIMITED"
    return True


@pytest.fixture
def strict_refusals(tmp_path: Path) -> Iterator[Served]:
    with start(
        tmp_path, MNEMOQL_HTTP__REFUSALS_BURST="3", MNEMOQL_HTTP__REFUSALS_PER_S="0.01"
    ) as s:
        yield s


def test_bad_tokens_are_rate_limited_and_other_clients_are_not(strict_refusals: Served) -> None:
    answers = [post(strict_refusals, "not-a-token-0123456789").status_code for _ in range(3)]
    assert answers == [401, 401, 401]
    flood = post(strict_refusals, "another-bad-token-012345")  # a new token each time: same address
    assert rate_limited(flood), flood.text
    assert "MNEMOQL_HTTP__REFUSALS_BURST" in flood.json()["errors"][0]["message"]
    # a valid token is its own client, though it comes from the same address
    ok = post(strict_refusals, ALICE)
    assert ok.status_code == 200 and not ok.json().get("errors"), ok.text
    # refused GraphQL requests count too: a search over the size cap, for Bob
    big = {"query": 'query($q: String!) { search(query: $q) { items { eventId } } }',
           "variables": {"q": "x" * 5000}}  # fmt: skip
    codes = [post(strict_refusals, BOB, big).json()["errors"][0]["extensions"]["code"]
             for _ in range(3)]  # fmt: skip
    assert codes == ["LIMIT_EXCEEDED"] * 3
    assert rate_limited(post(strict_refusals, BOB))
    assert post(strict_refusals, ALICE).status_code == 200


def test_a_client_past_its_busy_time_waits_and_others_do_not(tmp_path: Path) -> None:
    with start(
        tmp_path, MNEMOQL_HTTP__BUSY_BURST_S="0", MNEMOQL_HTTP__BUSY_PER_S="0.001"
    ) as server:
        assert post(server, ALICE).status_code == 200  # a budget of 0 s: the first one spends it
        limited = post(server, ALICE)
        assert rate_limited(limited), limited.text
        assert "MNEMOQL_HTTP__BUSY_PER_S" in limited.json()["errors"][0]["message"]
        assert post(server, BOB).status_code == 200


def _partial_post(
    port: int, token: str, declared: int, sent: bytes, path: str = "/graphql"
) -> socket.socket:
    """A POST to ``path`` that announces ``declared`` bytes and sends only ``sent``."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {declared}\r\n\r\n"
    )
    sock.sendall(head.encode() + sent)
    return sock


def _read_response(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_requests_in_flight_are_capped_per_client(tmp_path: Path) -> None:
    with start(tmp_path, MNEMOQL_HTTP__MAX_REQUESTS_PER_CLIENT="1") as server:
        body = json.dumps(COUNT).encode()
        held = _partial_post(server.port, ALICE, len(body), body[:5])  # in flight until sent
        try:
            second = post(server, ALICE)
            assert rate_limited(second), second.text
            assert "MNEMOQL_HTTP__MAX_REQUESTS_PER_CLIENT" in second.text
            assert post(server, BOB).status_code == 200
            held.sendall(body[5:])
            first = _read_response_head(held)
            assert first.startswith(b"HTTP/1.1 200"), first
        finally:
            held.close()
        assert post(server, ALICE).status_code == 200  # its slot was given back


def _read_response_head(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_a_stalled_body_times_out_and_a_vanished_client_is_one_info_line(tmp_path: Path) -> None:
    with start(tmp_path, MNEMOQL_LIMITS__BODY_TIMEOUT_S="1") as server:
        stalled = _partial_post(server.port, ALICE, 1000, b'{"query": "')
        try:
            answer = _read_response(stalled)  # the server answers, then closes
        finally:
            stalled.close()
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b"REQUEST_TIMEOUT" in answer
        gone = _partial_post(server.port, ALICE, 100_000, b'{"query": "' + b"x" * 1000)
        gone.close()
        gone = _partial_post(server.port, ALICE, 100_000, b'{"jsonrpc": "2.0"', path="/mcp")
        gone.close()
        assert post(server, ALICE).status_code == 200  # the service goes on
        server.stop()
        log = server.log.read_text(encoding="utf-8", errors="replace")
        assert log.count("disconnected before sending its whole request body") == 2, log
        assert "Traceback" not in log and "ClientDisconnect" not in log, log
        assert "ERROR" not in log, log


async def _subscriptions(server: Served, token: str, count: int) -> list[dict[str, Any]]:
    """``count`` memoryChanges subscriptions on one socket: the first message of each."""
    async with websockets.connect(
        server.ws, subprotocols=[websockets.Subprotocol("graphql-transport-ws")], open_timeout=30
    ) as ws:
        await ws.send(json.dumps({"type": "connection_init", "payload": {"token": token}}))
        assert json.loads(await asyncio.wait_for(ws.recv(), 30))["type"] == "connection_ack"
        query = "subscription { memoryChanges { kind } }"
        for n in range(count):
            message = {"id": str(n), "type": "subscribe", "payload": {"query": query}}
            await ws.send(json.dumps(message))
        firsts: dict[str, dict[str, Any]] = {}
        while len(firsts) < count:
            message = json.loads(await asyncio.wait_for(ws.recv(), 30))
            firsts.setdefault(message["id"], message)
        return [firsts[str(n)] for n in range(count)]


async def test_subscriptions_are_capped_per_token(tmp_path: Path) -> None:
    with start(tmp_path, MNEMOQL_HTTP__MAX_SUBSCRIPTIONS_PER_CLIENT="2") as server:
        firsts = await _subscriptions(server, ALICE, 3)
        kinds = sorted(m["type"] for m in firsts)
        assert kinds == ["error", "next", "next"], firsts
        error = next(m for m in firsts if m["type"] == "error")
        assert error["payload"][0]["extensions"]["code"] == "RATE_LIMITED"
        # another token has slots of its own; the closed socket gave Alice's back
        assert [m["type"] for m in await _subscriptions(server, BOB, 2)] == ["next", "next"]
        assert [m["type"] for m in await _subscriptions(server, ALICE, 2)] == ["next", "next"]
