"""``bench.load --generator wrk`` (issue 30): the Lua script's searches reach a real ``serve``
and are answered, texts that need JSON escaping included; a refused search counts as failed,
not answered; the merged percentile weighs each wrk by its answers. No timings: the figures
are the bench's."""

from __future__ import annotations

import asyncio
import json
import math
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import _wrk
from bench.load import (
    FRESH_WORDS,
    HOST,
    QUERIES,
    SEARCH,
    SPACE,
    free_port,
    seed_memory,
    start_server,
    stop_server,
    wait_ready,
)

# texts a naive body builder would break: a quote, a backslash, a tab, a control character
AWKWARD = ['who said "ship it"?', "C:\\backups\\old", "tab\there", "bell\x07", "周报 ✓"]

needs_wrk = pytest.mark.skipif(not _wrk.available(), reason="wrk is not installed")


def _result(answered: int, quantiles: list[float]) -> _wrk.WrkResult:
    return _wrk.WrkResult(answered, 0, 1.0, quantiles, 0.0)


def test_merged_percentile_weighs_each_wrk_by_its_answers() -> None:
    fast = _result(900, [1.0] * 100)
    slow = _result(100, [50.0] * 100)
    assert _wrk.merged_percentile([fast, slow], 50) == 1.0
    assert _wrk.merged_percentile([fast, slow], 95) == 50.0  # the slowest tenth is slow's
    assert _wrk.merged_percentile([fast], 95) == 1.0
    assert math.isnan(_wrk.merged_percentile([_result(0, [1.0] * 100)], 50))  # no answers


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A real ``serve`` (hashing embedder) with a few events, and a read token."""
    tmp = tmp_path_factory.mktemp("wrk")
    write, read = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    tokens = [
        {"token": write, "space": SPACE, "scopes": ["read", "write"]},
        {"token": read, "space": SPACE, "scopes": ["read"]},
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOQL_")}
    env["MNEMOQL_EMBEDDING__PROVIDER"] = "hashing"
    env["MNEMOQL_AUTH__TOKENS"] = json.dumps(tokens)
    port = free_port()
    base = f"http://{HOST}:{port}"
    proc = start_server(tmp / "data", port, env, tmp / "server.log")
    try:
        asyncio.run(wait_ready(base, proc))
        asyncio.run(seed_memory(base, write, 4))
        yield base, read
    finally:
        stop_server(proc)


def _run(
    base: str, token: str, queries: list[str], folder: Path, query: str = SEARCH
) -> _wrk.WrkResult:
    lua = _wrk.script(query, queries, list(FRESH_WORDS))
    (result,) = _wrk.run([base], [token], 2, 1.0, folder, lua, seed=3, cpus=[])
    return result


@needs_wrk
def test_wrk_searches_are_answered_by_a_real_server(
    server: tuple[str, str], tmp_path: Path
) -> None:
    base, read = server
    result = _run(base, read, QUERIES + AWKWARD, tmp_path)
    assert result.answered > 0
    assert result.failed == 0
    assert result.cpu_s > 0 and len(result.quantiles_ms) == 100


@needs_wrk
def test_refused_searches_count_as_failed(server: tuple[str, str], tmp_path: Path) -> None:
    base, _ = server
    result = _run(base, "not-a-token", QUERIES, tmp_path)
    assert result.answered == 0
    assert result.failed > 0


@needs_wrk
def test_answers_with_graphql_errors_count_as_failed(
    server: tuple[str, str], tmp_path: Path
) -> None:
    base, read = server
    # HTTP 200 with a coded error: every text is an invalid cursor
    wrong = SEARCH.replace("search(query: $q,", "search(cursor: $q,")
    assert wrong != SEARCH
    result = _run(base, read, QUERIES, tmp_path, query=wrong)
    assert result.answered == 0
    assert result.failed > 0
