"""An event loop on a thread of its own, for the synchronous wrappers.

A sync call hands its coroutine to this loop and waits for the result, so ``SyncMemory`` works
the same from a script, from a thread, and from a notebook whose own loop is already running
(where ``asyncio.run`` would refuse). One loop serves one wrapper for its whole life: the
store, its locks and the model's worker threads stay on the loop that opened them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class Portal:
    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the portal's loop and return (or raise) what it does."""
        if self._loop.is_closed():
            coro.close()
            raise RuntimeError("this memory is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def iterate(self, agen: AsyncIterator[T]) -> Iterator[T]:
        """An async iterator as a plain one, each step on the portal's loop."""
        while True:
            try:
                yield self.call(_next(agen))
            except StopAsyncIteration:
                return

    def stop(self) -> None:
        """Stop the loop and its thread (after the last call)."""
        if self._loop.is_closed():
            return
        try:
            self.call(self._loop.shutdown_asyncgens())
            self.call(self._loop.shutdown_default_executor())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()


async def _next(agen: AsyncIterator[T]) -> T:
    return await agen.__anext__()
