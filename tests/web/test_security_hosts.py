"""DNS rebinding and foreign origins against a real ``mnemoql serve`` in open mode (no tokens,
loopback): issue #29 item 1. A page that rebinds its own name to 127.0.0.1 sends ``Host:
evil.example:P`` and ``Origin: http://evil.example:P``; it must not read or write the memory
over HTTP, the websocket or ``/mcp``, while loopback clients go on as before."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from websockets.exceptions import InvalidStatus

from tests.web.mcp_support import INIT
from tests.web.served import Served, mnemoql_command, served

SAVE = {"query": 'mutation { save(input: {content: "rebound"}) { eventIds } }'}
COUNT = {"query": "{ memoryIndex { counts { events } } }"}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
FRONTEND = "http://localhost:5173"  # a dev server's origin, listed in CORS for one service


@pytest.fixture(scope="module")
def open_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("open") / "data") as server:
        yield server


@pytest.fixture(scope="module")
def listed_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    env = {
        "MNEMOQL_HTTP__ALLOWED_HOSTS": "memory.example",
        "MNEMOQL_HTTP__CORS_ORIGINS": json.dumps([FRONTEND]),
    }
    with served(tmp_path_factory.mktemp("listed") / "data", env=env) as server:
        yield server


def rebound(server: Served) -> dict[str, str]:
    """The headers of the issue's reproduction: the attacker's name, on the service's port."""
    return {"Host": f"evil.example:{server.port}", "Origin": f"http://evil.example:{server.port}"}


def events(server: Served) -> int:
    count: int = server.gql(COUNT["query"])["memoryIndex"]["counts"]["events"]
    return count


def test_the_rebinding_reproduction_is_refused_over_http(open_service: Served) -> None:
    before = events(open_service)
    r = httpx.post(open_service.graphql, json=SAVE, headers=rebound(open_service))
    assert r.status_code == 421, r.text
    assert r.json()["errors"][0]["extensions"]["code"] == "HOST_NOT_ALLOWED"
    read = httpx.get(open_service.graphql, params=COUNT, headers=rebound(open_service))
    assert read.status_code == 421 and "counts" not in read.text
    assert events(open_service) == before  # nothing was written


def test_loopback_names_and_the_own_origin_pass(open_service: Served) -> None:
    before = events(open_service)
    port = open_service.port
    for host, origin in [
        (f"127.0.0.1:{port}", f"http://127.0.0.1:{port}"),  # a page of the service itself
        (f"localhost:{port}", None),
        (f"[::1]:{port}", None),
    ]:
        headers = {"Host": host, **({"Origin": origin} if origin else {})}
        r = httpx.post(open_service.graphql, json=SAVE, headers=headers)
        assert r.status_code == 200 and not r.json().get("errors"), (host, r.text)
    assert events(open_service) == before + 3


def test_a_foreign_origin_on_a_loopback_host_is_refused(open_service: Served) -> None:
    """A page of another local origin (another port) is not the service's own page."""
    r = httpx.post(open_service.graphql, json=SAVE, headers={"Origin": FRONTEND})
    assert r.status_code == 403
    assert r.json()["errors"][0]["extensions"]["code"] == "ORIGIN_NOT_ALLOWED"
    preflight = httpx.options(
        open_service.graphql,
        headers={"Origin": FRONTEND, "Access-Control-Request-Method": "POST"},
    )
    assert preflight.status_code == 403  # answered, not a 405
    assert "access-control-allow-origin" not in preflight.headers


async def _subscribe(server: Served, headers: dict[str, str]) -> dict[str, Any]:
    """connection_init, subscribe to memoryChanges; the first message after the ack. A
    ``Host`` in ``headers`` goes into the URL (one Host header), the socket to the server."""
    host = headers.pop("Host", f"127.0.0.1:{server.port}")
    async with websockets.connect(
        f"ws://{host}/graphql", host="127.0.0.1", port=server.port,
        subprotocols=[websockets.Subprotocol("graphql-transport-ws")],
        additional_headers=headers, open_timeout=30,
    ) as ws:  # fmt: skip
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        ack = json.loads(await asyncio.wait_for(ws.recv(), 30))
        assert ack["type"] == "connection_ack", ack
        query = "subscription { memoryChanges { kind } }"
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": query}}))
        first: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 30))
        return first


