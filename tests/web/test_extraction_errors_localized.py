"""A client extraction that cannot be kept is refused in the reader's language, details
included (issue 28: the Chinese message carried pydantic's and the checks' English), against a
real ``mnemoql serve`` with ``MNEMOQL_LOCALE=zh`` and ``Accept-Language``, and the command
line's ``import``, and MCP over HTTP."""

from __future__ import annotations

import json
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

from tests.web.mcp_support import error_code, text
from tests.web.served import ROOT, Served, served

SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds } }"
EVENT = {"ref": "e1", "summary": "Alice met Bob"}

# extraction -> (the English, the Chinese) after "invalid extraction: " / "提取结果无效："
CASES: dict[str, tuple[dict[str, Any], str, str]] = {
    "no events": ({"events": []}, "events must not be empty", "events 不能为空"),
    "unknown ref": (
        {"events": [{**EVENT, "concepts": ["c9"]}]},
        "e1 refers to unknown concept ref 'c9'",
        "事件 e1 引用了不存在的概念 ref 'c9'",
    ),
    "wrong types": (
        {"events": [{**EVENT, "summary": 5, "participants": [{"person": 3}]}]},
        "events[0].summary: Input should be a valid string; "
        "events[0].participants[0].person: Input should be a valid string",
        "events[0].summary：应为字符串；events[0].participants[0].person：应为字符串",
    ),
    "empty name": (
        {"events": [EVENT], "persons": [{"ref": "p1", "name": " "}]},
        "person p1 has an empty name",
        "人物 p1 的 name 为空",
    ),
    "attitude": (
        {"events": [EVENT], "attitudes": [{"person": "p1", "target": "c1", "attitude": "likes"}]},
        "attitude refers to unknown person ref 'p1'",
        "attitude 引用了不存在的人物 ref 'p1'",
    ),
    "unknown field": (
        {"events": [{**EVENT, "rol": "host"}]},
        "unknown field(s) events[0].rol: events hold their relations (participants, "
        "locations, concepts) and attitudes link persons to persons or concepts",
        "未知字段 events[0].rol：关系写在事件之内（participants、locations、concepts），"
        "attitudes 把人物连到人物或概念",
    ),
}
ENGLISH = ("refers", "unknown", "must not", "Input should", "empty", "hold their")


@pytest.fixture(scope="module")
def chinese(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("zh") / "data", env={"MNEMOQL_LOCALE": "zh"}) as s:
        yield s


def refusal(server: Served, extraction: dict[str, Any], language: str | None) -> dict[str, Any]:
    headers = {"accept-language": language} if language else {}
    variables = {"input": {"content": "Alice met Bob in Berlin.", "extraction": extraction}}
    r = httpx.post(server.graphql, json={"query": SAVE, "variables": variables},
                   headers=headers, timeout=60)  # fmt: skip
    (error,) = r.json()["errors"]
    assert error["extensions"]["code"] == "EXTRACTION_INVALID"
    result: dict[str, Any] = error
    return result


@pytest.mark.parametrize("case", list(CASES))
def test_a_refused_extraction_is_said_in_chinese_details_included(
    chinese: Served, case: str
) -> None:
    extraction, en, zh = CASES[case]
    said = refusal(chinese, extraction, None)
    assert said["message"] == said["extensions"]["zh"] == f"提取结果无效：{zh}"
    assert not [w for w in ENGLISH if w in said["message"]]
    assert said["extensions"]["en"] == f"invalid extraction: {en}"
    asked = refusal(chinese, extraction, "en-US,en;q=0.9")  # the request's language wins
    assert asked["message"] == f"invalid extraction: {en}"


async def test_mcp_says_a_refused_extraction_in_chinese(chinese: Served) -> None:
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        McpClient(streamable_http_client(chinese.url + "/mcp", http_client=http)) as client,
    ):
        for extraction, _, zh in CASES.values():
            args = {"content": "Alice met Bob.", "extraction": extraction}
            refused = await client.call_tool("memory_save", args)
            assert error_code(refused) == "EXTRACTION_INVALID"
            assert text(refused) == f"EXTRACTION_INVALID: 提取结果无效：{zh}"


def test_import_says_a_refused_extraction_in_chinese(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    lines = [{"content": "Alice met Bob.", "extraction": CASES[c][0]} for c in CASES]
    src.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOQL_")}
    env.pop("DEEPSEEK_API_KEY", None)
    env.update(MNEMOQL_EMBEDDING__PROVIDER="hashing", MNEMOQL_DATA_DIR=str(tmp_path / "data"),
               MNEMOQL_LOCALE="zh")  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "mnemoql.web.cli", "import", str(src)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode == 2, done.stderr
    said = done.stderr.strip().splitlines()
    for n, case in enumerate(CASES, start=1):
        line = next(x for x in said if x.startswith(f"{src}:{n}："))
        assert line.endswith(f"提取结果无效：{CASES[case][2]}"), line
