"""Where a warm ``Memory.search`` spends its wall time at 100k events: every trip to another
thread (its wait to start, its run, the wait until the event loop resumes), the route pool's
steps on its compute thread (wall and CPU), the event loop's own CPU, and usearch's own top 40
on both indexes asked on the event loop in the same run (issue #30, "a search near its index").

    python -m bench.search_hops --queries 300 --out /tmp/hops.md

It opens the cached corpus of ``bench.search_latency`` (build it with that bench first), asks
held-out queries of another seed than that bench's, each in its own session, with the ANN route
on, and times the parts by wrapping them (``run_in_executor``, ``pool_hits``, ``more_pool_rows``,
``lexical_hits``, ``Hnsw.search``): a profile of one checkout, to read beside the latency bench,
not a result.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from bench._common import command_line, git_rev, load_average, publish, table
from bench.search_latency import (
    WARM_UP,
    corpus_memory,
    pct,
    usearch_top,
)
from mnemoql.engine.retrieval.pipeline import SearchRequest
from mnemoql.engine.store.embedded import _routes
from mnemoql.engine.store.embedded._hnsw import Hnsw

SEED, VECTORS = 7, "text-like"
# (part, wait, run, back) of each trip; (step, wall, cpu, thread) of each timed step
Trips = list[tuple[str, float, float, float]]
Steps = list[tuple[str, float, float, str]]


def _name(fn: Callable[..., Any]) -> str:
    """The work a trip runs: through ``partial(target.run, ticket, partial(fn))`` wrappers."""
    while isinstance(fn, functools.partial):
        inner = [a for a in fn.args if callable(a)]
        fn = inner[-1] if inner else fn.func
    return getattr(fn, "__qualname__", repr(fn))


@contextmanager
def timed(trips: Trips, steps: Steps) -> Iterator[None]:
    """Record every executor trip and the route pool's steps meanwhile."""
    loop_cls = asyncio.BaseEventLoop
    original_rie, original_search = loop_cls.run_in_executor, Hnsw.search
    parts = ("pool_hits", "more_pool_rows", "lexical_hits")
    originals = {name: getattr(_routes, name) for name in parts}

    def rie(self: Any, executor: Any, func: Callable[..., Any], *args: Any) -> Any:
        marks = [time.perf_counter(), 0.0, 0.0]

        def run(*a: Any) -> Any:
            marks[1] = time.perf_counter()
            try:
                return func(*a)
            finally:
                marks[2] = time.perf_counter()

        def done(_: Any) -> None:
            now = time.perf_counter()
            trips.append((_name(func), marks[1] - marks[0], marks[2] - marks[1], now - marks[2]))

        future = original_rie(self, executor, run, *args)
        future.add_done_callback(done)
        return future

    def step(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*a: Any, **k: Any) -> Any:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                thread = threading.current_thread().name.rsplit("-", 1)[0]
                steps.append((label, time.perf_counter() - wall, time.thread_time() - cpu, thread))

        return wrapped

    def search(self: Hnsw, query: Any, count: int) -> Any:
        return step(f"usearch {self.kind} ({count} keys)", original_search)(self, query, count)

    loop_cls.run_in_executor = rie  # type: ignore[method-assign]
    Hnsw.search = search  # type: ignore[method-assign]
    for name, fn in originals.items():
        setattr(_routes, name, step(name, fn))
    try:
        yield
    finally:
        loop_cls.run_in_executor = original_rie  # type: ignore[method-assign]
        Hnsw.search = original_search  # type: ignore[method-assign]
        for name, fn in originals.items():
            setattr(_routes, name, fn)


def beyond_index(steps: Steps) -> Steps:
    """``pool_hits`` less the index searches it ran on its own thread (the rescoring, the
    candidates' filters and the page cut), per search."""
    out: Steps = []
    for label, wall, cpu, thread in steps:
        if label != "pool_hits":
            continue
        mine = [s for s in steps if s[0].startswith("usearch") and s[3] == thread]
        out.append((BEYOND, wall - sum(s[1] for s in mine), cpu - sum(s[2] for s in mine), thread))
    return out


BEYOND = "pool_hits beyond its index searches"


def ms(xs: Sequence[float]) -> str:
    return f"{pct(xs, 50):.2f} / {pct(xs, 95):.2f}" if xs else "-"  # pct: seconds in, ms out


