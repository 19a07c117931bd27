"""A search loads its session while its query is embedded (``Retriever.search``), on every
store: the session's round trip hides behind the embedding. An embedding that fails leaves the
session as it was; a session that cannot be loaded stops the embedding."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
import pytest

from mnemoql.engine.config import load_settings
from mnemoql.engine.errors import StoreUnavailable, UpstreamFailed
from mnemoql.engine.ingest import SaveInput
from mnemoql.engine.memory import Memory
from mnemoql.engine.providers.base import Embedder, EmbedKind
from mnemoql.engine.providers.factory import Providers, build_providers
from mnemoql.engine.retrieval.pipeline import SearchRequest
from mnemoql.engine.store.base import Store

# how long a test waits for something that must happen; a deadlock otherwise, never a timing
PATIENCE_S = 10.0


class Gated:
    """An embedder whose query embeddings can be made to wait for ``gate``, fail, or be
    seen cancelled; passages are embedded at once."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model, self.dimensions = inner.model, inner.dimensions
        self.gate: asyncio.Event | None = None
        self.fail = False
        self.waiting = asyncio.Event()  # a query embedding waits at the gate
        self.cancelled = 0

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Any:
        if kind == "query":
            try:
                if self.gate is not None:
                    self.waiting.set()
                    await asyncio.wait_for(self.gate.wait(), PATIENCE_S)
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
            if self.fail:
                raise UpstreamFailed("the embedding service answered 503")
        return await self.inner.embed(texts, kind)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
async def memory(store: Store) -> AsyncIterator[tuple[Memory, Gated]]:
    settings = load_settings({}, embedding={"provider": "hashing"})
    async with httpx.AsyncClient() as client:
        built = build_providers(settings, client)
        gated = Gated(built.embedder)
        memory = Memory(settings, store, Providers(gated, built.extractor, built.judge))  # type: ignore[arg-type]
        await memory.save(SaveInput(content="Alice met Bob in Berlin to talk about graphs."))
        await memory.save(SaveInput(content="Carol planted tulips by the pond in spring."))
        yield memory, gated


async def test_the_session_is_loaded_while_the_query_is_embedded(
    memory: tuple[Memory, Gated],
) -> None:
    mem, gated = memory
    state = mem.sessions.state
    load = state.session
    gated.gate = asyncio.Event()

    async def loading(key: str, now: float) -> Any:
        assert gated.gate is not None
        gated.gate.set()  # the embedding goes on only once the session's load has begun
        return await load(key, now)

    state.session = loading  # type: ignore[method-assign]
    found = await asyncio.wait_for(
        mem.search(SearchRequest(query="Where did Alice meet Bob?"), "s1"), PATIENCE_S
    )
    assert found.page.items, "the search delivered nothing"


async def test_a_failed_embedding_leaves_the_session_as_it_was(
    memory: tuple[Memory, Gated],
) -> None:
    mem, gated = memory
    first = await mem.search(SearchRequest(query="Who planted tulips?"), "s2")
    given = {x.event_id for x in first.page.items}
    assert given
    gated.fail = True
    with pytest.raises(UpstreamFailed):
        await mem.search(SearchRequest(query="Where did Alice meet Bob?"), "s2")
    gated.fail = False
    again = await mem.search(SearchRequest(query="Who planted tulips?"), "s2")
    # what the first search delivered is still the session's: not delivered twice
    assert given.isdisjoint(x.event_id for x in again.page.items)
    assert again.page.excluded_count == len(given)


async def test_a_session_that_cannot_be_loaded_stops_the_embedding(
    memory: tuple[Memory, Gated],
) -> None:
    mem, gated = memory
    gated.gate = asyncio.Event()  # never set: the embedding waits until it is stopped

    async def failing(key: str, now: float) -> Any:
        await gated.waiting.wait()  # the embedding has started meanwhile
        raise StoreUnavailable("the session table went away")

    mem.sessions.state.session = failing  # type: ignore[method-assign]
    with pytest.raises(StoreUnavailable):
        await asyncio.wait_for(
            mem.search(SearchRequest(query="Where did Alice meet Bob?"), "s3"), PATIENCE_S
        )
    for _ in range(100):  # the cancellation is delivered on the loop's next turns
        if gated.cancelled:
            break
        await asyncio.sleep(0)
    assert gated.cancelled == 1
