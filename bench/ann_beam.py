"""The search beam of the embedded store's ANN route, chosen on tune queries (issue #30).

    python -m bench.ann_beam                          # 1,000 tune and 1,000 held-out queries
    python -m bench.ann_beam --queries 300 --beams 1.25,2,1/1.5 --out /tmp/beam.md

It opens the cached 100k corpus of ``bench.search_latency`` (build it with that bench first) and
asks, for each pair of beams (``expansion_search`` per key fetched, summary / chunk index),
both vector routes at once as a search does (``pool_hits``: two 120-key index searches, each
route rescoring their union), against the exact scan's pages for the same queries: how many
queries get both 40-event route pages exactly, the share of the exact pages' members found, and
how many route top 4 are exact.
The tune queries are ``bench.search_latency --tune``'s (seed + size + 1), the held-out ones its
default queries (seed + size). A beam is chosen on the tune rows; the held-out rows are reported
beside them. Latency is not measured here (``bench.search_latency --expansion``).
"""

from __future__ import annotations

import argparse
import asyncio
import time

import numpy as np

from bench._common import RESULTS, command_line, git_rev, load_average, machine_line, publish, table
from bench.search_latency import VECTOR_MODELS, ann_settings, built_corpus, pick_queries, settled
from mnemoql.engine.models import EMPTY_FILTERS
from mnemoql.engine.retrieval.routes import ROUTE_LIMIT
from mnemoql.engine.store.embedded import EmbeddedStore, _hnsw
from mnemoql.engine.store.embedded._index import normalise
from mnemoql.engine.store.embedded._search import pool_hits


async def measure(args: argparse.Namespace) -> str:
    path = built_corpus(args.vectors, args.seed, args.size)
    store = EmbeddedStore(path / "memory.db", ann=ann_settings())
    await store.open()
    started, load = time.monotonic(), load_average()
    rows: list[list[str]] = []
    default = _hnsw.BEAMS
    try:
        await settled(store, args.size)
        db = store._database
        view, gen = db.events, db.generation
        model = VECTOR_MODELS[args.vectors]()
        for split, offset in (("tune", 1), ("held-out", 0)):
            rng = np.random.default_rng(args.seed + args.size + offset)
            queries = [normalise(v) for _, v in pick_queries(rng, store, args.queries, model)]
            exact = [
                pool_hits(view, gen, None, q, EMPTY_FILTERS, frozenset(), None, None, ROUTE_LIMIT)
                for q in queries
            ]
            for beam in args.beams:
                _hnsw.BEAMS = beam
                pages = members = wanted = top4 = 0
                for q, want in zip(queries, exact, strict=True):
                    got = pool_hits(
                        view, gen, db.ann, q, EMPTY_FILTERS, frozenset(), None, None, ROUTE_LIMIT
                    )
                    same = True
                    for mine, theirs in zip(got, want, strict=True):
                        a, b = [h.event_id for h in mine], [h.event_id for h in theirs]
                        same &= a == b
                        members += len(set(a) & set(b))
                        wanted += len(b)
                        top4 += a[:4] == b[:4]
                    pages += same
                n = len(queries)
                rows.append(
                    [
                        split,
                        str(beam),
                        f"{pages / n:.1%}",
                        f"{members / wanted:.3%}",
                        f"{(wanted - members) / n:.3f}",
                        f"{top4 / (2 * n):.2%}",
                    ]
                )
    finally:
        _hnsw.BEAMS = default
        await store.close()
    header = [
        "queries",
        "beam x the fetch, summary / chunk",
        "both route pages exact",
        "exact pages' members found",
        "members missed per query",
        "route top 4 exact",
    ]
    return "\n".join(
        [
            "# The ANN search beam: route pages against the exact scan (embedded, 100k)",
            "",
            f"Command: `{command_line()}`",
            "",
            f"Commit {git_rev()}; {machine_line(load)}; {args.vectors} vectors, "
            f"{args.size:,} events (`bench.search_latency`'s cached corpus); {args.queries} tune "
            f"and {args.queries} "
            f"held-out queries; both routes at once (`pool_hits`, {ROUTE_LIMIT} events a route, "
            f"the first fetch of the default settings); load average at the end {load_average()}; "
            f"{time.monotonic() - started:.0f} s.",
            "",
            table(header, rows),
            "",
        ]
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--queries", type=int, default=1000, help="queries per split")
    p.add_argument(
        "--beams",
        type=lambda s: [_hnsw.Beams.parse(x) for x in s.split(",")],
        default=[_hnsw.Beams.parse(x) for x in ("1.25", "1.5", "1.75", "2", "1/1.5", "1/1.75")],
        help="beams per key fetched, comma-separated: 1.5 (both indexes) or 1/1.5 (summary/chunk)",
    )
    p.add_argument("--size", type=int, default=100_000, help="the cached corpus's events")
    p.add_argument("--vectors", choices=sorted(VECTOR_MODELS), default="text-like")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default=str(RESULTS / "ann_beam.md"))
    args = p.parse_args()
    publish(asyncio.run(measure(args)), args.out)


if __name__ == "__main__":
    main()