async def run(args: argparse.Namespace) -> str:
    load_at_start = load_average()
    walls: list[float] = []
    cpus: list[float] = []
    floors: list[float] = []
    trips: list[Trips] = []
    steps: Steps = []
    # queries of a seed of its own: neither search_latency's held-out nor its tune ones
    opened = corpus_memory(args.vectors, args.seed, args.size, args.queries + WARM_UP, 2)
    async with opened as (store, memory, qs):
        tag = f"hops-{time.time_ns()}"
        for i, (text, vec) in enumerate(qs):
            t0 = time.perf_counter()
            usearch_top(store, "summary", vec)
            usearch_top(store, "chunk", vec)
            floor = time.perf_counter() - t0
            mine: Trips = []
            theirs: Steps = []
            wall, cpu = time.perf_counter(), time.thread_time()
            with timed(mine, theirs):
                await memory.search(SearchRequest(query=text), f"{tag}-{i}")
            wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
            if i >= WARM_UP:
                walls.append(wall)
                cpus.append(cpu)
                floors.append(floor)
                trips.append(mine)
                steps += theirs + beyond_index(theirs)
    return report(args, load_at_start, walls, cpus, floors, trips, steps)


def report(
    args: argparse.Namespace,
    load_at_start: str,
    walls: list[float],
    cpus: list[float],
    floors: list[float],
    trips: list[Trips],
    steps: Steps,
) -> str:
    n = len(walls)
    by_trip: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for mine in trips:
        for name, wait, ran, back in mine:
            by_trip[name].append((wait, ran, back))
    rows: list[list[object]] = [
        ["Memory.search, wall", "", "1.00", ms(walls)],
        ["its event loop's CPU", "", "1.00", ms(cpus)],
        ["usearch's own top 40, both indexes (event loop)", "", "1.00", ms(floors)],
    ]
    for name, xs in sorted(by_trip.items(), key=lambda kv: -len(kv[1])):
        for part, k in (("wait to start", 0), ("run", 1), ("wait for the loop", 2)):
            rows.append([f"trip: {name}", part, f"{len(xs) / n:.2f}", ms([x[k] for x in xs])])
    by_step: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for label, wall, cpu, thread in steps:
        by_step[(label, thread)].append((wall, cpu))
    for (label, thread), xs in sorted(by_step.items()):
        share = f"{len(xs) / n:.2f}"
        rows.append([f"step: {label} on {thread}", "wall", share, ms([x[0] for x in xs])])
        rows.append([f"step: {label} on {thread}", "CPU", share, ms([x[1] for x in xs])])
    slow = sorted(range(n), key=lambda i: walls[i])[int(0.95 * n) :]

    def mean_ms(xs: Sequence[float]) -> str:
        return f"{1000 * float(np.mean(xs)):.2f}"

    def waits(t: Trips) -> float:
        return sum(x[1] + x[3] for x in t)

    def runs(t: Trips) -> float:
        return sum(x[2] for x in t)

    tail = [
        f"- the slowest 5% ({len(slow)} searches, {1000 * min(walls[i] for i in slow):.1f} ms "
        f"and over), means: event-loop CPU {mean_ms([cpus[i] for i in slow])} ms, trips' waits "
        f"(to start + for the loop) {mean_ms([waits(trips[i]) for i in slow])} ms, trips' runs "
        f"{mean_ms([runs(trips[i]) for i in slow])} ms; all searches: event-loop CPU "
        f"{mean_ms(cpus)}, waits {mean_ms([waits(t) for t in trips])}, runs "
        f"{mean_ms([runs(t) for t in trips])} ms"
    ]
    return (
        "# Where a warm Memory.search's time goes (embedded, 100k)\n\n"
        f"Command: `{command_line()}`\n\n"
        f"Commit {git_rev()}; {n} held-out queries after {WARM_UP} warm-up ones; load average "
        f"at start {load_at_start}, at the end {load_average()}; p95 ratio to usearch's own "
        f"top 40 on both indexes {pct(walls, 95) / pct(floors, 95):.1f}x.\n\n"
        + table(["part", "", "per search", "p50 / p95 ms"], rows)
        + "\n\n"
        + "\n".join(tail)
        + "\n"
    )


def cli(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--out", default="/tmp/search_hops.md")
    args = p.parse_args(argv)
    args.seed, args.vectors = SEED, VECTORS  # the latency bench's default corpus
    publish(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    cli()
