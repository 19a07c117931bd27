"""The local model's worker threads: one engine per thread, one queue in front of them.

Every call into the model is a job in one of two queues: queries and passages, each in arrival
order. While both wait, a free worker takes the one whose class has had less of the model's
recent time for its share: queries get ``query_share`` of the model time (default 0.75) and
passages the rest, counted in seconds (decayed, half-life ``half_life_s``) and including the
calls running right now. A passage call costs ~5-10 query calls, so counting calls (as this pool
did: one passage after every four queries) gave the saves ~60% of the model under a stream of
searches (bench/results/load_share.md). When only one queue has jobs it gets every worker.
So a search that arrives while an import keeps the model busy waits for the calls that are
running, not for the import's queue, and saves keep their share and never starve.

Each worker loads its own engine when the pool starts (at the first job; an engine is not shared
between threads; a worker whose load failed tries again on its next job), so ``workers`` engines
can run at once on as many cores. A job whose caller gave up (its future was
cancelled: a request deadline) is dropped when its turn comes, never run.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

E = TypeVar("E")
T = TypeVar("T")

# The queries' share of the model's time while passages wait too (searches are interactive;
# saves keep the rest). EmbeddingSettings.query_share sets it.
QUERY_SHARE = 0.75
# Model seconds spent count half after this long: the share follows the last few seconds.
HALF_LIFE_S = 1.0


class EnginePool(Generic[E]):
    """``workers`` threads named ``{name}_{i}``, each running jobs on an engine of its own.

    Args:
        workers: how many threads (and engines); 1 keeps one model call at a time.
        load: makes one engine; called in each worker thread when the pool starts, and again
            for a job whenever it raised.
        name: the threads' name prefix.
        query_share: the queries' share of the model time while both kinds wait, above 0 and
            below 1 (neither kind can starve).
        half_life_s: how fast spent model time is forgotten.
        clock: seconds, monotonic (tests pass their own).
    """

    def __init__(
        self,
        workers: int,
        load: Callable[[], E],
        *,
        name: str,
        query_share: float = QUERY_SHARE,
        half_life_s: float = HALF_LIFE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if workers < 1:
            raise ValueError(f"an engine pool needs at least one worker (got {workers})")
        if not 0 < query_share < 1:
            raise ValueError(f"query_share must be above 0 and below 1 (got {query_share})")
        self.workers = workers
        self.query_share = query_share
        self._half_life_s = half_life_s
        self._clock = clock
        self._load = load
        self._name = name
        self._queries: deque[tuple[Callable[[E], Any], Future[Any]]] = deque()
        self._passages: deque[tuple[Callable[[E], Any], Future[Any]]] = deque()
        # decayed model seconds of [passages, queries] as of self._at, and the running jobs
        self._spent = [0.0, 0.0]
        self._at = clock()
        self._running: dict[int, tuple[bool, float]] = {}  # worker -> (query?, started)
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
            t = threading.Thread(
                target=self._work, args=(i,), name=f"{self._name}_{i}", daemon=True
            )
            self._threads.append(t)
            t.start()

    def _work(self, worker: int) -> None:
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
                query = self._next_is_query()
                fn, future = (self._queries if query else self._passages).popleft()
                if not future.set_running_or_notify_cancel():
                    continue  # the caller gave up before its turn
                self._running[worker] = (query, self._clock())
            try:
                if engine is None:
                    engine = self._loaded()
                result = fn(engine)
            except BaseException as exc:  # handed to the caller, as an executor would
                future.set_exception(exc)
            else:
                future.set_result(result)
            finally:
                with self._wake:
                    kind, started = self._running.pop(worker)
                    self._decay()
                    self._spent[kind] += self._clock() - started

    def _decay(self) -> None:
        now = self._clock()
        keep = 0.5 ** (max(0.0, now - self._at) / self._half_life_s)
        self._spent = [self._spent[0] * keep, self._spent[1] * keep]
        self._at = now

    def _next_is_query(self) -> bool:
        """Whether the next job is a query (under the lock, with one waiting): the kind that is
        further below its share of the recent model time, running calls included."""
        if not (self._queries and self._passages):
            return bool(self._queries)
        self._decay()
        spent = list(self._spent)
        for kind, started in self._running.values():
            spent[kind] += self._at - started
        return spent[1] * (1 - self.query_share) <= spent[0] * self.query_share

    def _loaded(self) -> E:
        engine = self._load()
        with self._wake:
            self._engines.append(engine)
        return engine
