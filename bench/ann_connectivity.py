"""HNSW connectivity (M) for the embedded store's index at a million events.

    python -m bench.ann_connectivity                       # the cached 1M corpus, M 16 and 32
    python -m bench.ann_connectivity --events 300000 --m 16,24,32

Reads the summary vectors of a corpus that ``bench.search_latency`` wrote (its float32 mirror
files), builds one usearch int8 index per M the way the store does (efConstruction 64, cosine,
two build threads), and asks it what a route asks: ``--fetch`` candidates (40 x the 10x
over-fetch) for queries near random events (the bench's ``TextLikeVectors.near``), at several
search beams. Reported per M and beam: build time, recall@40 of the fetch against the exact top
40 by a numpy scan of the same vectors (what exact rescoring can recover), its worst query, the
share of queries with all 40 found, and search p50 / p95 on one thread.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from usearch.index import Index

from bench._common import RESULTS, command_line, git_rev, load_average, machine_line, publish, table
from bench.search_latency import DIMS, TextLikeVectors, corpus_path
from mnemoql.engine.store.embedded._hnsw import EXPANSION_ADD

F32 = npt.NDArray[np.float32]
K = 40


def summary_vectors(corpus: Path, n: int) -> F32:
    """The first ``n`` summary vectors of the corpus's mirror files, in memory."""
    manifests = sorted(corpus.glob("memory.db.mirror/*/manifest.json"))
    if not manifests:
        raise SystemExit(f"no mirror files under {corpus}: run bench.search_latency first")
    held = json.loads(manifests[-1].read_text())["n"]
    if n > held:
        raise SystemExit(f"{corpus} holds {held:,} events, fewer than {n:,}")
    mapped = np.memmap(manifests[-1].parent / "events.f32", np.float32, "r", shape=(n, DIMS))
    return np.array(mapped)


def exact_top(data: F32, queries: F32) -> npt.NDArray[np.int64]:
    out = np.empty((len(queries), K), dtype=np.int64)
    for s in range(0, len(queries), 50):
        scores = queries[s : s + 50] @ data.T
        part = np.argpartition(-scores, K, axis=1)[:, :K]
        out[s : s + 50] = part
    return out


def pct(xs: Sequence[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000, p))


def run(args: argparse.Namespace) -> str:
    load0 = load_average()
    corpus = Path(args.corpus) if args.corpus else corpus_path("text-like", 7, 1_000_000)
    data = summary_vectors(corpus, args.events)
    rng = np.random.default_rng(args.seed)
    queries = TextLikeVectors().near(rng, data[rng.integers(0, len(data), args.queries)], 0.7)
    want = exact_top(data, queries)
    keys = np.arange(len(data), dtype=np.uint64)
    rows = []
    for m in [int(x) for x in args.m.split(",")]:
        index = Index(
            ndim=DIMS, metric="cos", dtype="i8", connectivity=m, expansion_add=EXPANSION_ADD
        )
        t0 = time.perf_counter()
        for s in range(0, len(data), 65_536):
            index.add(keys[s : s + 65_536], data[s : s + 65_536], threads=2)
        built = time.perf_counter() - t0
        for ef in [int(x) for x in args.ef.split(",")]:
            index.expansion_search = ef
            recall, times = [], []
            for q, exact in zip(queries, want, strict=True):
                t = time.perf_counter()
                got = index.search(q, args.fetch, threads=1).keys
                times.append(time.perf_counter() - t)
                recall.append(len(set(got.tolist()) & set(exact.tolist())) / K)
            complete = np.mean([r == 1 for r in recall])
            timing = f"{pct(times, 50):.1f} / {pct(times, 95):.1f}"
            rows.append([
                m, f"{built:.0f}", ef, f"{np.mean(recall):.4f}", f"{min(recall):.3f}",
                f"{complete:.1%}", timing, load_average(),
            ])  # fmt: skip
            print(rows[-1], flush=True)
        del index
    headers = [
        "M", "build s", "search beam (ef)", "recall@40 of the fetch", "worst query",
        "queries with all 40", "search p50 / p95 ms", "load average",
    ]  # fmt: skip
    return "\n".join([
        "# HNSW connectivity at a million events (embedded ANN index)",
        "",
        f"Command: `{command_line()}`",
        "",
        f"Commit {git_rev()}; {machine_line(load0)}. {len(data):,} summary vectors of "
        f"`{corpus}`, {len(queries)} queries near random events, fetch {args.fetch}; usearch "
        f"int8, cosine, efConstruction {EXPANSION_ADD}, built with 2 threads, searched on one.",
        "",
        table(headers, rows),
        "",
    ])


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", default="", help="a bench.search_latency corpus directory")
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--m", default="16,32")
    p.add_argument("--ef", default="800,1600,3200")
    p.add_argument("--fetch", type=int, default=400)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--out", default=str(RESULTS / "ann_connectivity.md"))
    p.add_argument("--no-write", action="store_true")
    return p.parse_args(argv)


def cli(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    publish(run(args), args.out, write=not args.no_write)


if __name__ == "__main__":
    cli()
