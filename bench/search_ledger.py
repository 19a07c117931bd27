"""A search in a session that already holds delivered events, at 100k (issue #30): what the
session's ledger costs the ANN route, and how often the ranking still picks the exact scan's
4 events.

    python -m bench.search_ledger --queries 200

A session excludes every event it was given (up to 640 ids, ``engine.sessions.MAX_IDS``), and
the ANN route asks each index for 40 x the first over-fetch plus room for them (before
session 25: one key per excluded id), with a beam that grows with the fetch. Each held-out
query is ranked (``Ranker.rank``: the route pool and the ranking, no session file, no
delivery) in scenarios of two kinds: a ledger of ``L`` events of other questions (random
events), and ``c`` earlier calls of the same question (their picks excluded, as a follow-up
in its session). Each scenario ranks through the ANN route and through the exact scan with
the same exclusions; reported per scenario: the ANN ranking's p50 / p95, the largest fetch it
asked an index for, and the share of queries whose 4 picks are the exact scan's, in order.
It opens the cached corpus of ``bench.search_latency`` (build it with that bench first).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

import numpy as np

from bench._common import RESULTS, command_line, git_rev, load_average, machine_line, publish, table
from bench.search_latency import VECTOR_MODELS, corpus_memory, counted, use_index
from mnemoql.engine.models import EMPTY_FILTERS

WARM_UP = 5
LEDGERS = (0, 160, 640)  # other questions' events in the session (640: MAX_IDS)
CALLS = (0, 1, 3)  # earlier calls of the same question


async def measure(args: argparse.Namespace) -> str:
    load, started = load_average(), time.monotonic()
    scenarios = [(ledger, calls) for calls in CALLS for ledger in LEDGERS]
    times: dict[tuple[int, int], list[float]] = {s: [] for s in scenarios}
    same = dict.fromkeys(scenarios, 0)
    keys: dict[tuple[int, int], list[int]] = {s: [] for s in scenarios}
    rng = random.Random(args.seed)
    split = 1 if args.tune else 0  # search_latency's tune queries, else its held-out ones
    opened = corpus_memory(args.vectors, args.seed, args.size, args.queries + WARM_UP, split)
    async with opened as (store, memory, queries):
        ranker = memory.retriever.ranker
        view = store._database.events
        ids = view.ids[: view.n]

        async def picks(query: str, vec: np.ndarray, excluded: frozenset[str]) -> list[str]:
            return (await ranker.rank(query, vec, EMPTY_FILTERS, excluded, 4, None)).picked

        for i, (text, vec) in enumerate(queries):
            for ledger, calls in scenarios if i % 2 == 0 else scenarios[::-1]:
                excluded = frozenset(rng.sample(ids, ledger))
                use_index(store, False)
                for _ in range(calls):  # the exact chain of this question's earlier calls
                    excluded |= frozenset(await picks(text, vec, excluded))
                want = await picks(text, vec, excluded)
                use_index(store, True)
                asked: list[int] = []
                with counted(asked):
                    t0 = time.perf_counter()
                    got = await picks(text, vec, excluded)
                    took = time.perf_counter() - t0
                if i < WARM_UP:
                    continue
                times[(ledger, calls)].append(took)
                same[(ledger, calls)] += got == want
                keys[(ledger, calls)].append(max(asked, default=0))
    timed = args.queries
    split_name = "tune" if args.tune else "held-out"
    rows = []
    for ledger, calls in scenarios:
        ms = np.asarray(times[(ledger, calls)]) * 1000
        rows.append(
            [
                f"{ledger}",
                f"{calls}",
                f"{np.percentile(ms, 50):.2f} / {np.percentile(ms, 95):.2f}",
                f"{np.mean(keys[(ledger, calls)]):.0f}",
                f"{same[(ledger, calls)] / timed:.1%}",
            ]
        )
    return "\n".join(
        [
            "# A search with a session's ledger: ANN cost and the exact scan's picks (embedded, "
            f"{args.size:,} events)",
            "",
            f"Command: `{command_line()}`",
            "",
            f"Commit {git_rev()}; {machine_line(load)}; {timed} {split_name} queries of "
            "`bench.search_latency` after "
            f"{WARM_UP} warm-up ones, every scenario per query in alternating order; load average "
            f"at the end {load_average()}; {time.monotonic() - started:.0f} s.",
            "",
            table(
                [
                    "other questions' events excluded",
                    "earlier calls of this question",
                    "ANN ranking p50 / p95 ms",
                    "largest fetch asked of an index (mean keys)",
                    "same 4 picks as the exact scan",
                ],
                rows,
            ),
            "",
        ]
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--size", type=int, default=100_000, help="the cached corpus's events")
    p.add_argument("--vectors", choices=sorted(VECTOR_MODELS), default="text-like")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--tune", action="store_true", help="the tune queries (another seed)")
    p.add_argument("--out", default=str(RESULTS / "search_ledger.md"))
    args = p.parse_args()
    if args.queries <= 0:
        p.error("--queries must be positive")
    publish(asyncio.run(measure(args)), args.out)


if __name__ == "__main__":
    main()
