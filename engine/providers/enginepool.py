"""The local model's worker threads: one engine per thread, one queue in front of them.

Every call into the model is a job in one of two queues: queries and passages, each in arrival
order. A free worker takes the oldest query, unless ``burst`` queries in a row have been taken
while passages waited: then it takes the oldest passage. So a search that arrives while an
import keeps the model busy waits for the calls that are running, not for the import's queue,
and saves still get at least one call in ``burst + 1`` under a stream of searches (a passage
call costs ~10 query calls, so that is most of the model's time).

Each worker loads its own engine when the pool starts (at the first job; an engine is not shared
between threads; a worker whose load failed tries again on its next job), so ``workers`` engines
can run at once on as many cores. A job whose caller gave up (its future was
cancelled: a request deadline) is dropped when its turn comes, never run.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

E = TypeVar("E")
T = TypeVar("T")

# Queries taken in a row while passages wait, before one passage goes. A 400-character passage
# takes ~0.2 s on one thread and a query ~20 ms: four queries cost less than half a passage.
QUERY_BURST = 4


class EnginePool(Generic[E]):
    """``workers`` threads named ``{name}_{i}``, each running jobs on an engine of its own.

    Args:
        workers: how many threads (and engines); 1 keeps one model call at a time.
        load: makes one engine; called in each worker thread when the pool starts, and again
            for a job whenever it raised.
        name: the threads' name prefix.
        burst: query jobs taken in a row while passage jobs wait.
    """

    def __init__(
        self,
        workers: int,
        load: Callable[[], E],
        *,
        name: str,
        burst: int = QUERY_BURST,
    ) -> None:
        if workers < 1:
            raise ValueError(f"an engine pool needs at least one worker (got {workers})")
        self.workers = workers
        self.burst = burst
        self._load = load
        self._name = name
        self._queries: deque[tuple[Callable[[E], Any], Future[Any]]] = deque()
        self._passages: deque[tuple[Callable[[E], Any], Future[Any]]] = deque()
        self._run_of_queries = 0  # queries taken since a passage last was (while they waited)
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
        with self._wake:
            if self._closed:
                raise RuntimeError("the engine pool is closed")
            if not self._threads:
                self._start()
            (self._queries if query else self._passages).append((fn, future))
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
                while not (self._queries or self._passages) and not self._closed:
                    self._wake.wait()
                if not (self._queries or self._passages):
                    return
                fn, future = self._next()
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

    def _next(self) -> tuple[Callable[[E], Any], Future[Any]]:
        """The next job (under the lock, with one waiting)."""
        if self._queries and (not self._passages or self._run_of_queries < self.burst):
            self._run_of_queries += 1 if self._passages else 0
            return self._queries.popleft()
        self._run_of_queries = 0
        return self._passages.popleft()

    def _loaded(self) -> E:
        engine = self._load()
        with self._wake:
            self._engines.append(engine)
        return engine
