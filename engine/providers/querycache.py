"""Recent query vectors, and one model call for concurrent identical queries.

Agents repeat themselves: a follow-up ``search`` with the same words, twenty clients of one
deployment asking the same thing. A query vector depends only on (model, text), so the
embedder keeps the newest ``size`` of them and answers a repeated query without the model;
a query that is being embedded right now is awaited, not embedded a second time. Passages are
never cached (each save embeds new text, and their vectors are stored anyway).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence

import numpy as np

from mnemoql.engine.models import Vector

DEFAULT_SIZE = 4096  # ~6 MB of 384-d float32 vectors


class QueryVectors:
    """An LRU of query vectors in front of a batch embedding function.

    Args:
        embed: embeds a list of texts as queries, one row per text.
        size: how many recent queries to keep (0 turns the cache off, keeping the single
            flight of identical concurrent queries).
    """

    def __init__(self, embed: Callable[[list[str]], Awaitable[Vector]], size: int) -> None:
        self._embed = embed
        self._size = size
        self._lru: OrderedDict[str, Vector] = OrderedDict()
        self._flying: dict[str, asyncio.Future[Vector]] = {}
        self.hits = 0
        self.misses = 0

    async def get(self, texts: Sequence[str], dims: int) -> Vector:
        """A ``(len(texts), dims)`` matrix; only texts neither cached nor in flight reach the
        model, in one call."""
        out = np.zeros((len(texts), dims), dtype=np.float32)
        waits: list[tuple[int, str, asyncio.Future[Vector]]] = []
        mine: dict[str, asyncio.Future[Vector]] = {}
        loop = asyncio.get_running_loop()
        for i, text in enumerate(texts):
            if (vec := self._lru.get(text)) is not None:
                self._lru.move_to_end(text)
                out[i] = vec
                self.hits += 1
            elif (fut := self._flying.get(text) or mine.get(text)) is not None:
                waits.append((i, text, fut))
                self.hits += 1
            else:
                mine[text] = self._flying[text] = loop.create_future()
                waits.append((i, text, mine[text]))
                self.misses += 1
        if mine:
            # in the caller's task, so a caller cancelled by its request timeout also drops
            # its queued model call (the embedder's queue never fills with abandoned work)
            await self._resolve(mine)
        for i, text, fut in waits:
            try:
                out[i] = await asyncio.shield(fut)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if not fut.cancelled() or (task is not None and task.cancelling()):
                    raise  # this caller was cancelled
                # the caller that was embedding this text was cancelled: embed it here
                out[i] = (await self._embed([text]))[0]
        return out

    async def _resolve(self, mine: dict[str, asyncio.Future[Vector]]) -> None:
        """Embed the texts and settle their futures; a failure reaches every waiter."""
        texts = list(mine)
        try:
            matrix = await self._embed(texts)
        except BaseException as exc:
            for text, fut in mine.items():
                self._flying.pop(text, None)
                if isinstance(exc, asyncio.CancelledError):
                    fut.cancel()
                elif not fut.done():
                    fut.set_exception(exc)
                    fut.exception()  # retrieved here: the waiters re-raise it, no warning
            raise
        for row, (text, fut) in enumerate(mine.items()):
            vec = np.array(matrix[row], dtype=np.float32)
            self._flying.pop(text, None)
            if not fut.done():
                fut.set_result(vec)
            if self._size > 0:
                self._lru[text] = vec
        while len(self._lru) > self._size:
            self._lru.popitem(last=False)
