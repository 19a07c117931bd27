"""The event loop shared fairly between large and small requests: ``ParseBudget`` makes large
bodies take turns at being parsed, and ``RefusalPause`` keeps a client repeating a refused
request from holding the loop as much as everyone else together.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection


class ParseBudget:
    """A share of the event loop's time for parsing large bodies, so a client sending them
    back to back cannot hold everyone else.

    Parsing JSON holds the interpreter (~30 ms per MB here even with the collector kept out),
    and no thread can take it elsewhere. So each parse of a body over ``min_bytes`` books its
    time divided by ``share`` of wall time: the next large body, from anyone, waits (without
    blocking the loop) until that booking has passed. At ``share`` 0.05 large bodies get at
    most a twentieth of the loop, so few other requests ever arrive during one; small requests
    never wait. One 2.5 MB body costs a lone client nothing; ten in a row are spaced ~1 s
    apart quiet (a parse of ~50 ms), longer on a loaded machine, and far quicker than the
    embedder saves that much text (bench/results/hostile.md).
    """

    def __init__(self, share: float = 0.05, min_bytes: int = 1024 * 1024) -> None:
        self.share = share
        self.min_bytes = min_bytes
        self._free_at = 0.0  # loop time when the next large parse may start
        self.waited = 0  # large parses that had to wait their turn

    async def turn(self, size: int) -> None:
        """Wait until a body of ``size`` bytes may be parsed."""
        if size < self.min_bytes:
            return
        loop = asyncio.get_running_loop()
        while (wait := self._free_at - loop.time()) > 0:
            self.waited += 1
            await asyncio.sleep(wait)
        self._free_at = loop.time()

    def spent(self, size: int, seconds: float) -> None:
        """Book ``seconds`` of parsing a body of ``size`` bytes."""
        if size >= self.min_bytes:
            self._free_at = max(self._free_at, asyncio.get_running_loop().time()) + (
                seconds / self.share
            )


class RefusalPause:
    """Answers a request refused for its size (``LIMIT_EXCEEDED``) only after a pause of
    ``factor`` times what it cost (at most ``max_s``), without blocking the loop.

    Refusing is cheap but not free (a 5,000-person extraction: its JSON parse, the GraphQL
    parse and validation, ~20-40 ms of event loop here), and a client repeating it back to
    back, one at a time, would hold the loop as much as every other client together. Paused,
    such a client gets at most ``1 / (1 + factor)`` of the loop; a client that hits a cap by
    mistake waits a little longer for its error.
    """

    def __init__(self, factor: float = 3.0, max_s: float = 1.0) -> None:
        self.factor = factor
        self.max_s = max_s
        self.paused_s = 0.0  # the sum of the pauses so far

    async def after(self, codes: Collection[object], started: float) -> None:
        """Pause if ``codes`` (the errors' codes) say the request was refused for its size;
        ``started`` is its ``time.perf_counter()`` at arrival."""
        if "LIMIT_EXCEEDED" not in codes:
            return
        pause = min(self.max_s, self.factor * (time.perf_counter() - started))
        self.paused_s += pause
        await asyncio.sleep(pause)