async def test_the_websocket_refuses_rebinding_and_foreign_origins(open_service: Served) -> None:
    for headers, status in [
        (rebound(open_service), 421),
        ({"Origin": FRONTEND}, 403),
    ]:
        with pytest.raises(InvalidStatus) as refused:
            await _subscribe(open_service, headers)
        assert refused.value.response.status_code == status
    # the service's own page (and a client that sends no Origin) subscribe as before
    own = {"Origin": open_service.url}
    first = await _subscribe(open_service, own)
    assert first["type"] == "next" and first["payload"]["data"]["memoryChanges"]["kind"] == "READY"
    assert (await _subscribe(open_service, {}))["type"] == "next"


def test_mcp_refuses_rebinding_with_the_same_rule(open_service: Served) -> None:
    url = f"{open_service.url}/mcp"
    r = httpx.post(url, json=INIT, headers={**MCP_ACCEPT, **rebound(open_service)})
    assert r.status_code == 421
    assert r.json()["error"]["message"].startswith("HOST_NOT_ALLOWED")
    foreign = httpx.post(url, json=INIT, headers={**MCP_ACCEPT, "Origin": FRONTEND})
    assert foreign.status_code == 403
    assert foreign.json()["error"]["message"].startswith("ORIGIN_NOT_ALLOWED")
    ok = httpx.post(url, json=INIT, headers={**MCP_ACCEPT, "Origin": open_service.url})
    assert ok.status_code == 200, ok.text
    assert "mcp-session-id" in ok.headers


def test_listed_hosts_and_origins_are_accepted(listed_service: Served) -> None:
    port = listed_service.port
    named = httpx.post(
        listed_service.graphql, json=COUNT, headers={"Host": f"memory.example:{port}"}
    )
    assert named.status_code == 200, named.text
    other = httpx.post(listed_service.graphql, json=COUNT, headers={"Host": "evil.example"})
    assert other.status_code == 421
    # the listed frontend: a preflight answered with CORS headers, then the request itself
    for path in ("/graphql", "/mcp"):
        preflight = httpx.options(
            f"{listed_service.url}{path}",
            headers={
                "Origin": FRONTEND,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type, mcp-session-id",
            },
        )
        assert preflight.status_code == 200, (path, preflight.text)
        assert preflight.headers["access-control-allow-origin"] == FRONTEND
        assert "mcp-session-id" in preflight.headers["access-control-allow-headers"].lower()
    r = httpx.post(listed_service.graphql, json=COUNT, headers={"Origin": FRONTEND})
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == FRONTEND
    mcp = httpx.post(
        f"{listed_service.url}/mcp", json=INIT, headers={**MCP_ACCEPT, "Origin": FRONTEND}
    )
    assert mcp.status_code == 200 and mcp.headers["access-control-allow-origin"] == FRONTEND
    assert "mcp-session-id" in mcp.headers["access-control-expose-headers"].lower()
    # an origin not listed stays refused
    elsewhere = httpx.post(
        listed_service.graphql, json=COUNT, headers={"Origin": "http://localhost:3000"}
    )
    assert elsewhere.status_code == 403


def test_serve_port_0_picks_a_free_port_and_prints_it(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MNEMOQL_")},
        "MNEMOQL_DATA_DIR": str(tmp_path / "data"),
        "MNEMOQL_EMBEDDING__PROVIDER": "hashing",
    }
    proc = subprocess.Popen(
        [str(mnemoql_command()), "serve", "--port", "0"],
        env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/graphql", line)
        assert found, line
        port = int(found.group(1))
        assert port not in (0, 8000)
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
        assert r.status_code == 200
    finally:
        proc.terminate()
        proc.wait(30)
