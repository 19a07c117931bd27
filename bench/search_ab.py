"""``Memory.search`` with the store's search beam against another beam, query by query in one
process, so that the machine's noise hits both alike (issue #30).

    python -m bench.search_ab --beam 2 --queries 300
    python -m bench.search_ab --beam 1.25 --out /tmp/ab.md

Separate runs of ``bench.search_latency`` on this shared machine move by 10-25% between
minutes, more than a change of a millisecond in a 10 ms search. Here every held-out query (of
another seed than that bench's) is searched twice, under the default beam (A) and under
``--beam`` (B), in alternating order, each in a fresh session and after a scan of the summary
vectors that leaves the caches cold, as a search meets them between an agent's calls; usearch's
own top 40 on both indexes is timed beside them. Reported: p50 / p95 / mean of A, B and the
comparator, the median and mean of B - A per query, and each side's p95 ratio to the
comparator (colder than ``bench.search_latency``'s, so higher). It opens the cached corpus of
``bench.search_latency`` (build it with that bench first).
"""

from __future__ import annotations

import argparse
import asyncio
import time

import numpy as np

from bench._common import RESULTS, command_line, git_rev, load_average, machine_line, publish, table
from bench.search_latency import VECTOR_MODELS, corpus_memory, usearch_top
from mnemoql.engine.retrieval.pipeline import SearchRequest
from mnemoql.engine.store.embedded import _hnsw

WARM_UP = 5
SEED_OFFSET = 23  # queries of their own: neither search_latency's tune nor held-out ones


async def measure(args: argparse.Namespace) -> str:
    default, other = _hnsw.BEAMS, args.beam
    load, started = load_average(), time.monotonic()
    times: dict[str, list[float]] = {"A": [], "B": [], "usearch": []}
    opened = corpus_memory(args.vectors, args.seed, args.size, args.queries + WARM_UP, SEED_OFFSET)
    async with opened as (store, memory, queries):
        view = store._database.events
        summaries = view.vecs[: view.n]
        tag = f"ab-{time.time_ns()}"
        try:
            for i, (text, vec) in enumerate(queries):
                for side in ("A", "B") if i % 2 == 0 else ("B", "A"):
                    _hnsw.BEAMS = default if side == "A" else other
                    float((summaries @ vec).max())  # caches cold, as between an agent's calls
                    t0 = time.perf_counter()
                    await memory.search(SearchRequest(query=text), f"{tag}-{i}-{side}")
                    if i >= WARM_UP:
                        times[side].append(time.perf_counter() - t0)
                float((summaries @ vec).max())
                t0 = time.perf_counter()
                usearch_top(store, "summary", vec)
                usearch_top(store, "chunk", vec)
                if i >= WARM_UP:
                    times["usearch"].append(time.perf_counter() - t0)
        finally:
            _hnsw.BEAMS = default
    ms = {k: np.asarray(v) * 1000 for k, v in times.items()}
    floor = float(np.percentile(ms["usearch"], 95))
    rows = [
        [
            label,
            f"{np.percentile(ms[k], 50):.2f} / {np.percentile(ms[k], 95):.2f}",
            f"{ms[k].mean():.2f}",
            "" if k == "usearch" else f"{np.percentile(ms[k], 95) / floor:.2f}x",
        ]
        for k, label in (
            ("A", f"Memory.search, beams {default} (the default)"),
            ("B", f"Memory.search, beams {other}"),
            ("usearch", "usearch's own top 40, both indexes"),
        )
    ]
    diff = ms["B"] - ms["A"]
    return "\n".join(
        [
            "# Memory.search A/B: the search beam, query by query (embedded, 100k)",
            "",
            f"Command: `{command_line()}`",
            "",
            f"Commit {git_rev()}; {machine_line(load)}; {args.queries} held-out queries after "
            f"{WARM_UP} warm-up ones, each searched under both beams in alternating order; load "
            f"average at the end {load_average()}; {time.monotonic() - started:.0f} s.",
            "",
            table(["search", "p50 / p95 ms", "mean ms", "p95 / usearch's p95"], rows),
            "",
            f"B - A per query: median {np.median(diff):+.3f} ms, mean {diff.mean():+.3f} ms.",
            "",
        ]
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--beam",
        type=_hnsw.Beams.parse,
        required=True,
        help="B's beams per key fetched: 1.5 (both indexes) or 1/1.5 (summary/chunk)",
    )
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--size", type=int, default=100_000, help="the cached corpus's events")
    p.add_argument("--vectors", choices=sorted(VECTOR_MODELS), default="text-like")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default=str(RESULTS / "search_ab.md"))
    args = p.parse_args()
    if args.queries <= 0:
        p.error("--queries must be positive")
    publish(asyncio.run(measure(args)), args.out)


if __name__ == "__main__":
    main()
