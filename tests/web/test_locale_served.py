"""One language setting, end to end: ``MNEMOQL_LOCALE`` and ``Accept-Language`` against a real
``mnemoql serve`` (GraphQL errors, ``save.message``, ``text``), MCP over HTTP and stdio with the
SDK's clients, the command line, and the Python API (``Memory`` in process, ``Client`` over
HTTP)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client as McpClient
from mcp.client.streamable_http import streamable_http_client

from mnemoql import Client, Memory, NotFound
from mnemoql.engine.config import load_settings
from tests.web.mcp_support import error_code, ok, record, stdio_client, text
from tests.web.served import ROOT, Served, served

SAVE = """mutation($content: String!) {
  save(input: {content: $content}) { eventIds message }
}"""
READ_MISSING = '{ read(eventId: "event_999") { text } }'
SEARCH_TEXT = '{ search(query: "Berlin", session: "%s") { text notes { message } } }'
CONTENT = "Alice: I moved to Berlin last week to work on the Neo4j migration."
ZH_FIRST = "zh-CN,zh;q=0.9,en;q=0.8"
EN_FIRST = "en-US,en;q=0.9,zh-CN;q=0.8"


def post(server: Served, query: str, language: str | None = None, **variables: Any) -> Any:
    headers = {"accept-language": language} if language is not None else {}
    r = httpx.post(
        server.graphql, json={"query": query, "variables": variables}, headers=headers, timeout=60
    )
    assert r.status_code == 200, r.text
    return r.json()


def missing_event(server: Served, language: str | None) -> dict[str, Any]:
    body = post(server, READ_MISSING, language)
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "NOT_FOUND"
    assert error["extensions"]["en"] == "no event with id 'event_999'"
    assert error["extensions"]["zh"] == "事件不存在：event_999"
    result: dict[str, Any] = error
    return result


@pytest.fixture(scope="module")
def english(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server with MNEMOQL_LOCALE=en (the default, set in case the environment has another)."""
    with served(tmp_path_factory.mktemp("en") / "data", env={"MNEMOQL_LOCALE": "en"}) as s:
        yield s


