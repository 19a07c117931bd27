"""The pages Memory.search delivers for the latency bench's queries, written as JSON lines with
each delivered event's explain (ranks, scores, MMR step), so two checkouts can be compared page
for page (a speed-up must not change a result); with
``--profile N``, cProfile N of those searches instead and print where their time goes.

    python -m bench.search_pages --size 100000 --out /tmp/pages_branch.jsonl
    cd ../main && python -m bench.search_pages --size 100000 --out /tmp/pages_main.jsonl
    cmp /tmp/pages_main.jsonl /tmp/pages_branch.jsonl

It opens the cached corpus of ``bench.search_latency`` (build it with that bench first) and
asks the same held-out queries, with the ANN route on, each in its own session.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import json
import os
import pstats
import sys
from collections.abc import Sequence
from typing import Any

from bench.search_latency import (
    VECTOR_MODELS,
    WARM_UP,
    corpus_memory,
)
from mnemoql.engine.retrieval.evidence import EvidencePage
from mnemoql.engine.retrieval.pipeline import SearchRequest


def page_record(page: EvidencePage) -> dict[str, Any]:
    """Everything a page delivers but its cursor token (random per call)."""
    out = dataclasses.asdict(page)
    out.pop("cursor", None)
    return out


async def run(args: argparse.Namespace) -> None:
    # the bench's held-out queries (same seed as bench.search_latency), the store not settled
    opened = corpus_memory(
        args.vectors, args.seed, args.size, args.queries + WARM_UP, 0, settle=False
    )
    async with opened as (_, memory, qs):
        if args.profile:
            for i, (text, _) in enumerate(qs[:WARM_UP]):
                await memory.search(SearchRequest(query=text), f"{args.tag}-warm-{i}")
            prof = cProfile.Profile()
            prof.enable()
            for i, (text, _) in enumerate(qs[: args.profile]):
                await memory.search(SearchRequest(query=text), f"{args.tag}-prof-{i}")
            prof.disable()
            if args.dump:
                prof.dump_stats(args.dump)
            stats = pstats.Stats(prof, stream=sys.stdout).sort_stats("cumulative")
            stats.print_stats(args.lines)
            stats.sort_stats("tottime").print_stats(args.lines)
            return
        with open(args.out, "w", encoding="utf-8") as f:
            for i, (text, _) in enumerate(qs):
                found = await memory.search(SearchRequest(query=text), f"{args.tag}-pages-{i}")
                line = {
                    "query": text,
                    "page": page_record(found.page),
                    "explain": {i: dataclasses.asdict(e) for i, e in found.explain.items()},
                }
                f.write(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n")


def cli(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=400)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--vectors", default="text-like", choices=sorted(VECTOR_MODELS))
    p.add_argument("--out", default="/tmp/search_pages.jsonl")
    p.add_argument("--profile", type=int, default=0, help="cProfile this many searches")
    p.add_argument("--tag", default=f"pages{os.getpid()}", help="session name prefix")
    p.add_argument("--dump", default="", help="with --profile: also write the stats here")
    p.add_argument("--lines", type=int, default=45)
    asyncio.run(run(p.parse_args(argv)))


if __name__ == "__main__":
    cli()
