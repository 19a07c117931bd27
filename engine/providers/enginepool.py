"""The local model's worker threads: one engine per thread, one queue in front of them.

Every call into the model is a job in one queue, ordered by its arrival time, less
``head_start`` for a query. So a search that arrives while an import keeps the model busy waits
for the calls that are running, not for the import's queue; and a passage call is never passed
by a query that arrived more than ``head_start`` after it, so saves are not starved by a stream
of searches. Within a kind, jobs run in arrival order.

Each worker loads its own engine when the pool starts (at the first job; an engine is not shared
between threads; a worker whose load failed tries again on its next job), so ``workers`` engines
can run at once on as many cores. A job whose caller gave up (its future was
cancelled: a request deadline) is dropped when its turn comes, never run.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

E = TypeVar("E")
T = TypeVar("T")

# How far ahead of a passage call a query call goes (seconds): a query waits for the passages
# that were queued more than this before it, none queued later. A 400-character passage takes
# ~0.2 s on one thread and a query ~20 ms, so this is a few passages' worth.
QUERY_HEAD_START = 0.5


class EnginePool(Generic[E]):
    """``workers`` threads named ``{name}_{i}``, each running jobs on an engine of its own.

    Args:
        workers: how many threads (and engines); 1 keeps one model call at a time.
        load: makes one engine; called in each worker thread when the pool starts, and again
            for a job whenever it raised.
        name: the threads' name prefix.
        head_start: seconds a query job goes ahead of passage jobs.
    """

    def __init__(
        self,
        workers: int,
        load: Callable[[], E],
        *,
        name: str,
        head_start: float = QUERY_HEAD_START,
    ) -> None:
        if workers < 1:
            raise ValueError(f"an engine pool needs at least one worker (got {workers})")
        self.workers = workers
        self.head_start = head_start
        self._load = load
        self._name = name
        # (key, arrival number, job, its future): the number keeps equal keys in order
        self._queue: list[tuple[float, int, Callable[[E], Any], Future[Any]]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._engines: list[E] = []
        self._closed = False

    @property
    def engines(self) -> list[E]:
        """The engines loaded so far (in load order)."""
        return list(self._engines)

    def submit(self, fn: Callable[[E], T], *, query: bool) -> Future[T]:
        """Queue ``fn(engine)``; its future holds the result or the exception."""
        future: Future[T] = Future()
        key = time.monotonic() - (self.head_start if query else 0.0)
        with self._wake:
            if self._closed:
                raise RuntimeError("the engine pool is closed")
            if not self._threads:
                self._start()
            heapq.heappush(self._queue, (key, next(self._order), fn, future))
            self._wake.notify()
        return future

    async def run(self, fn: Callable[[E], T], *, query: bool) -> T:
        """``submit`` awaited from the event loop; cancelling the caller drops the job if it
        has not started."""
        return await asyncio.wrap_future(self.submit(fn, query=query))

    def close(self) -> None:
        """Stop taking jobs; the workers finish the queue and exit."""
        with self._wake:
            self._closed = True
            self._wake.notify_all()

    def _start(self) -> None:
        for i in range(self.workers):
            t = threading.Thread(target=self._work, name=f"{self._name}_{i}", daemon=True)
            self._threads.append(t)
            t.start()

    def _work(self) -> None:
        engine: E | None = None
        try:  # at start, so a second worker is ready before the first busy moment
            engine = self._loaded()
        except Exception:  # the next job's own load attempt reports it to its caller
            engine = None
        while True:
            with self._wake:
                while not self._queue and not self._closed:
                    self._wake.wait()
                if not self._queue:
                    return
                _, _, fn, future = heapq.heappop(self._queue)
            if not future.set_running_or_notify_cancel():
                continue  # the caller gave up before its turn
            try:
                if engine is None:
                    engine = self._loaded()
                result = fn(engine)
            except BaseException as exc:  # handed to the caller, as an executor would
                future.set_exception(exc)
            else:
                future.set_result(result)

    def _loaded(self) -> E:
        engine = self._load()
        with self._wake:
            self._engines.append(engine)
        return engine