@pytest.fixture(scope="module")
def chinese(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server with MNEMOQL_LOCALE=zh."""
    with served(tmp_path_factory.mktemp("zh") / "data", env={"MNEMOQL_LOCALE": "zh"}) as s:
        yield s


def test_graphql_errors_follow_accept_language(english: Served) -> None:
    assert missing_event(english, None)["message"] == "no event with id 'event_999'"
    assert missing_event(english, ZH_FIRST)["message"] == "事件不存在：event_999"
    assert missing_event(english, EN_FIRST)["message"] == "no event with id 'event_999'"
    # q-values, not order; a language we do not speak falls back to the setting
    assert missing_event(english, "en;q=0.3, zh;q=0.7")["message"] == "事件不存在：event_999"
    assert missing_event(english, "fr-FR, de")["message"] == "no event with id 'event_999'"


def test_save_message_and_text_follow_accept_language(english: Served) -> None:
    first = post(english, SAVE, None, content=CONTENT)["data"]["save"]
    (event_id,) = first["eventIds"]
    assert first["message"].startswith(f"saved 1 event(s): {event_id}")
    again = post(english, SAVE, ZH_FIRST, content=CONTENT + " Again.")["data"]["save"]
    assert again["message"].startswith(f"已保存 1 个事件：{again['eventIds'][0]}")
    en = post(english, SEARCH_TEXT % "en", EN_FIRST)["data"]["search"]["text"]
    zh = post(english, SEARCH_TEXT % "zh", ZH_FIRST)["data"]["search"]["text"]
    # a page's note in its language (a summary line shows only where the quote lacks it)
    assert "verify summaries against the source" in en and "摘要需以原文核实" not in en
    assert "摘要需以原文核实" in zh and "verify summaries against the source" not in zh
    # an explicit argument wins over the header
    explicit = post(english, '{ search(query: "Berlin", session: "x") { text(locale: EN) } }',
                    ZH_FIRST)["data"]["search"]["text"]  # fmt: skip
    assert "verify summaries against the source" in explicit


def test_the_setting_makes_chinese_the_default(chinese: Served) -> None:
    assert missing_event(chinese, None)["message"] == "事件不存在：event_999"
    assert missing_event(chinese, "fr")["message"] == "事件不存在：event_999"
    assert missing_event(chinese, "en")["message"] == "no event with id 'event_999'"
    saved = post(chinese, SAVE, None, content=CONTENT)["data"]["save"]
    assert saved["message"].startswith("已保存 1 个事件：")
    english = post(chinese, SAVE, "en", content=CONTENT + " Again.")["data"]["save"]
    assert english["message"].startswith("saved 1 event(s): ")


async def test_mcp_over_http_speaks_the_configured_language(chinese: Served) -> None:
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        McpClient(streamable_http_client(chinese.url + "/mcp", http_client=http)) as client,
    ):
        saved = await client.call_tool("memory_save", record(1, book="zh"))
        ok(saved)
        assert text(saved).startswith("已保存 1 个事件：zh_ch1_e01")
        missing = await client.call_tool("memory_read", {"event_id": "event_999"})
        assert error_code(missing) == "NOT_FOUND"
        assert text(missing) == "NOT_FOUND: 事件不存在：event_999"
        found = await client.call_tool("memory_search", {"query": "dragon village"})
        assert "摘要需以原文核实" in text(found) and "可继续：" in text(found)


async def test_mcp_over_http_follows_a_requests_accept_language(chinese: Served) -> None:
    async with (
        httpx2.AsyncClient(headers={"accept-language": EN_FIRST}, timeout=60) as http,
        McpClient(streamable_http_client(chinese.url + "/mcp", http_client=http)) as client,
    ):
        saved = await client.call_tool("memory_save", record(2, book="en"))
        assert text(saved).startswith("saved 1 event(s): en_ch1_e02")
        missing = await client.call_tool("memory_read", {"event_id": "event_999"})
        assert text(missing) == "NOT_FOUND: no event with id 'event_999'"


async def test_mcp_over_stdio_follows_the_setting_and_its_flag(tmp_path: Path) -> None:
    async with stdio_client(tmp_path, env={"MNEMOQL_LOCALE": "zh"}) as client:
        empty = await client.call_tool("memory_topics", {})
        assert text(empty).startswith("（话题树为空")
        saved = await client.call_tool("memory_save", record(1))
        assert text(saved).startswith("已保存 1 个事件：book_ch1_e01")
    async with stdio_client(tmp_path) as client:  # no setting: English
        missing = await client.call_tool("memory_read", {"event_id": "event_999"})
        assert text(missing) == "NOT_FOUND: no event with id 'event_999'"
    async with stdio_client(tmp_path, "--locale", "en", env={"MNEMOQL_LOCALE": "zh"}) as client:
        replay = await client.call_tool("memory_save", record(1))  # the flag wins
        assert text(replay).startswith("already saved, nothing new written: book_ch1_e01")


def _cli(*args: str, data_dir: Path, locale: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOQL_")}
    env.update(MNEMOQL_DATA_DIR=str(data_dir), MNEMOQL_EMBEDDING__PROVIDER="hashing")
    if locale is not None:
        env["MNEMOQL_LOCALE"] = locale
    return subprocess.run(
        [str(Path(sys.executable).parent / "mnemoql"), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_command_line_speaks_the_setting(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    zh = _cli("export", "--space", "no such space!", str(out), data_dir=tmp_path, locale="zh")
    assert zh.returncode == 2 and "Traceback" not in zh.stderr
    assert zh.stderr == "mnemoql export: BAD_USER_INPUT: 空间名不合法：no such space!\n"
    en = _cli("export", "--space", "no such space!", str(out), data_dir=tmp_path, locale=None)
    assert en.returncode == 2
    assert en.stderr.startswith("mnemoql export: BAD_USER_INPUT: space 'no such space!' is not")
    bad = _cli("export", str(out), data_dir=tmp_path, locale="fr")
    assert bad.returncode == 2 and "MNEMOQL_LOCALE" in bad.stderr and "'en' or 'zh'" in bad.stderr


async def test_the_python_memory_speaks_its_locale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load_settings({}, data_dir=tmp_path, embedding={"provider": "hashing"})
    async with Memory(settings=settings, locale="zh") as memory:
        saved = await memory.save(CONTENT)
        assert saved.message.startswith("已保存 1 个事件：")
        page = await memory.search("Berlin", session="zh")
        assert "摘要需以原文核实" in page.text
        with pytest.raises(NotFound) as caught:
            await memory.read("event_999")
        assert caught.value.message == str(caught.value) == "事件不存在：event_999"
        assert caught.value.en == "no event with id 'event_999'"
    async with Memory(settings=settings) as memory:  # the settings' locale: English
        second = await memory.save(CONTENT)
        assert second.message.startswith("saved 1 event(s): event_2")
    monkeypatch.setenv("MNEMOQL_LOCALE", "zh")
    monkeypatch.setenv("MNEMOQL_EMBEDDING__PROVIDER", "hashing")
    async with Memory(tmp_path) as memory:  # MNEMOQL_LOCALE from the environment
        assert memory.locale == "zh"
        with pytest.raises(NotFound, match="事件不存在：event_999"):
            await memory.read("event_999")


def test_the_python_client_speaks_its_locale(english: Served, chinese: Served) -> None:
    with Client(english.url, locale="zh", session="zh-client") as client:
        saved = client.save(CONTENT + " Client.")
        assert saved.message.startswith("已保存 1 个事件：")
        assert "摘要需以原文核实" in client.search("Berlin").text
        with pytest.raises(NotFound) as caught:
            client.read("event_999")
        assert caught.value.message == "事件不存在：event_999"
        assert caught.value.en == "no event with id 'event_999'"
    # no locale: the server's setting
    with Client(chinese.url) as client, pytest.raises(NotFound, match="事件不存在：event_999"):
        client.read("event_999")
    with Client(chinese.url, locale="en") as client, pytest.raises(NotFound, match="no event"):
        client.read("event_999")
