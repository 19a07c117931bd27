"""``mnemoql mcp``: the SDK's stdio client drives a real subprocess, as a desktop agent does."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.fake_model_server import FakeModelServer
from tests.web.mcp_support import (
    INIT,
    OFFLINE,
    ROOT,
    error_code,
    events,
    mnemoql,
    ok,
    record,
    stdio_client,
    text,
    walk,
)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_agent_saves_searches_follows_reads_and_forgets(tmp_path: Path, mode: str) -> None:
    # auto: the SDK's default, protocol 2026-07-28; legacy: the initialize handshake
    async with stdio_client(tmp_path, mode=mode) as client:
        await walk(client, stateless=False)


async def test_spaces_read_only_and_bad_arguments(tmp_path: Path) -> None:
    async with stdio_client(tmp_path, "--space", "a", "--locale", "en") as a:
        ok(await a.call_tool("memory_save", record(1)))
        bad_extraction = {**record(2), "extraction": {"events": "not a list"}}
        assert error_code(await a.call_tool("memory_save", bad_extraction)) == "EXTRACTION_INVALID"
        typo = await a.call_tool("memory_save", {"contnt": "a typo"})
        assert error_code(typo) == "BAD_USER_INPUT" and "contnt" in text(typo)
        assert error_code(await a.call_tool("memory_save", {"content": "   "})) == "BAD_USER_INPUT"
        wrong_type = await a.call_tool("memory_read", {"event_id": "book_ch1_e01", "limit": "x"})
        assert error_code(wrong_type) == "BAD_USER_INPUT"
        too_long = await a.call_tool("memory_read", {"event_id": "book_ch1_e01", "limit": 10001})
        assert error_code(too_long) == "OUT_OF_RANGE"
        assert "limit must be between 1 and 10000" in text(too_long)
        page = ok(await a.call_tool("memory_search", {"query": "dragon"}))
        misuse = {"cursor": page["cursor"], "concept_id": "concept_1", "reset_seen": True}
        assert error_code(await a.call_tool("memory_expand", misuse)) == "RESET_SEEN_SEARCH_ONLY"
        assert error_code(await a.call_tool("memory_search", {})) == "BAD_USER_INPUT"
        assert await events(a) == 1  # nothing of the failed calls was written
    async with stdio_client(tmp_path, "--space", "b") as b:
        assert await events(b) == 0
        empty = ok(await b.call_tool("memory_search", {"query": "dragon"}))
        assert empty["items"] == []
        assert error_code(await b.call_tool("memory_read", {"event_id": "book_ch1_e01"})) == (
            "NOT_FOUND"
        )
    async with stdio_client(tmp_path, "--space", "a", "--read-only") as reader:
        refused = await reader.call_tool("memory_save", record(3))
        assert error_code(refused) == "FORBIDDEN" and "'write' scope" in text(refused)
        assert error_code(await reader.call_tool("memory_forget", {"event_id": "book_ch1_e01"})) == (
            "FORBIDDEN"
        )
        found = ok(await reader.call_tool("memory_search", {"query": "dragon"}))
        assert [i["event_id"] for i in found["items"]] == ["book_ch1_e01"]
        assert await events(reader) == 1


async def test_topics_recall_and_activation_with_resources(tmp_path: Path) -> None:
    async with stdio_client(tmp_path, "--locale", "en") as client:
        for n, topic in ((1, "travel->berlin"), (2, "travel->paris")):
            saved = ok(await client.call_tool("memory_save", {**record(n), "topic_path": topic}))
            assert saved["topic_path"] == topic and saved["topic_source"] == "client"
        tree = await client.call_tool("memory_topics", {})
        paths = [t["path"] for t in ok(tree)["topics"]]
        assert paths == ["travel", "travel->berlin", "travel->paris"]
        assert "travel [root]" in text(tree) and "travel->berlin {slices: 1}" in text(tree)
        resource = (await client.read_resource("mnemoql://topics")).contents[0]
        assert resource.text == text(tree)  # type: ignore[union-attr]
        recalled = await client.call_tool("memory_recall", {"topic_path": "travel->berlin"})
        memories = ok(recalled)["memories"]
        assert memories[0]["event_id"] == "book_ch1_e01" and memories[0]["source"] == "PRIMARY"
        assert text(recalled).startswith("[memory_recall] topic=travel->berlin")
        day = memories[0]["create_time"][:10]
        by_date = ok(await client.call_tool("memory_recall", {"date": day}))
        assert [m["event_id"] for m in by_date["memories"]] == ["book_ch1_e01", "book_ch1_e02"]
        both = await client.call_tool("memory_recall", {"topic_path": "travel", "date": day})
        assert error_code(both) == "BAD_USER_INPUT"
        lines = ["We talked about travel->paris yesterday.", "The dragon flew over it."]
        active = await client.call_tool("memory_activate", {"lines": lines})
        got = ok(active)
        assert any(m["event_id"] == "book_ch1_e02" for m in got["memories"])
        assert text(active).startswith("[memory_activate] cues:")
        assert got["block"] is None
        args = {"lines": lines, "limit": 1, "projection": "abstract"}
        block = ok(await client.call_tool("memory_activate", args))
        (only,) = block["memories"]
        assert block["projection"] == "abstract" and block["block"] == (
            '<activated_memory_slices source="memory_selector" urgency="normal">\n'
            f'  <memory_slice slice_id="{only["event_id"]}" unit_id="default">\n'
            f"    <summary>{only['summary']}</summary>\n"
            "  </memory_slice>\n</activated_memory_slices>"
        )
        too_many = await client.call_tool("memory_activate", {"lines": lines, "limit": 21})
        assert error_code(too_many) == "OUT_OF_RANGE"


def test_stdout_carries_only_the_protocol(tmp_path: Path) -> None:
    """A raw JSON-RPC exchange: every stdout line is a protocol message, logs go to stderr."""
    calls = [
        INIT,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "memory_save", "arguments": record(1)}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "memory_search", "arguments": {"query": "dragon"}}},
    ]  # fmt: skip
    env = {"MNEMOQL_DATA_DIR": str(tmp_path), **OFFLINE, "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(
        [*mnemoql(), "mcp", "--log-level", "info"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    replies = []
    try:
        for message in calls:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message:  # a request: wait for its answer before the next one
                replies.append(json.loads(proc.stdout.readline()))
        rest, stderr = proc.communicate(timeout=60)  # closes stdin: the server ends
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr
    assert rest == ""  # nothing but the answers was ever written to stdout
    assert [r["id"] for r in replies] == [1, 2, 3]
    assert replies[0]["result"]["serverInfo"]["name"] == "mnemoql"
    assert replies[2]["result"]["structuredContent"]["items"][0]["event_id"] == "book_ch1_e01"
    assert "mnemoql MCP on stdio" in stderr  # the log went to stderr


def test_a_store_that_cannot_open_is_reported_on_stderr(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    done = subprocess.run(
        [*mnemoql(), "mcp"],
        input="",
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"MNEMOQL_DATA_DIR": str(blocked / "data"), **OFFLINE, "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "STORE_UNAVAILABLE" in done.stderr and "Traceback" not in done.stderr


async def test_deadlines_and_model_failures_are_coded_and_write_nothing(tmp_path: Path) -> None:
    with FakeModelServer(timeout_sleep_s=5.0) as fake:
        model = {
            "MNEMOQL_EXTRACTION__BASE_URL": fake.base_url,
            "MNEMOQL_EXTRACTION__API_KEY": "sk-extract-SECRET",
            "MNEMOQL_EXTRACTION__TIMEOUT_S": "30",
            "MNEMOQL_EXTRACTION__RETRIES": "0",
            "MNEMOQL_LIMITS__MUTATION_TIMEOUT_S": "1",
        }
        async with stdio_client(tmp_path, env=model) as client:
            note = {"content": "Alice met Bob in Paris."}
            fake.fail("chat", "timeout")
            late = await client.call_tool("memory_save", note)
            assert error_code(late) == "TIMEOUT" and "longer than 1 s" in text(late)
            fake.fail("chat", "http_500")
            broken = await client.call_tool("memory_save", note)
            assert error_code(broken) == "UPSTREAM_FAILED"
            assert "SECRET" not in text(broken)
            assert await events(client) == 0  # neither call wrote anything
            assert ok(await client.call_tool("memory_save", note))["event_ids"] == ["event_1"]
            assert await events(client) == 1
