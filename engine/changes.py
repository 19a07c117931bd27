"""What changed in one memory space, as it commits: the feed a live view follows.

``Changes`` is a small in-process publish/subscribe hub; each ``Memory`` owns one, so a feed
never crosses spaces. ``Memory`` publishes one ``Change`` per committed write; every subscriber
receives them in order, numbered by ``sequence``:

    READY         first, to each new subscriber: from here on nothing is missed (load a
                  snapshot now, then apply what follows)
    SAVED         events saved, with the entities created for them
    MERGED        existing entities a save merged into (new aliases, new relations)
    FORGOTTEN     ids deleted by a forget
    REVECTORIZED  every vector was replaced (the graph itself is unchanged)
    RESYNC        changes were lost for this subscriber (it fell ``buffer`` changes behind,
                  or a dump was restored): reload

Publishing never waits for a slow subscriber: it drops that subscriber's backlog for one
RESYNC instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Literal

ChangeKind = Literal["READY", "SAVED", "MERGED", "FORGOTTEN", "REVECTORIZED", "RESYNC"]
DEFAULT_BUFFER = 256


@dataclass(frozen=True, slots=True)
class Change:
    """One committed change. ``node_ids`` are entities created (SAVED) or updated (MERGED)."""

    sequence: int
    kind: ChangeKind
    event_ids: tuple[str, ...] = ()
    node_ids: tuple[str, ...] = ()
    deleted_ids: tuple[str, ...] = ()


class Changes:
    """Fan-out of ``Change`` records to any number of subscribers (one event loop)."""

    def __init__(self, buffer: int = DEFAULT_BUFFER) -> None:
        if buffer < 1:
            raise ValueError("buffer must be at least 1")
        self.buffer = buffer
        self.sequence = 0
        self._queues: set[asyncio.Queue[Change]] = set()

    @property
    def subscribers(self) -> int:
        return len(self._queues)

    def publish(
        self,
        kind: ChangeKind,
        *,
        event_ids: Iterable[str] = (),
        node_ids: Iterable[str] = (),
        deleted_ids: Iterable[str] = (),
    ) -> Change:
        """Number a change and hand it to every subscriber; returns it."""
        self.sequence += 1
        change = Change(self.sequence, kind, tuple(event_ids), tuple(node_ids), tuple(deleted_ids))
        for queue in self._queues:
            self._offer(queue, change)
        return change

    def _offer(self, queue: asyncio.Queue[Change], change: Change) -> None:
        if queue.full():
            while not queue.empty():
                queue.get_nowait()
            change = Change(change.sequence, "RESYNC")
        queue.put_nowait(change)

    async def subscribe(self) -> AsyncIterator[Change]:
        """READY, then every change published after it, until the caller stops iterating."""
        queue: asyncio.Queue[Change] = asyncio.Queue(self.buffer)
        self._queues.add(queue)
        try:
            yield Change(self.sequence, "READY")
            while True:
                yield await queue.get()
        finally:
            self._queues.discard(queue)
