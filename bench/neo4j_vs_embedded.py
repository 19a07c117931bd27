"""The Neo4j store next to the embedded store on the same synthetic corpus, and Neo4j's exact
cosine scans next to its vector indexes.

    python -m bench.neo4j_vs_embedded --sizes 300,1000,10000 --neo4j-only-sizes 100000
    python -m bench.neo4j_vs_embedded --sizes 1000 --neo4j-only-sizes "" --queries 50

The corpus is the one of ``bench.search_latency`` (same generator, same seed): events with
384-dimensional unit vectors, 1-2 chunks each and 2 MENTIONS over 500 concepts, written in
plans of 1000 events through ``store.apply_save``. Both stores get the very same plans.

Per store it measures
* bulk writes: events/s while the corpus grows (1000-event plans);
* ``apply_save`` of single-event plans (1 event, 1-2 chunks, 2 relations): plans/s, on a fresh
  space, sequentially;
* ``Memory.save`` through the whole pipeline (offline extractor, the hashing embedder) on a
  fresh space: saves/s, sequentially, on real conversational text (LongMemEval) when present;
* ``Memory.search`` p50 / p95 at each size with a stub embedder returning a precomputed query
  vector (embedding excluded), fresh session per query -- on Neo4j twice: with the store as
  configured (the automatic route strategy) and with a store that only scans exactly.

For Neo4j it also times each route (summary, chunk) as an exact scan (``vector.similarity.
cosine`` over every event or chunk of the space) and through the store's index query
(``db.index.vector.queryNodes`` fetching ``k * f`` candidates, f = 4, 10, 20, filtered to the
space and rescored exactly), and reports recall@40 of each index variant against exact, so the
sizes where each wins show.

Neo4j comes from ``--neo4j-uri`` / ``--neo4j-password`` or else a managed server started in a
temporary home (``--heap``, ``--page-cache``) and stopped at the end. The report is rewritten
after every size. Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import numpy as np

from bench._common import (
    RESULTS,
    command_line,
    git_rev,
    load_average,
    machine_line,
    neo4j_arguments,
    publish,
    table,
)
from bench.search_latency import (
    DIMS,
    PLAN_EVENTS,
    VECTOR_MODELS,
    WORDS,
    Corpus,
    StubEmbedder,
    VectorModel,
    make_plan,
    pct,
    queries,
)
from mnemoql.engine.config import Settings, load_settings
from mnemoql.engine.ingest import SaveInput
from mnemoql.engine.memory import Memory
from mnemoql.engine.models import EMPTY_FILTERS
from mnemoql.engine.providers.factory import Providers, build_providers
from mnemoql.engine.retrieval.pipeline import SearchRequest
from mnemoql.engine.retrieval.routes import ROUTE_LIMIT
from mnemoql.engine.store.base import Store
from mnemoql.engine.store.embedded import EmbeddedStore
from mnemoql.engine.store.neo4j import _cypher_route as qroute
from mnemoql.engine.store.neo4j import _records as rec
from mnemoql.engine.store.neo4j._routes import INDEX_OVERFETCH
from mnemoql.engine.store.neo4j.store import Neo4jStore

K = ROUTE_LIMIT
S = TypeVar("S", bound=Store)
FACTORS = (4, 10, 20, 50)
LME = Path(__file__).resolve().parents[2] / "shared" / "bench" / "longmemeval_s_dev40.json"

@dataclass
class Side:
    """One store with its memory (stub embedder) and what was measured on it."""

    name: str
    store: Store
    memory: Memory
    build_s: float = 0.0
    built: int = 0
    reader: bool = False  # another view of a space some other side writes
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)


def settings_for(path: Path, embedder: str) -> Settings:
    return load_settings(environ={}, data_dir=path, embedding={"provider": embedder})


def memory_on(store: Store, settings: Settings, client: httpx.AsyncClient, stub: Any) -> Memory:
    providers = build_providers(settings, client)
    if stub is not None:
        providers = Providers(stub, providers.extractor, providers.judge)
    return Memory(settings, store, providers)


# ---------------------------------------------------------------- Neo4j


@contextlib.asynccontextmanager
async def neo4j_endpoint(args: argparse.Namespace) -> AsyncIterator[tuple[str, str, str]]:
    if args.neo4j_uri:
        yield args.neo4j_uri, args.neo4j_user, args.neo4j_password
        return
    from mnemoql.engine.store.neo4j.managed import ManagedNeo4j

    with tempfile.TemporaryDirectory(prefix="mnemoql-bench-neo4j-") as home:
        server = ManagedNeo4j(Path(home), heap=args.heap, page_cache=args.page_cache)
        server.install()
        t0 = time.perf_counter()
        server.start(timeout=180)
        print(f"managed Neo4j up in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        try:
            yield server.uri, server.user, server.password
        finally:
            server.stop()


def neo4j_store(
    endpoint: tuple[str, str, str],
    space: str,
    *,
    exact_only: bool = False,
    overfetch: int = INDEX_OVERFETCH,
) -> Neo4jStore:
    """The store as configured by default (automatic route strategy, or another over-fetch
    factor), or scanning exactly."""
    uri, user, password = endpoint
    if exact_only:
        return Neo4jStore(uri, user, password, space=space, connection_timeout=30.0,
                          index_min_events=None)  # fmt: skip
    return Neo4jStore(
        uri, user, password, space=space, connection_timeout=30.0, index_overfetch=overfetch
    )


# ---------------------------------------------------------------- measurements


async def grow(
    sides: Sequence[Side],
    corpus: Corpus,
    target: int,
    rng: np.random.Generator,
    vectors: VectorModel,
) -> None:
    """Apply the same 1000-event plans to every side until the corpus has ``target`` events."""
    while corpus.n < target:
        count = min(PLAN_EVENTS, target - corpus.n)
        plan, ev, ch = make_plan(rng, corpus.n, count, first=corpus.n == 0, vectors=vectors)
        for side in sides:
            if side.reader:
                continue
            t0 = time.perf_counter()
            await side.store.apply_save(plan)
            side.build_s += time.perf_counter() - t0
            side.built += count
        corpus.summaries.append(ev)
        corpus.chunks.append(ch)
        corpus.n += count
        if corpus.n % 10_000 == 0:
            print(f"  {corpus.n} events", file=sys.stderr, flush=True)


async def single_plans(store: Store, n: int, rng: np.random.Generator) -> float:
    """plans/s for ``n`` sequential single-event plans on a fresh space."""
    first, _, _ = make_plan(rng, 0, 1, first=True)  # the 500 concepts the relations point to
    await store.apply_save(first)
    plans = [make_plan(rng, i + 1, 1, first=False)[0] for i in range(n)]
    t0 = time.perf_counter()
    for plan in plans:
        await store.apply_save(plan)
    return n / (time.perf_counter() - t0)


def save_texts(n: int) -> list[str]:
    if LME.exists():
        from bench.save_throughput import corpus

        return corpus(n)
    rng = np.random.default_rng(3)
    names = ["Alice", "Bob", "Carol", "张伟", "Dave"]
    return [
        f"{names[i % 5]}: " + " ".join(rng.choice(WORDS, 60).tolist()) + f" ({i})"
        for i in range(n)
    ]


async def real_saves(memory: Memory, texts: Sequence[str]) -> float:
    """saves/s through ``Memory.save`` (offline extraction, hashing embedder), sequentially."""
    await memory.save(SaveInput(content="warm up: Alice met Bob in Berlin."))
    t0 = time.perf_counter()
    for text in texts:
        await memory.save(SaveInput(content=text))
    return len(texts) / (time.perf_counter() - t0)


async def search_times(
    side: Side, stub: StubEmbedder, qs: Sequence[tuple[str, Any]], tag: str
) -> tuple[list[float], list[list[str]]]:
    """Timings of the timed queries, and the events each query delivered."""
    times, delivered = [], []
    for i, (text, vec) in enumerate(qs):
        stub.vectors[text] = vec
        t0 = time.perf_counter()
        out = await side.memory.search(SearchRequest(query=text), f"{tag}-{i}")
        if i >= 5:
            times.append(time.perf_counter() - t0)
        assert out.page.items, "search delivered nothing"
        delivered.append([item.event_id for item in out.page.items])
    return times, delivered


async def route_variants(store: Neo4jStore, qs: Sequence[tuple[str, Any]]) -> dict[Any, Any]:
    """Exact scans vs the store's index queries (over-fetch k*f, exact rescoring), per route.
    ``store`` scans exactly; the index variants run the store's own ``qroute.BY_INDEX`` Cypher."""
    out: dict[Any, Any] = {}
    for route in ("summary", "chunk"):
        exact_t: list[float] = []
        exact_ids: list[list[str]] = []
        for i, (_, vec) in enumerate(qs):
            t0 = time.perf_counter()
            hits = await store.route(route, vec, EMPTY_FILTERS, frozenset(), K)
            if i >= 5:
                exact_t.append(time.perf_counter() - t0)
            exact_ids.append([h.event_id for h in hits])
        out[(route, "exact")] = (exact_t, 1.0, 1.0)
        for f in FACTORS:
            times, recalls, heads = [], [], []
            for i, (_, vec) in enumerate(qs):
                params = {
                    **rec.filter_params(EMPTY_FILTERS, frozenset(), None),
                    "q": np.asarray(vec, np.float64).tolist(), "qzero": False, "d": DIMS,
                    "limit": K, "fetch": K * f,
                }  # fmt: skip
                t0 = time.perf_counter()
                rows = await store._run(qroute.BY_INDEX[route][1], params)
                if i >= 5:
                    times.append(time.perf_counter() - t0)
                got = {r["id"] for r in rows}
                recalls.append(len(got & set(exact_ids[i])) / max(1, len(exact_ids[i])))
                heads.append(len(got & set(exact_ids[i][:10])) / max(1, len(exact_ids[i][:10])))
            out[(route, f"index k*{f}")] = (times, float(np.mean(recalls)), float(np.mean(heads)))
    return out


