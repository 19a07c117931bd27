"""Memory spaces: one ``Memory`` per space, created on first use and cached.

Every space gets its own store instance bound to it (so its own SQLite file or its own
``space`` partition in Neo4j), its own sessions, cursors and save lock; the providers -- and
with them the HTTP client and the local embedding model -- are shared by all spaces.

A store that fails (``StoreUnavailable``) is marked down by the caller; the next request for
that space, or a readiness check, tries to reopen it, at most once per ``revive_every_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from mnemoql.engine.config import Settings
from mnemoql.engine.errors import InvalidInput, MnemoError
from mnemoql.engine.memory import Memory
from mnemoql.engine.service_settings import SPACE_NAME
from mnemoql.engine.sessions import Clock
from mnemoql.engine.store.base import Store

if TYPE_CHECKING:
    from mnemoql.engine.providers.factory import Providers

log = logging.getLogger(__name__)

DEFAULT_SPACE = "default"
StoreFactory = Callable[[str], Store]


class Spaces:
    """The registry of open memory spaces.

    Args:
        settings: shared by every space.
        providers: shared by every space (one HTTP client, one embedder).
        store_for: builds the (not yet opened) store of a space.
        clock: monotonic seconds, for the revive rate limit (tests inject a fake).
        revive_every_s: minimum time between two reopen attempts of one space.
    """

    def __init__(
        self,
        settings: Settings,
        providers: Providers,
        store_for: StoreFactory,
        *,
        clock: Clock = time.monotonic,
        revive_every_s: float = 1.0,
    ) -> None:
        self.settings = settings
        self.providers = providers
        self._store_for = store_for
        self._clock = clock
        self.revive_every_s = revive_every_s
        self._memories: dict[str, Memory] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._down: dict[str, float | None] = {}  # space -> last reopen attempt (None: not yet)

    def __contains__(self, space: str) -> bool:
        return space in self._memories

    @property
    def names(self) -> list[str]:
        """The spaces opened so far."""
        return sorted(self._memories)

    async def get(self, space: str = DEFAULT_SPACE) -> Memory:
        """The memory of ``space``, opening its store on first use.

        Raises:
            InvalidInput: ``space`` is not a valid space name.
            StoreUnavailable: the store of a new space cannot be opened.
        """
        memory = self._memories.get(space)
        if memory is not None and space not in self._down:
            return memory
        if not SPACE_NAME.match(space):
            raise InvalidInput(
                f"space {space!r} is not allowed: use 1-64 letters, digits, '_' or '-'",
                zh=f"空间名不合法：{space}",
            )
        async with self._locks.setdefault(space, asyncio.Lock()):
            memory = self._memories.get(space)
            if memory is None:
                store = self._store_for(space)
                await store.open()  # StoreUnavailable propagates: nothing is cached
                memory = Memory(self.settings, store, self.providers)
                self._memories[space] = memory
                log.info("memory space %r opened", space)
            elif space in self._down:
                await self._revive(space, memory)
            return memory

    def mark_down(self, space: str) -> None:
        """Note that the store of ``space`` failed; the next ``get`` tries to reopen it."""
        if space in self._memories:
            self._down.setdefault(space, None)

    async def ready(self) -> bool:
        """True when the store of every open space answers; tries to revive those that don't."""
        ok = True
        for space, memory in list(self._memories.items()):
            if await memory.store.ping():
                self._down.pop(space, None)
                continue
            self.mark_down(space)
            async with self._locks.setdefault(space, asyncio.Lock()):
                await self._revive(space, memory)
            ok = ok and space not in self._down
        return ok

    async def write_faults(self) -> dict[str, str]:
        """The code of every open space whose store would refuse a write now (a full disk,
        another process's write lock), by space; stores without the probe are left out."""
        faults: dict[str, str] = {}
        for space, memory in list(self._memories.items()):
            probe = getattr(memory.store, "write_fault", None)
            fault = await probe() if probe is not None else None
            if fault is not None:
                faults[space] = fault.code
        return faults

    async def _revive(self, space: str, memory: Memory) -> None:
        """Reopen a failed store (called under the space's lock); leaves it down on failure."""
        if space not in self._down:
            return
        now = self._clock()
        last = self._down[space]
        if last is not None and now - last < self.revive_every_s:
            return
        self._down[space] = now
        store = memory.store
        if await store.ping():
            self._down.pop(space, None)
            return
        with contextlib.suppress(Exception):
            await store.close()
        try:
            await store.open()
        except Exception as exc:
            code = exc.code if isinstance(exc, MnemoError) else type(exc).__name__
            log.warning("memory space %r is still unavailable: %s", space, code)
            return
        if await store.ping():
            self._down.pop(space, None)
            log.info("memory space %r is available again", space)

    async def close(self) -> None:
        """Close every store; errors are logged, not raised."""
        memories, self._memories = self._memories, {}
        self._down.clear()
        for space, memory in memories.items():
            try:
                await memory.store.close()
            except Exception:  # a store that is already gone must not stop the others
                log.warning("closing memory space %r failed", space, exc_info=True)
