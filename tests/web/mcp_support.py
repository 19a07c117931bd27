"""What the MCP tests share: the SDK's own clients for a ``mnemoql mcp`` subprocess (stdio) and
for ``/mcp`` of a ``mnemoql serve`` subprocess, a seeded book of positional records, and small
readers for tool results."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

ROOT = Path(__file__).resolve().parents[2]
OFFLINE = {
    "MNEMOQL_EMBEDDING__PROVIDER": "hashing",
    "MNEMOQL_LIMITS__QUERY_TIMEOUT_S": "60",
    # the SDKs start a stdio server with a bare environment: keep the code under test
    # (a worktree's, by PYTHONPATH) rather than the installed package's
    **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
}
INIT = {  # a raw initialize request (protocol 2025-11-25)
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
TOOLS = {
    "memory_save",
    "memory_search",
    "memory_expand",
    "memory_nearby",
    "memory_read",
    "memory_forget",
    "memory_topics",
    "memory_recall",
    "memory_activate",
}


def mnemoql() -> list[str]:
    """The installed ``mnemoql`` command (what a desktop agent runs), else the module."""
    script = Path(sys.executable).parent / "mnemoql"
    return [str(script)] if script.exists() else [sys.executable, "-m", "mnemoql.web.cli"]


def stdio_client(
    data_dir: Path, *flags: str, mode: str = "auto", env: dict[str, str] | None = None
) -> Client:
    """The SDK client over a fresh ``mnemoql mcp`` subprocess on ``data_dir``."""
    command, *args = mnemoql()
    params = StdioServerParameters(
        command=command,
        args=[*args, "mcp", *flags],
        env={"MNEMOQL_DATA_DIR": str(data_dir), **OFFLINE, **(env or {})},
        cwd=str(ROOT),
    )
    return Client(params, mode=mode)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def serving(data_dir: Path, tokens: list[dict[str, Any]] | None = None) -> Iterator[str]:
    """A real ``mnemoql serve`` on a free loopback port; yields its base URL."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOQL_")}
    env.pop("DEEPSEEK_API_KEY", None)
    env.update(OFFLINE, MNEMOQL_DATA_DIR=str(data_dir), MNEMOQL_PORT=str(port))
    if tokens:
        env["MNEMOQL_AUTH__TOKENS"] = json.dumps(tokens)
    proc = subprocess.Popen(
        [*mnemoql(), "serve", "--log-level", "warning"], cwd=ROOT, env=env, stdin=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, "mnemoql serve exited during start-up"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, "mnemoql serve was not ready within 60 s"
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@contextlib.asynccontextmanager
async def http_client(url: str, token: str | None, mode: str = "auto") -> AsyncIterator[Client]:
    """The SDK client over ``url``/mcp with a bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(url + "/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


def text(result: CallToolResult) -> str:
    block = result.content[0]
    assert block.type == "text"
    return block.text


def ok(result: CallToolResult) -> dict[str, Any]:
    """The structured content of a call that must succeed."""
    assert not result.is_error, text(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def error_code(result: CallToolResult) -> str:
    """The stable code of a call that must fail: the text starts with it. An error carries no
    structured content (clients check that against the tool's output schema)."""
    assert result.is_error, text(result)
    assert result.structured_content is None, result.structured_content
    code, sep, _ = text(result).partition(": ")
    assert sep and re.fullmatch(r"[A-Z][A-Z_]+", code), text(result)
    return code


def record(n: int, word: str = "dragon", book: str = "book") -> dict[str, Any]:
    """memory_save arguments of <book>_ch1_eNN: every record mentions the ``word`` (a shared
    concept, for expand); their ids carry their position (for nearby)."""
    return {
        "content": f"Chapter one, record {n}: the {word} flew over the village number {n}. "
        + f"filler {n} " * 20,
        "id": f"{book}_ch1_e{n:02d}",
        "idempotency_key": f"{book}-{n}",
        "extraction": {
            "events": [{"ref": "e", "summary": f"The {word} flies, record {n}", "concepts": ["c"]}],
            "concepts": [{"ref": "c", "name": word}],
        },
    }


async def events(client: Client) -> int:
    """How many events the caller's space holds (the memory-index resource)."""
    read = await client.read_resource("mnemoql://memory-index")
    block = read.contents[0]
    assert block.mime_type == "application/json"
    count: int = json.loads(block.text)["counts"]["events"]  # type: ignore[union-attr]
    return count


async def walk(client: Client, *, stateless: bool, records: int = 12) -> None:
    """The whole "Done when" walk over one client: list the tools, save, search, expand and
    nearby through the cursor, read a range, a second search with new evidence, forget.

    With a connection that keeps a session (stdio, an MCP session over HTTP) no call names
    one; a ``stateless`` client passes back the session its first search named (expand and
    nearby then go by their cursor alone)."""
    listed = (await client.list_tools()).tools
    assert {t.name for t in listed} == TOOLS
    for tool in listed:
        assert tool.description and tool.input_schema["type"] == "object"
        assert tool.output_schema is not None
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    for n in range(1, records + 1):
        saved = ok(await client.call_tool("memory_save", record(n)))
        assert saved["event_ids"] == [f"book_ch1_e{n:02d}"] and not saved["replayed"]
    again = ok(await client.call_tool("memory_save", record(1)))  # the same idempotency key
    assert again["replayed"] and again["event_ids"] == ["book_ch1_e01"]
    assert await events(client) == records

    first = await client.call_tool("memory_search", {"query": "dragon village"})
    page = ok(first)
    items = [i["event_id"] for i in page["items"]]
    assert len(items) == 4 and page["cursor"] and page["chain_count"] == 4
    assert text(first).startswith("[memory_search] operation=search target=Event")
    assert f"cursor={page['cursor']}" in text(first)
    concept = page["expand_concepts"][0]
    session = page["session"]
    assert (f"session={session}" in text(first)) == stateless
    follow = {"session": session} if stateless else {}

    delivered = set(items)

    def undelivered_around(anchor: str) -> set[str]:
        near = {int(anchor[-2:]) + d for d in (-2, -1, 1, 2)}
        return {f"book_ch1_e{n:02d}" for n in near if 1 <= n <= records} - delivered

    # an anchor with a record within two that this session has not had yet
    anchor = next(a for a in page["nearby_events"] if undelivered_around(a))
    near = ok(
        await client.call_tool(
            "memory_nearby",
            {"cursor": page["cursor"], "event_id": anchor, "before": 2, "after": 2},
        )
    )
    around = [i["event_id"] for i in near["items"]]
    assert around and set(around) == undelivered_around(anchor)
    assert around == sorted(around)  # record order
    assert near["operation"] == "nearby" and near["chain_count"] == 4 + len(around)

    expanded = ok(
        await client.call_tool(
            "memory_expand", {"cursor": page["cursor"], "concept_id": concept, "limit": 2}
        )
    )
    got = [i["event_id"] for i in expanded["items"]]
    assert len(got) == 2 and not set(got) & set(items + around)
    assert expanded["operation"] == "expand" and expanded["chain_count"] == 6

    read = ok(
        await client.call_tool("memory_read", {"event_id": items[0], "start": 5, "limit": 30})
    )
    full = ok(await client.call_tool("memory_read", {"event_id": items[0], "limit": 10000}))
    assert read["text"] == full["text"][5:35] and (read["start"], read["end"]) == (5, 35)
    assert read["next"] == 35 and full["next"] is None

    second = ok(await client.call_tool("memory_search", {"query": "dragon village", **follow}))
    fresh = [i["event_id"] for i in second["items"]]
    assert fresh and not set(fresh) & set(items + got + around)
    assert second["excluded_count"] == len(items + got + around)

    reset = {"query": "dragon village", "reset_seen": True, **follow}
    afresh = ok(await client.call_tool("memory_search", reset))
    assert [i["event_id"] for i in afresh["items"]] == items and afresh["excluded_count"] == 0
    assert afresh["session"] == session

    gone = ok(await client.call_tool("memory_forget", {"event_id": items[0]}))
    assert items[0] in gone["deleted_ids"]
    missing = await client.call_tool("memory_read", {"event_id": items[0]})
    assert error_code(missing) == "NOT_FOUND"
    assert await events(client) == records - 1
