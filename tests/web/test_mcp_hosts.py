"""MCP hosts as they really connect: the TypeScript SDK's client (most desktop and IDE agents,
the MCP Inspector) and the Python SDK's, over stdio (``mnemoql mcp``) and streamable HTTP
(``/mcp`` of a real ``mnemoql serve``).

Both must see a coded tool error as a tool error (``isError``, the code first in the text):
the TypeScript client checks any structured content against the tool's output schema, also
on errors, and turned every coded error into ``-32602``. Successful results must still pass
that check, every bound the server enforces must be in the tool's input schema, and every tool
a text names must exist.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.web.mcp_support import (
    OFFLINE,
    ROOT,
    TOOLS,
    error_code,
    http_client,
    mnemoql,
    ok,
    record,
    serving,
    stdio_client,
    text,
)
from tests.web.served import JS, need_js

WRITER, READER = "host-writer-0123456789", "host-reader-0123456789"
TOKENS = [
    {"token": WRITER, "space": "hosts", "scopes": ["read", "write"]},
    {"token": READER, "space": "hosts", "scopes": ["read"]},
]

EVENT = {"ref": "e1", "summary": "x"}
# (tool, arguments, the stable code the caller must get)
FAILING: list[tuple[str, dict[str, Any], str]] = [
    ("memory_activate", {"lines": ["the dragon"], "limit": 21}, "OUT_OF_RANGE"),
    ("memory_activate", {"lines": ["the dragon"], "limit": 0}, "OUT_OF_RANGE"),
    ("memory_read", {"event_id": "no_such_event"}, "NOT_FOUND"),
    ("memory_read", {"event_id": "book_ch1_e01", "limit": 10001}, "OUT_OF_RANGE"),
    ("memory_expand", {"cursor": "cur_0000000000000000", "concept_id": "c"}, "CURSOR_INVALID"),
    ("memory_nearby", {"cursor": "cur_0", "event_id": "book_ch1_e01", "before": 11}, "OUT_OF_RANGE"),
    ("memory_search", {}, "BAD_USER_INPUT"),
    ("memory_search", {"query": "x", "time_hint": "next century"}, "TIME_HINT_INVALID"),
    ("memory_search", {"query": "q" * 2001}, "LIMIT_EXCEEDED"),
    ("memory_save", {"content": "x", "id": "event_999"}, "INVALID_ID"),
    # an unknown extraction field (misspelled in an event, or beside the events), as over GraphQL
    ("memory_save", {"content": "x", "extraction": {"events": [{**EVENT, "rol": "host"}]}}, "EXTRACTION_INVALID"),
    ("memory_save", {"content": "x", "extraction": {"events": [EVENT], "relations": []}}, "EXTRACTION_INVALID"),
    ("memory_recall", {}, "BAD_USER_INPUT"),
]
SUCCEEDING: list[tuple[str, dict[str, Any]]] = [
    *[("memory_save", {**record(n), "topic_path": "stories->dragons"}) for n in range(1, 7)],
    ("memory_search", {"query": "dragon village"}),
    ("memory_search", {"query": "dragon", "target": "Concept"}),
    ("memory_read", {"event_id": "book_ch1_e01", "start": 3, "limit": 20}),
    ("memory_topics", {}),
    ("memory_recall", {"topic_path": "stories->dragons"}),
    ("memory_activate", {"lines": ["tell me about the dragon and the village"], "limit": 20}),
]
# every range the server enforces, and where: (tool, argument, lowest, highest)
RANGES = [
    ("memory_activate", "limit", 1, 20),
    ("memory_expand", "limit", 1, 8),
    ("memory_nearby", "before", 0, 10),
    ("memory_nearby", "after", 0, 10),
    ("memory_read", "limit", 1, 10000),
]
LENGTHS = [  # (tool, argument, JSON schema keyword, the enforced bound)
    ("memory_search", "query", "maxLength", 2000),
    ("memory_search", "time_hint", "maxLength", 200),
    ("memory_save", "content", "maxLength", 2_000_000),
    ("memory_save", "idempotency_key", "maxLength", 200),
    ("memory_activate", "lines", "maxItems", 200),
    ("memory_activate", "lines", "minItems", 1),
    ("memory_read", "start", "minimum", 0),
]


def typescript_host(transport: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]) -> Any:
    """The TypeScript SDK's client (tests/web/js/mcp-run.mjs) through ``calls``."""
    node = need_js("@modelcontextprotocol/sdk")
    plan = {**transport, "calls": [{"name": n, "arguments": a} for n, a in calls]}
    run = subprocess.run(
        [node, str(JS / "mcp-run.mjs"), json.dumps(plan)],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def stdio_transport(data_dir: Path, *flags: str) -> dict[str, Any]:
    command, *args = mnemoql()
    env = {"MNEMOQL_DATA_DIR": str(data_dir), **OFFLINE}
    return {"transport": "stdio", "command": command, "args": [*args, "mcp", *flags],
            "env": env, "cwd": str(ROOT)}  # fmt: skip


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving(Path(tmp_path_factory.mktemp("mcp-hosts")), TOKENS) as url:
        yield url


def property_of(tools: list[dict[str, Any]], tool: str, argument: str) -> dict[str, Any]:
    schema = next(t["inputSchema"] for t in tools if t["name"] == tool)
    prop: dict[str, Any] = schema["properties"][argument]
    return prop


def tool_names_in(body: str) -> set[str]:
    """The tools a text tells the model to call: a ``[header]`` and the calls on ``next:``."""
    names = set(re.findall(r"^\[(\w+)\]", body, re.MULTILINE))
    for line in re.findall(r"^(?:next: |可继续：).*$", body, re.MULTILINE):
        names |= set(re.findall(r"(?<![\w.:-])(\w+)\(", line))
        names |= set(re.findall(r"(?<![\w.:-])(memory_\w+)", line))
    return names


def check_host(out: dict[str, Any], failing: list[tuple[str, dict[str, Any], str]]) -> None:
    """What the TypeScript client got: coded tool errors, and valid results."""
    assert {t["name"] for t in out["tools"]} == TOOLS
    results = out["results"]
    for (tool, arguments, code), got in zip(failing, results[len(SUCCEEDING) :], strict=True):
        assert "thrown" not in got, (tool, arguments, got)  # e.g. -32602: schema mismatch
        assert got["isError"] and got["structuredContent"] is None, (tool, got)
        assert got["text"].startswith(f"{code}: "), (tool, arguments, got["text"])
    for (tool, _), got in zip(SUCCEEDING, results, strict=False):
        assert "thrown" not in got, (tool, got)
        assert not got["isError"] and got["structuredContent"] is not None, (tool, got)
        assert tool_names_in(got["text"]) <= TOOLS, (tool, got["text"])


def test_the_typescript_sdk_gets_coded_errors_over_stdio(tmp_path: Path) -> None:
    out = typescript_host(stdio_transport(tmp_path), [*SUCCEEDING, *[(n, a) for n, a, _ in FAILING]])
    check_host(out, FAILING)
    reader = typescript_host(
        stdio_transport(tmp_path, "--read-only"), [("memory_forget", {"event_id": "book_ch1_e01"})]
    )
    refused = reader["results"][0]
    assert refused.get("isError") and refused["text"].startswith("FORBIDDEN: "), refused


def test_the_typescript_sdk_gets_coded_errors_over_http(service: str) -> None:
    http = {"transport": "http", "url": service + "/mcp", "token": WRITER}
    out = typescript_host(http, [*SUCCEEDING, *[(n, a) for n, a, _ in FAILING]])
    check_host(out, FAILING)
    reader = typescript_host({**http, "token": READER}, [("memory_save", record(9))])
    refused = reader["results"][0]
    assert refused.get("isError") and refused["text"].startswith("FORBIDDEN: "), refused


def test_every_enforced_bound_is_in_the_input_schema(tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [("memory_save", record(1))]
    for tool, argument, low, high in RANGES:
        base = {
            "memory_activate": {"lines": ["the dragon"]},
            "memory_expand": {"cursor": "cur_0", "concept_id": "c"},
            "memory_nearby": {"cursor": "cur_0", "event_id": "book_ch1_e01"},
            "memory_read": {"event_id": "book_ch1_e01"},
        }[tool]
        calls += [(tool, {**base, argument: low - 1}), (tool, {**base, argument: high + 1})]
    out = typescript_host(stdio_transport(tmp_path), calls)
    for n, (tool, argument, low, high) in enumerate(RANGES):
        prop = property_of(out["tools"], tool, argument)
        assert (prop.get("minimum"), prop.get("maximum")) == (low, high), (tool, argument, prop)
        for got in out["results"][1 + 2 * n : 3 + 2 * n]:  # the server refuses either side
            assert got["isError"] and got["text"].startswith("OUT_OF_RANGE: "), (tool, got)
    for tool, argument, keyword, bound in LENGTHS:
        prop = property_of(out["tools"], tool, argument)
        declared = prop.get(keyword, next((b.get(keyword) for b in prop.get("anyOf", [])), None))
        assert declared == bound, (tool, argument, keyword, prop)


async def test_the_python_sdk_gets_the_same_over_both_transports(
    tmp_path: Path, service: str
) -> None:
    for connect in (lambda: stdio_client(tmp_path), lambda: http_client(service, WRITER)):
        async with connect() as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            for tool, arguments in SUCCEEDING:
                got = await client.call_tool(tool, arguments)  # the SDK checks the output
                jsonschema.validate(ok(got), listed[tool].output_schema)
                assert tool_names_in(text(got)) <= TOOLS, text(got)
            for tool, arguments, code in FAILING:
                assert error_code(await client.call_tool(tool, arguments)) == code
