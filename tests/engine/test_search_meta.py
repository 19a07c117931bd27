"""A search's meta check runs beside the query's embedding and the session's read
(``Retriever.search``): a mismatch still stops the search before it ranks or records
anything, and a check nothing waits for any more is neither lost nor left running."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Sequence
from datetime import date
from typing import Any

import numpy as np
import pytest

from mnemoql.engine.cursors import CursorStore
from mnemoql.engine.errors import MetaMismatch
from mnemoql.engine.models import MemoryMeta
from mnemoql.engine.retrieval.pipeline import Retriever, SearchRequest
from mnemoql.engine.sessions import SessionStore

MODEL, DIMS = "m-1", 8


class Embedder:
    model, dimensions = MODEL, DIMS

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls = 0

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> Any:
        self.calls += 1
        await asyncio.sleep(0.01)  # the meta check is done (or failed) meanwhile
        if self.fail:
            raise RuntimeError("embedder down")
        return np.ones((len(texts), DIMS), dtype=np.float32)


class Store:
    """Only the meta read: a search that went past the check would call what is missing."""

    def __init__(self, meta: MemoryMeta | None, *, slow: bool = False) -> None:
        self.meta = meta
        self.slow = slow
        self.reads = 0
        self.cancelled = False

    async def get_meta(self) -> MemoryMeta | None:
        self.reads += 1
        try:
            await asyncio.sleep(1.0 if self.slow else 0)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return self.meta


def retriever(store: Store, embedder: Embedder) -> tuple[Retriever, SessionStore]:
    cursors = CursorStore()
    sessions = SessionStore(cursors=cursors)
    return (
        Retriever(store, embedder, sessions, cursors, lambda: date(2026, 1, 1)),  # type: ignore[arg-type]
        sessions,
    )


def lost_errors() -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: seen.append(context))
    return seen


async def test_a_mismatch_stops_the_search_before_the_session_is_used() -> None:
    store = Store(MemoryMeta("other-model", DIMS, "2026-01-01T00:00:00+00:00"))
    embedder = Embedder()
    search, sessions = retriever(store, embedder)
    with pytest.raises(MetaMismatch) as caught:
        await search.search(SearchRequest(query="backup job"), "s")
    assert caught.value.code == "EMBEDDING_MISMATCH"
    assert store.reads == 1 and embedder.calls == 1
    async with sessions.acquire("s") as session:  # nothing recorded, the lock given back
        assert not session.delivered_ids and not session.changed


async def test_a_failed_embedding_leaves_no_meta_check_behind() -> None:
    seen = lost_errors()
    store = Store(None, slow=True)  # still reading when the embedding fails
    search, _ = retriever(store, Embedder(fail=True))
    with pytest.raises(RuntimeError, match="embedder down"):
        await search.search(SearchRequest(query="backup job"), "s")
    await asyncio.sleep(0.01)
    assert store.cancelled
    assert seen == []


async def test_a_failed_meta_check_nothing_awaits_is_not_reported_as_lost() -> None:
    seen = lost_errors()
    store = Store(MemoryMeta("other-model", DIMS, "2026-01-01T00:00:00+00:00"))
    search, _ = retriever(store, Embedder(fail=True))  # the check fails first, then this
    failed = ""
    try:
        await search.search(SearchRequest(query="backup job"), "s")
    except RuntimeError as exc:
        failed = str(exc)  # not the exception itself: its frames would keep the task alive
    assert failed == "embedder down"
    gc.collect()  # a task whose error nobody retrieved is reported when it is collected
    await asyncio.sleep(0)
    assert seen == []
