"""Query embedding latency while saves keep the local model busy: queue order and workers.

    python -m bench.embed_priority                 # 4 savers of long turns, 25 queries a setting
    python -m bench.embed_priority --savers 8 --queries 40 --rounds 2

``--savers`` tasks embed LongMemEval turns back to back (as concurrent saves or an import do)
while one client embeds a fresh query every 0.3 s and times it. Each setting runs on a new
``LocalEmbedder`` with the query cache off, in rounds that alternate the settings so the
machine's load falls on all of them:

- ``fifo``: every call in one queue in arrival order (the embedder before the engine pool);
- ``priority``: the engine pool's order (queries first, a passage after every 4 queries);

each with 1 and 2 workers. Nothing is asserted; the table goes to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from bench._common import data_dir
from mnemoql.engine.providers.enginepool import EnginePool
from mnemoql.engine.providers.local import LocalEmbedder

PAUSE_S = 0.3


def turns(n: int) -> list[str]:
    data = json.loads((data_dir() / "longmemeval_s_dev40.json").read_text(encoding="utf-8"))
    out = [t["content"] for item in data for s in item["haystack_sessions"] for t in s]
    return out[:n]


def _fifo(pool: EnginePool[Any]) -> None:
    """Every job queued as a passage: one queue in arrival order."""
    submit = pool.submit

    def as_passage(fn: Callable[[Any], Any], *, query: bool) -> Future[Any]:
        return submit(fn, query=False)

    pool.submit = as_passage  # type: ignore[method-assign]


async def one_setting(order: str, workers: int, texts: list[str], savers: int, queries: int,
                      tag: str) -> list[float]:  # fmt: skip
    emb = LocalEmbedder(workers=workers, query_cache=0)
    if order == "fifo":
        _fifo(emb._pool)
    await emb.warm_up()
    stop = asyncio.Event()

    async def saver(k: int) -> None:
        i = k
        while not stop.is_set():
            await emb.embed([texts[i % len(texts)], texts[(i + 1) % len(texts)]], "passage")
            i += savers

    tasks = [asyncio.create_task(saver(k)) for k in range(savers)]
    await asyncio.sleep(1.0)
    latencies = []
    for q in range(queries):
        t0 = time.perf_counter()
        await emb.embed([f"what did I say about item {q} ({tag})?"], "query")
        latencies.append((time.perf_counter() - t0) * 1000)
        await asyncio.sleep(PAUSE_S)
    stop.set()
    await asyncio.gather(*tasks)
    emb._pool.close()
    return latencies


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


async def main_async(args: argparse.Namespace) -> str:
    texts = turns(200)
    settings = [(o, w) for w in (1, 2) for o in ("fifo", "priority")]
    got: dict[tuple[str, int], list[float]] = {s: [] for s in settings}
    load0 = os.getloadavg()[0]
    for r in range(args.rounds):
        for order, workers in settings:
            tag = f"{order}-{workers}-{r}"
            got[(order, workers)] += await one_setting(
                order, workers, texts, args.savers, args.queries, tag
            )
    load1 = os.getloadavg()[0]
    cmd = "python -m bench.embed_priority " + " ".join(sys.argv[1:])
    lines = [
        f"`{cmd}`",
        "",
        f"{args.savers} savers embedding two LongMemEval turns per call chain, one query every "
        f"{PAUSE_S} s; {os.cpu_count()} cores, load average {load0:.1f} at the start, "
        f"{load1:.1f} at the end.",
        "",
        "| queue order | workers | queries | query p50 ms | p95 ms | max ms |",
        "|---|---|---|---|---|---|",
    ]
    for order, workers in settings:
        xs = got[(order, workers)]
        lines.append(
            f"| {order} | {workers} | {len(xs)} | {statistics.median(xs):.0f} "
            f"| {pct(xs, 0.95):.0f} | {max(xs):.0f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--savers", type=int, default=4)
    p.add_argument("--queries", type=int, default=25)
    p.add_argument("--rounds", type=int, default=1)
    args = p.parse_args(argv)
    print(asyncio.run(main_async(args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
