"""What the lexical route costs a search: ``Memory.search`` with it on and off, interleaved.

    python -m bench.lexical_latency                   # synthetic 100k + LongMemEval text
    python -m bench.lexical_latency --sizes 10000 --queries 100 --no-text

Two corpora, each searched with the route on and off, query by query (machine noise hits both
alike), with a stub embedder (embedding excluded) and a fresh session per query:

* **synthetic** (``bench.search_latency.make_plan``): 150 words in random order, so every word
  is in about 40 % of the chunks. BM25 gives such words no weight, the route's term budget
  drops them (``engine/store/embedded/_lexical.py``), and what remains is the route's fixed
  cost (one vocabulary lookup per query term);
* **text**: every exchange of the 40 LongMemEval haystacks (~9.7k events of real conversation,
  ~31k chunks) with random vectors, queried with the 40 questions and with 3-8 words drawn from
  the texts: real posting lists, where the budget keeps the rarest terms.

Also the lexical route alone (``store.lexical_route``) on each corpus.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench._common import (
    RESULTS,
    Bench,
    command_line,
    data_dir,
    git_rev,
    load_average,
    machine_line,
    open_memory,
    publish,
    table,
)
from bench.retrieval_quality import units_of
from bench.search_latency import DIMS, Corpus, StubEmbedder, grow, unit
from mnemoql.engine.drafts import EventDraft, SavePlan
from mnemoql.engine.models import EMPTY_FILTERS, Chunk, MemoryMeta
from mnemoql.engine.retrieval.pipeline import SearchRequest
from mnemoql.engine.retrieval.routes import ROUTE_LIMIT
from mnemoql.engine.text import chunk_ranges, content_hash, text_hash


def pct(xs: Sequence[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000.0, p)) if xs else float("nan")


async def load_text(bench: Bench, rng: np.random.Generator) -> list[str]:
    """Every LongMemEval exchange as one event (random vectors); returns sample queries."""
    data = json.loads((data_dir() / "longmemeval_s_dev40.json").read_text("utf-8"))
    meta = MemoryMeta(StubEmbedder().model, DIMS, "2026-01-01T00:00:00+08:00")
    seen: set[str] = set()
    drafts: list[EventDraft] = []
    words: list[str] = []
    for qi, item in enumerate(data):
        for si, session in enumerate(item["haystack_sessions"]):
            for u in units_of(si, session, None):
                if u.content in seen:
                    continue
                seen.add(u.content)
                ranges = chunk_ranges(len(u.content))
                vecs = unit(rng.standard_normal((len(ranges) + 1, DIMS)))
                chunks = [
                    Chunk("", j, s, e, u.content[s:e], text_hash(u.content[s:e]), vecs[j + 1])
                    for j, (s, e) in enumerate(ranges)
                ]
                drafts.append(
                    EventDraft(
                        f"e{len(drafts)}", u.summary_source[:150] or "(empty)", u.content,
                        None, content_hash(u.content), vecs[0], chunks,
                        given_id=f"q{qi}_s{si}_{len(drafts)}",
                    )
                )  # fmt: skip
                if len(words) < 50_000:
                    words += u.summary_source.split()[:20]
    for i in range(0, len(drafts), 500):
        await bench.store.apply_save(
            SavePlan(drafts[i : i + 500], [], [], "2026-01-01T10:00:00+08:00", "2026-01-01", meta)
        )
    picks = [d["question"] for d in data]
    for _ in range(60):
        picks.append(" ".join(rng.choice(words, int(rng.integers(3, 9))).tolist()))
    return picks


async def measure(
    bench: Bench, stub: StubEmbedder, texts: list[str], rng: np.random.Generator, tag: str
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"on": [], "off": [], "route": []}
    memory, ranker = bench.memory, bench.memory.retriever.ranker
    for i, text in enumerate(texts):
        stub.vectors[text] = unit(rng.standard_normal(DIMS))
        order = (True, False) if i % 2 == 0 else (False, True)
        for lexical in order:
            ranker.lexical = lexical
            t0 = time.perf_counter()
            await memory.search(SearchRequest(query=text), f"{tag}-{lexical}-{i}")
            if i >= 5:
                out["on" if lexical else "off"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await bench.store.lexical_route(text, EMPTY_FILTERS, frozenset(), ROUTE_LIMIT)
        if i >= 5:
            out["route"].append(time.perf_counter() - t0)
    ranker.lexical = True
    return out


def row(name: str, events: int, m: dict[str, list[float]], load: str) -> list[Any]:
    on95, off95 = pct(m["on"], 95), pct(m["off"], 95)
    return [
        name,
        f"{events:,}",
        f"{pct(m['off'], 50):.1f} / {off95:.1f}",
        f"{pct(m['on'], 50):.1f} / {on95:.1f}",
        f"{on95 / off95:.2f}x",
        f"{pct(m['route'], 50):.1f} / {pct(m['route'], 95):.1f}",
        load,
    ]


async def main(args: argparse.Namespace) -> str:
    started = time.perf_counter()
    load_at_start = load_average()
    rng = np.random.default_rng(args.seed)
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory(prefix="mnemoql-lexlat-") as tmp:
        if not args.no_text:
            stub = StubEmbedder()
            bench = await open_memory(Path(tmp) / "text", embedder=stub)
            try:
                t0 = time.perf_counter()
                queries = await load_text(bench, rng)
                n = (await bench.store.counts()).events
                print(f"text corpus: {n} events in {time.perf_counter() - t0:.0f}s",
                      file=sys.stderr, flush=True)  # fmt: skip
                m = await measure(bench, stub, queries, rng, "text")
                rows.append(row("LongMemEval text", n, m, load_average()))
                print(rows[-1], file=sys.stderr, flush=True)
            finally:
                await bench.close()
        stub = StubEmbedder()
        bench = await open_memory(Path(tmp) / "synthetic", embedder=stub)
        corpus = Corpus([], [])
        try:
            for size in [int(s) for s in args.sizes.split(",")]:
                await grow(bench.store, corpus, size, rng)
                words = "memory graph search event budget travel paris coffee dinner"
                texts = [
                    f"q{i} " + " ".join(rng.choice(words.split(), 6).tolist())
                    for i in range(args.queries + 5)
                ]
                m = await measure(bench, stub, texts, rng, f"s{size}")
                rows.append(row("synthetic (search_latency)", size, m, load_average()))
                print(rows[-1], file=sys.stderr, flush=True)
        finally:
            await bench.close()
    head = [
        "corpus",
        "events",
        "search, lexical off p50 / p95 ms",
        "search, lexical on p50 / p95 ms",
        "p95 on / off",
        "lexical route alone p50 / p95 ms",
        "load average",
    ]
    return (
        "# Lexical route latency\n\n"
        f"Command: `{command_line()}`\n\n"
        f"Commit {git_rev()}; {machine_line(load_at_start)}. Wall time "
        f"{time.perf_counter() - started:.0f} s. `Memory.search` server side (stub embedder), "
        "on and off interleaved per query, fresh session per call.\n\n" + table(head, rows) + "\n"
    )


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="100000")
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--no-text", action="store_true", help="skip the LongMemEval text corpus")
    p.add_argument("--out", default=str(RESULTS / "lexical_latency.md"))
    p.add_argument("--no-write", action="store_true")
    return p.parse_args(argv)


def cli(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    publish(asyncio.run(main(args)), args.out, write=not args.no_write)


if __name__ == "__main__":
    cli()