# ---------------------------------------------------------------- the run


async def main(args: argparse.Namespace) -> str:
    started = time.perf_counter()
    both = [int(s) for s in args.sizes.split(",") if s]
    only_neo4j = [int(s) for s in args.neo4j_only_sizes.split(",") if s]
    models = [VECTOR_MODELS[m.strip()]() for m in args.vectors.split(",") if m.strip()]
    overfetch = [int(f) for f in args.overfetch.split(",") if f and int(f) != INDEX_OVERFETCH]
    stub = StubEmbedder()
    notes: list[str] = []
    search_rows: list[list[object]] = []
    route_rows: list[list[object]] = []
    write_rows: list[list[object]] = []
    texts = save_texts(args.saves)
    async with contextlib.AsyncExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mnemoql-n4j-")))
        client = await stack.enter_async_context(httpx.AsyncClient())
        endpoint = await stack.enter_async_context(neo4j_endpoint(args))
        run = uuid.uuid4().hex[:8]
        stores: list[Store] = []

        async def opened(store: S) -> S:
            await store.open()
            stores.append(store)
            return store

        async def cleanup() -> None:
            for s in stores:
                if isinstance(s, Neo4jStore):
                    with contextlib.suppress(Exception):
                        await s.drop_space()
                await s.close()

        stack.push_async_callback(cleanup)
        stub_settings = settings_for(tmp / "stub", "hashing")

        def report() -> str:
            elapsed = time.perf_counter() - started
            head = (
                "# Neo4j store vs embedded store\n\n"
                f"Command: `{command_line()}`\n\n"
                f"Commit {git_rev()}; {machine_line()}. Neo4j: "
                + (f"`{args.neo4j_uri}`" if args.neo4j_uri else
                   f"managed 5.26 Community, heap {args.heap}, page cache {args.page_cache}")
                + f". {args.queries} timed queries per size ({args.large_queries} above 10k "
                f"events) after 5 warm-up ones; wall time {elapsed:.0f} s.\n"
            )  # fmt: skip
            writes = table(
                ["store", f"apply_save, single-event plans/s ({args.plans})",
                 f"Memory.save/s, hashing embedder ({len(texts)} texts)"],
                write_rows,
            )  # fmt: skip
            searches = table(
                ["vectors", "events", "store", "bulk write events/s (1000-event plans)",
                 "Memory.search p50 / p95 ms (stub embedder)",
                 "same evidence as the exact scan", "exact scan's first item delivered",
                 "load average"],
                search_rows,
            )  # fmt: skip
            routes = table(
                ["vectors", "events", "route", "variant", "p50 / p95 ms", "recall@40 vs exact",
                 "exact top 10 found"],
                route_rows,
            )  # fmt: skip
            return (
                head + "\n## Search\n\n" + searches
                + "\n\n## Neo4j: exact scan vs vector index\n\n" + routes
                + "\n\n## Writes\n\n" + writes + "\n\n" + "\n".join(notes) + "\n"
            )  # fmt: skip

        def save_report() -> None:  # after every size, so a cut-off run leaves its figures
            if not args.no_write:
                Path(args.out).write_text(report(), encoding="utf-8")

        # -- per vector model: the corpus on both stores, then on Neo4j alone; each model's
        #    Neo4j space is dropped before the next, so no space crowds another's index
        for model in models:
            rng = np.random.default_rng(args.seed)
            corpus = Corpus([], [])
            space = f"bench{run}{model.name.replace('-', '')}"
            emb = await opened(EmbeddedStore(tmp / f"corpus-{model.name}", dimensions_hint=DIMS))
            neo = await opened(neo4j_store(endpoint, space))
            scan = await opened(neo4j_store(endpoint, space, exact_only=True))  # same space
            sides = [
                Side("embedded", emb, memory_on(emb, stub_settings, client, stub)),
                Side("neo4j", neo, memory_on(neo, stub_settings, client, stub)),
            ]
            for f in overfetch:  # the same space read with other over-fetch factors
                other = await opened(neo4j_store(endpoint, space, overfetch=f))
                sides.append(
                    Side(
                        f"neo4j, k x {f}", other, memory_on(other, stub_settings, client, stub),
                        reader=True,
                    )
                )
            scan_side = Side(
                "neo4j, exact scan only", scan, memory_on(scan, stub_settings, client, stub)
            )
            for size in [*both, *only_neo4j]:
                active = sides if size in both else sides[1:]
                await grow(active, corpus, size, rng, model)
                n_queries = args.queries if size <= 10_000 else args.large_queries
                qs = queries(rng, corpus, n_queries + 5, model)
                await neo._run("CALL db.awaitIndexes(3600)")  # index updates are asynchronous
                load = load_average()
                exact: list[list[str]] = []
                measured = []
                for side in [scan_side, *active]:  # the exact scan first: the reference
                    t, got = await search_times(side, stub, qs, f"{side.name}{size}")
                    exact = exact or got
                    same = np.mean([a == b for a, b in zip(got, exact, strict=True)])
                    first = np.mean([b[0] in a for a, b in zip(got, exact, strict=True)])
                    rate = f"{side.built / side.build_s:,.0f}" if side.built else "(same space)"
                    measured.append([
                        model.name, f"{size:,}", side.name, rate,
                        f"{pct(t, 50):.1f} / {pct(t, 95):.1f}", f"{same:.0%}", f"{first:.0%}",
                        load,
                    ])  # fmt: skip
                    print(measured[-1], file=sys.stderr, flush=True)
                search_rows.extend([*measured[1:], measured[0]])
                variants = await route_variants(scan, qs)
                for (route, variant), (times, recall, head) in variants.items():
                    route_rows.append([
                        model.name, f"{size:,}", route, variant,
                        f"{pct(times, 50):.1f} / {pct(times, 95):.1f}", f"{recall:.3f}",
                        f"{head:.3f}",
                    ])  # fmt: skip
                    print(route_rows[-1], file=sys.stderr, flush=True)
                save_report()
            await neo.drop_space()

        # -- writes on fresh spaces, after every search (a warm server, nothing left to crowd)
        if not args.no_writes:
            hashing = settings_for(tmp / "saves", "hashing")
            for name, store in (
                ("embedded", await opened(EmbeddedStore(tmp / "plans"))),
                ("neo4j", await opened(neo4j_store(endpoint, f"plans{run}"))),
            ):
                plans_s = await single_plans(store, args.plans, np.random.default_rng(5))
                target = await opened(
                    EmbeddedStore(tmp / "saves") if name == "embedded"
                    else neo4j_store(endpoint, f"saves{run}")
                )  # fmt: skip
                saves_s = await real_saves(memory_on(target, hashing, client, None), texts)
                write_rows.append([name, f"{plans_s:.0f}", f"{saves_s:.1f}"])
                print(write_rows[-1], file=sys.stderr, flush=True)
            save_report()

    return report()


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1000,10000", help="sizes built on both stores")
    p.add_argument("--neo4j-only-sizes", default="100000", help="then on Neo4j alone")
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--plans", type=int, default=300, help="single-event apply_save plans")
    p.add_argument("--saves", type=int, default=100, help="Memory.save calls (hashing)")
    p.add_argument("--large-queries", type=int, default=50, help="queries above 10k events")
    p.add_argument(
        "--overfetch", default="", help="also search with these index over-fetch factors"
    )
    p.add_argument(
        "--vectors", default="uniform,text-like", help="vector models, each its own corpus"
    )
    p.add_argument("--no-writes", action="store_true", help="skip the write measurements")
    neo4j_arguments(p, heap="1g", page_cache="1g")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default=str(RESULTS / "neo4j.md"))
    p.add_argument("--no-write", action="store_true")
    return p.parse_args(argv)


def cli(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    publish(asyncio.run(main(args)), args.out, write=not args.no_write)


if __name__ == "__main__":
    cli()
