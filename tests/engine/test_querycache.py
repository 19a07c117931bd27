"""The query-vector cache: repeated and concurrent identical queries reach the model once."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from mnemoql.engine.models import Vector
from mnemoql.engine.providers.hashing import HashingEmbedder
from mnemoql.engine.providers.querycache import QueryVectors

DIMS = 16


class CountingModel:
    """A real (hashing) embedder behind a gate, recording every batch it is asked for."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.fail = False
        self._inner = HashingEmbedder(DIMS)

    async def embed(self, texts: list[str]) -> Vector:
        self.calls.append(list(texts))
        await self.gate.wait()
        if self.fail:
            raise RuntimeError("model down")
        return self._inner.embed_sync(texts)


async def test_a_repeated_query_is_served_from_the_cache() -> None:
    model = CountingModel()
    cache = QueryVectors(model.embed, size=8)
    first = await cache.get(["where did alice move?"], DIMS)
    again = await cache.get(["where did alice move?"], DIMS)
    assert model.calls == [["where did alice move?"]]
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(
        first, HashingEmbedder(DIMS).embed_sync(["where did alice move?"])
    )


async def test_only_new_texts_reach_the_model_in_one_call_and_rows_keep_their_order() -> None:
    model = CountingModel()
    cache = QueryVectors(model.embed, size=8)
    await cache.get(["b"], DIMS)
    out = await cache.get(["a", "b", "c", "a"], DIMS)
    assert model.calls == [["b"], ["a", "c"]]
    np.testing.assert_array_equal(out, HashingEmbedder(DIMS).embed_sync(["a", "b", "c", "a"]))


async def test_concurrent_identical_queries_share_one_model_call() -> None:
    model = CountingModel()
    model.gate.clear()
    cache = QueryVectors(model.embed, size=8)
    tasks = [asyncio.create_task(cache.get(["same question"], DIMS)) for _ in range(20)]
    await asyncio.sleep(0.01)
    model.gate.set()
    results = await asyncio.gather(*tasks)
    assert model.calls == [["same question"]]
    assert all(np.array_equal(r, results[0]) for r in results)


async def test_the_oldest_queries_leave_a_full_cache() -> None:
    model = CountingModel()
    cache = QueryVectors(model.embed, size=2)
    for text in ["one", "two", "three", "one"]:
        await cache.get([text], DIMS)
    assert model.calls == [["one"], ["two"], ["three"], ["one"]]
    await cache.get(["three"], DIMS)
    assert len(model.calls) == 4


async def test_a_failure_reaches_every_waiter_and_is_not_cached() -> None:
    model = CountingModel()
    model.gate.clear()
    model.fail = True
    cache = QueryVectors(model.embed, size=8)
    tasks = [asyncio.create_task(cache.get(["q"], DIMS)) for _ in range(3)]
    await asyncio.sleep(0.01)
    model.gate.set()
    for t in tasks:
        with pytest.raises(RuntimeError, match="model down"):
            await t
    model.fail = False
    await cache.get(["q"], DIMS)
    assert model.calls == [["q"], ["q"]]


async def test_a_cancelled_caller_does_not_fail_the_others_waiting_for_the_same_text() -> None:
    model = CountingModel()
    model.gate.clear()
    cache = QueryVectors(model.embed, size=8)
    first = asyncio.create_task(cache.get(["q"], DIMS))  # the caller that starts the call
    await asyncio.sleep(0.01)
    second = asyncio.create_task(cache.get(["q"], DIMS))
    await asyncio.sleep(0.01)
    first.cancel()  # e.g. its request timed out
    with pytest.raises(asyncio.CancelledError):
        await first
    model.gate.set()
    np.testing.assert_array_equal(await second, HashingEmbedder(DIMS).embed_sync(["q"]))
    # the cancelled call is dropped (its queued model work with it); the waiter embeds itself
    assert model.calls == [["q"], ["q"]]
