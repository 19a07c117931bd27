"""Refusals in the reader's language, against a real ``mnemoql serve``: the edge's 413 (before
the app reads the body), graphql-core's validation and parse errors, and the view's own 400,
each with ``Accept-Language: zh`` and without, and a query's ``TIMEOUT`` and a websocket's
``RATE_LIMITED``; and the command line's import / export lines (a bad line's problems too)
with ``MNEMOQL_LOCALE=zh``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from mnemoql.engine.messages import CATALOGUE
from mnemoql.schema.wording import zh_wording
from tests.web.served import ROOT, Served, served

ZH = {"accept-language": "zh-CN,zh;q=0.9"}
MAX_BODY = 4096


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    env = {"MNEMOQL_LOCALE": "en", "MNEMOQL_LIMITS__MAX_BODY_BYTES": str(MAX_BODY)}
    with served(tmp_path_factory.mktemp("refusals") / "data", env=env) as s:
        yield s


def only_error(r: httpx.Response) -> dict[str, Any]:
    (error,) = r.json()["errors"]
    assert set(error["extensions"]) >= {"code", "en", "zh"}
    result: dict[str, Any] = error
    return result


def test_a_body_too_large_is_refused_in_the_asked_language(server: Served) -> None:
    big = {"query": "{ __typename }", "variables": {"pad": "x" * (2 * MAX_BODY)}}
    en = httpx.post(server.graphql, json=big, timeout=30)
    zh = httpx.post(server.graphql, json=big, headers=ZH, timeout=30)
    assert en.status_code == zh.status_code == 413
    e, z = only_error(en), only_error(zh)
    assert e["extensions"]["code"] == z["extensions"]["code"] == "PAYLOAD_TOO_LARGE"
    assert e["message"] == e["extensions"]["en"] and f"larger than {MAX_BODY} bytes" in e["message"]
    assert z["message"] == z["extensions"]["zh"] == e["extensions"]["zh"]
    assert z["message"].startswith(f"请求体超过 {MAX_BODY} 字节") and z["extensions"]["en"] == e["message"]


def test_a_validation_error_is_said_in_chinese(server: Served) -> None:
    query = {"query": "{ serch(query: \"x\") { text } }"}
    en = only_error(httpx.post(server.graphql, json=query, timeout=30))
    zh = only_error(httpx.post(server.graphql, json=query, headers=ZH, timeout=30))
    assert en["extensions"]["code"] == zh["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    # graphql-core's English is kept as it is; the Chinese names the same field and type
    assert en["message"].startswith("Cannot query field 'serch' on type 'Query'.")
    assert zh["message"].startswith("类型 'Query' 上没有字段 'serch'。")
    assert zh["extensions"]["en"] == en["message"] and en["extensions"]["zh"] == zh["message"]
    assert zh["message"] == zh_wording(en["message"], "GRAPHQL_VALIDATION_FAILED")


def test_a_parse_error_and_a_bad_body_in_chinese(server: Served) -> None:
    parse = only_error(httpx.post(server.graphql, json={"query": "{ search("}, headers=ZH, timeout=30))
    assert parse["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"
    assert parse["message"].startswith("GraphQL 语法错误：") and parse["extensions"]["en"].startswith("Syntax Error: ")
    for content, key in [(b'"x"', "http.not_object"), (b"[1, 2]", "http.batching")]:
        headers = {**ZH, "content-type": "application/json"}
        error = only_error(httpx.post(server.graphql, content=content, headers=headers, timeout=30))
        assert error["message"] == CATALOGUE[key]["zh"], content
        assert error["extensions"]["en"] == CATALOGUE[key]["en"]


def mnemoql(*args: str, data_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "MNEMOQL_EMBEDDING__PROVIDER": "hashing", "MNEMOQL_DATA_DIR": str(data_dir), **env}
    full.pop("DEEPSEEK_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "mnemoql.web.cli", *args], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=180)  # fmt: skip


def test_import_and_export_lines_follow_mnemoql_locale(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"content": "Alice met Bob in Berlin."}) + "\n", encoding="utf-8")
    data = tmp_path / "data"
    zh = mnemoql("import", str(src), data_dir=data, MNEMOQL_LOCALE="zh")
    assert zh.returncode == 0, zh.stderr
    assert f"已导入 {src}：共 1 行，保存 1，跳过 0，失败 0" in zh.stderr
    again = mnemoql("import", str(src), data_dir=data, MNEMOQL_LOCALE="en")
    assert f"imported {src}: 0 saved, 1 skipped, 0 failed of 1 lines" in again.stderr
    out = tmp_path / "dump.jsonl"
    exported = mnemoql("export", str(out), data_dir=data, MNEMOQL_LOCALE="zh")
    assert exported.returncode == 0, exported.stderr
    assert "已导出空间 'default'（embedded）：" in exported.stderr and f"-> {out}" in exported.stderr
    wrong = mnemoql("import", str(out), data_dir=data, MNEMOQL_LOCALE="zh")
    assert wrong.returncode == 2
    assert wrong.stderr.strip().splitlines()[-1] == (
        f"mnemoql import：{out} 是 `mnemoql export` 的记忆导出文件，不是待保存的行；"
        f"请用 `mnemoql restore {out}` 载入（到空的空间）"
    )


def test_import_says_each_bad_line_in_the_locale(tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    lines = ['{"content": "fine"}', '{"contnt": "x", "topic_path": 5}', "[1, 2]", "not json"]
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    zh = mnemoql("import", str(src), data_dir=tmp_path / "data", MNEMOQL_LOCALE="zh")
    assert zh.returncode == 2, zh.stderr
    said = zh.stderr.strip().splitlines()
    assert said[0].startswith(f"{src}:2：不是可保存的输入：content：缺少此字段；topic_path：应为字符串；contnt：")
    assert said[1:] == [
        f"{src}:3：不是可保存的输入：不是 JSON 对象",
        f"{src}:4：不是可保存的输入：第 1 列起不是有效的 JSON（Expecting value）",
        CATALOGUE["cli.import_nothing_saved"]["zh"],
    ]
    # pydantic's English dump (and the input it echoes) is gone in both languages
    en = mnemoql("import", str(src), data_dir=tmp_path / "data", MNEMOQL_LOCALE="en")
    assert en.returncode == 2 and "validation error" not in en.stderr and "input_value" not in en.stderr
    assert f"{src}:2: not a save input: content: Field required; topic_path: Input should be a valid string" in en.stderr


def test_a_timeout_is_said_in_the_asked_language(tmp_path: Path) -> None:
    env = {"MNEMOQL_LOCALE": "en", "MNEMOQL_LIMITS__QUERY_TIMEOUT_S": "0.000001"}
    with served(tmp_path / "data", env=env) as s:
        query = {"query": '{ search(query: "Berlin") { cursor } }'}
        en = only_error(httpx.post(s.graphql, json=query, timeout=30))
        zh = only_error(httpx.post(s.graphql, json=query, headers=ZH, timeout=30))
    assert en["extensions"]["code"] == zh["extensions"]["code"] == "TIMEOUT"
    assert en["message"] == en["extensions"]["en"] and en["message"].startswith("the request took longer")
    assert zh["message"] == zh["extensions"]["zh"] == en["extensions"]["zh"]
    assert zh["message"].startswith("请求超过 1e-06 秒，已停止")


async def _three_subscriptions(s: Served, headers: dict[str, str]) -> list[dict[str, Any]]:
    async with websockets.connect(
        s.ws, subprotocols=[websockets.Subprotocol("graphql-transport-ws")],
        additional_headers=headers, open_timeout=30,
    ) as ws:  # fmt: skip
        await ws.send(json.dumps({"type": "connection_init", "payload": {}}))
        assert json.loads(await asyncio.wait_for(ws.recv(), 30))["type"] == "connection_ack"
        for n in range(3):
            payload = {"query": "subscription { memoryChanges { kind } }"}
            await ws.send(json.dumps({"id": str(n), "type": "subscribe", "payload": payload}))
        while True:
            message = json.loads(await asyncio.wait_for(ws.recv(), 30))
            if message["type"] == "error":
                result: list[dict[str, Any]] = message["payload"]
                return result


async def test_a_websocket_rate_limit_is_said_in_the_asked_language(tmp_path: Path) -> None:
    env = {"MNEMOQL_LOCALE": "en", "MNEMOQL_HTTP__MAX_SUBSCRIPTIONS_PER_CLIENT": "2"}
    with served(tmp_path / "data", env=env) as s:
        (en,) = await _three_subscriptions(s, {})
        (zh,) = await _three_subscriptions(s, ZH)
    assert en["extensions"]["code"] == zh["extensions"]["code"] == "RATE_LIMITED"
    assert en["message"] == en["extensions"]["en"] and "MNEMOQL_HTTP__MAX_SUBSCRIPTIONS_PER_CLIENT" in en["message"]
    assert zh["message"] == zh["extensions"]["zh"] == en["extensions"]["zh"] != en["message"]
