"""What every serving process starts, GraphQL (``web.app``) or MCP over stdio (``web.mcp.stdio``):
the store of a memory space and the warm-up of the providers."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import httpx

from mnemoql.engine.config import Settings
from mnemoql.engine.providers.base import Embedder
from mnemoql.engine.spaces import DEFAULT_SPACE, Spaces, StoreFactory
from mnemoql.engine.store.base import Store

if TYPE_CHECKING:
    from mnemoql.engine.memory import Memory
    from mnemoql.engine.providers.factory import Providers

log = logging.getLogger("mnemoql")


def limit_blas_threads(threads: int) -> None:
    """numpy's BLAS runs at most ``threads`` threads in this process (0 leaves its default).

    A serving process answers many requests on few cores: its parallelism is the requests, the
    embedder's workers and the store's threads, not a BLAS pool inside one small product. Each
    search multiplies matrices of ~100 x 384 (MMR's redundancy, the exact rescoring); a pool of
    BLAS threads that went idle between requests must be woken for each, and on a 2-core machine
    where another thread (an embedding, another process) holds the other core the product
    waits for it: milliseconds per search instead of tens of microseconds. The limit is
    process-wide (OpenBLAS keeps one thread count), which is why only serving processes set it,
    never the engine as a library. Call it on the serving loop's thread, the main thread of
    ``mnemoql serve`` and ``mnemoql mcp``: once the main thread has set a count, OpenBLAS
    ignores counts set from other threads."""
    if threads <= 0:
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="blas")


def open_store(settings: Settings, space: str = DEFAULT_SPACE) -> Store:
    """The configured store of one memory space, not yet opened."""
    if settings.store == "neo4j":
        from mnemoql.web.neo4j_boot import neo4j_store

        return neo4j_store(settings, space=space)
    from mnemoql.engine.store.embedded import AnnSettings, EmbeddedStore

    e = settings.embedded
    ann = AnnSettings(
        e.ann,
        e.ann_min_vectors,
        e.ann_overfetch,
        persist=e.persist,
        build_threads=e.ann_build_threads,
        mirror_files=e.mirror_files,
        mirror_min_rows=e.mirror_min_rows,
        prefetch=e.prefetch,
        first_overfetch=e.ann_first_overfetch,
    )
    # open() creates the directory; a failure there is a StoreUnavailable like any other
    return EmbeddedStore(settings.data_dir / "memory.db", space=space, ann=ann)


@contextlib.asynccontextmanager
async def serving_spaces(
    settings: Settings,
    *,
    http_client: httpx.AsyncClient | None = None,
    embedder: Embedder | None = None,
    store_for: StoreFactory | None = None,
) -> AsyncIterator[Spaces]:
    """The memory spaces of one process with the configured providers: what ``mnemoql serve``
    (``web.app``), ``mnemoql mcp`` and the Python API (``mnemoql.Memory``) open. On exit the
    spaces close, then the HTTP client of the model providers, then a Neo4j this process
    started. ``http_client``, ``embedder`` and ``store_for`` may be injected (tests)."""
    from mnemoql.engine.providers.factory import build_providers

    async with contextlib.AsyncExitStack() as stack:
        if settings.store == "neo4j":  # last out: after every store has closed
            from mnemoql.web.neo4j_boot import stop_started

            stack.push_async_callback(asyncio.to_thread, stop_started)
        client = http_client
        if client is None:
            client = await stack.enter_async_context(httpx.AsyncClient())
        providers = build_providers(settings, client)
        if embedder is not None:
            providers = dataclasses.replace(providers, embedder=embedder)
        spaces = Spaces(
            settings, providers, store_for or (lambda name: open_store(settings, name))
        )
        stack.push_async_callback(spaces.close)
        yield spaces


async def warm_up(providers: Providers, warmed: asyncio.Event, memory: Memory) -> None:
    """Load the local embedding model, then set ``warmed`` (``/readyz`` waits for it: ~30 ms
    with the model file in the page cache), then jieba's dictionary (~1 s; nobody waits for it),
    then the memory's topic and date index (SPEC §2; ~3.5 s at 1M events, under the save lock
    like any first use), so that neither the first search nor the first save pays for loading
    them. A provider or store that fails to load is logged; its first real use raises as it
    always did."""
    try:
        await _warm(providers.embedder)
    finally:
        warmed.set()
    await _warm(providers.extractor)
    try:
        await memory.recall.index()
    except Exception:
        log.warning("loading the topic and date index failed; its first use will", exc_info=True)


async def _warm(provider: object) -> None:
    warm = getattr(provider, "warm_up", None)
    if warm is None:
        return
    try:
        await warm()
    except Exception:
        log.warning("warming up %r failed; its first use will load it", provider, exc_info=True)
