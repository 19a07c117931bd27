"""Neo4j with many spaces: one space's search while other spaces share the database.

    python -m bench.neo4j_spaces --spaces 10 --events 10000 --queries 100
    python -m bench.neo4j_spaces --spaces 10 --events 100000 --queries 30 --keep \
        --write bulk --shared-indexes none --own-indexes target --plain-queries

Every space holds the corpus of ``bench.search_latency`` (text-like vectors by default, its own
seed per space): ``--events`` events with 1-2 chunks each and 2 MENTIONS over 500 concepts,
written through ``store.apply_save`` in plans of 1000 events (two spaces at a time), so the
graph is exactly what saves make. The spaces are written with their own vector indexes off;
those are created (and populated by Neo4j) just before they are measured (for every space, or
with ``--own-indexes target`` for space 0 only), and the population time is reported.

Space 0 is the target. It is measured twice in one run: **alone** (after it is written, before
any other space) and **crowded** (after the other ``--spaces - 1`` are written), each time
through ``Memory.search`` (stub embedder: embedding excluded, fresh session per query) and the
two routes, by stores reading the same space:

* exact scan only (the reference: ``vector.similarity.cosine`` over the whole space);
* shared index, k x 10 (the route before per-space indexes: the database-wide index, one
  larger retry, then the exact scan);
* shared index, crowding-sized fetch (k x 10 x all events / this space's events);
* the store as configured: the space's own vector indexes.

Query texts are those of ``bench.search_latency`` (``q<i>`` and six words: the ``q<i>`` looks
like an identifier, so the BM25 route joins every search) or, with ``--plain-queries``, the six
words and a number (the two vector routes only). "Same evidence": the 4 events
``Memory.search`` delivered equal the exact scan's; "first item": the exact scan's first
delivered event is among them; recall@40 per route against the exact route.

``--write bulk`` writes the same graph through the restore path instead (``plan_records`` ->
``import_records``: batched UNWINDs, database-wide vector indexes dropped and created after the
load; ``--check-bulk N`` first compares N events written both ways, node by node): 10 x 100,000
events in 26 minutes here instead of hours. There is no "alone" phase then, and with
``--shared-indexes none`` no shared-index readers (populating those over 1M events takes hours).

The exact scan costs ~7 s per search at 100,000 events. ``--answers PATH`` keeps its answers
(delivered events and both route lists, per query) in a file, computed untimed before the
timing and reused by later runs over the same space (a run's queries are a prefix of a longer
run's); ``--answers-only`` stops after computing them (run it at nice 19), ``--assist``
computes them by the same exact Cypher over each route's best 80 events by exact cosine over
all of the space's vectors (numpy; the exact top 40 is inside, so the rows are the full
scan's), and ``--exact-timed N`` times the exact scan on the first N queries only (checked
against the stored answers). ``--overfetch K`` (repeatable) adds own-index readers with that
``index_overfetch``; ``--diagnose`` explains every query a reader answers differently (which
route candidates are missing, their exact ranks and scores, where the index returns them).

``--keep`` leaves the spaces in the database, and a later run with the same ``--prefix``
reuses the spaces that are complete (then only the crowded figures are measured). Neo4j comes
from ``--neo4j-uri`` / ``--neo4j-password`` or a managed server started in a temporary home.
Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from bench.neo4j_vs_embedded import memory_on, neo4j_endpoint, settings_for
from bench.search_latency import (
    DIMS,
    PLAN_EVENTS,
    VECTOR_MODELS,
    Corpus,
    StubEmbedder,
    VectorModel,
    make_plan,
    pct,
    queries,
)
from mnemoql.engine.drafts import SavePlan
from mnemoql.engine.memory import Memory
from mnemoql.engine.models import EMPTY_FILTERS, ID_PREFIX, RoutePool
from mnemoql.engine.retrieval.pipeline import SearchRequest
from mnemoql.engine.retrieval.routes import ROUTE_LIMIT
from mnemoql.engine.store import rules
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_route as qroute
from mnemoql.engine.store.neo4j import _cypher_write as qwrite
from mnemoql.engine.store.neo4j import _records as rec
from mnemoql.engine.store.neo4j import _routes as routes
from mnemoql.engine.store.neo4j._routes import INDEX_MAX_FETCH
from mnemoql.engine.store.neo4j._schema import Schema
from mnemoql.engine.store.neo4j.store import Neo4jStore

K = ROUTE_LIMIT


@dataclass
class Reader:
    """One way of reading the target space."""

    name: str
    store: Neo4jStore
    memory: Memory


def store_for(
    endpoint: tuple[str, str, str], space: str, *, exact: bool = False, own: bool = True
) -> Neo4jStore:
    uri, user, password = endpoint
    return Neo4jStore(
        uri, user, password, space=space, connection_timeout=30.0,
        index_min_events=None if exact else 2_000, space_indexes=own,
    )  # fmt: skip


async def space_size(store: Neo4jStore) -> int:
    rows = await store._run(qroute.SPACE_SIZE)
    return int(rows[0]["n"] or 0) if rows else 0


def corpus_of(seed: int, events: int, model: VectorModel, writes: list[Any] | None) -> Corpus:
    """The space's corpus (its plans appended to ``writes`` when given)."""
    rng = np.random.default_rng(seed)
    corpus = Corpus([], [])
    while corpus.n < events:
        count = min(PLAN_EVENTS, events - corpus.n)
        plan, ev, ch = make_plan(rng, corpus.n, count, first=corpus.n == 0, vectors=model)
        if writes is not None:
            writes.append(plan)
        corpus.summaries.append(ev)
        corpus.chunks.append(ch)
        corpus.n += count
    return corpus


async def write_space(store: Neo4jStore, seed: int, events: int, model: VectorModel) -> float:
    """Write the space's corpus (plans generated as they go); returns the seconds spent in
    apply_save."""
    rng = np.random.default_rng(seed)
    n, spent = 0, 0.0
    while n < events:
        count = min(PLAN_EVENTS, events - n)
        plan, _, _ = make_plan(rng, n, count, first=n == 0, vectors=model)
        t0 = time.perf_counter()
        await store.apply_save(plan)
        spent += time.perf_counter() - t0
        n += count
        await asyncio.sleep(0)
    return spent


def plan_records(plans: Iterable[SavePlan]) -> Iterator[dict[str, Any]]:
    """The dump records (``engine.dump``'s format) of what ``apply_save`` writes when these
    plans are saved in order into an empty space, for ``import_records`` (the restore path:
    batched UNWINDs, one transaction per 500 rows, instead of one save per plan).

    Covers what the bench's plans use (new events with chunks, new entities, relations to refs
    or to existing ids; no caller ids, merges, topics or idempotency keys). Ids are allocated
    as ``SaveTx`` does (per label from 1, events before entities within a plan), vectors are
    normalised as ``rec.vector_fields`` does (the import stores them as given), aliases and
    relation props are cleaned the same way. ``check_bulk`` compares the two graphs."""
    taken: Counter[str] = Counter()
    meta_done = False
    for plan in plans:
        if not meta_done:
            m = plan.meta
            yield {"kind": "meta", "model": m.model, "dimensions": m.dimensions,
                   "updated_at": m.updated_at, "schema_version": m.schema_version}  # fmt: skip
            meta_done = True
        refs: dict[str, str] = {}

        def take(label: str) -> str:
            taken[label] += 1
            return f"{ID_PREFIX[label]}_{taken[label]}"  # type: ignore[index]

        chunks: list[dict[str, Any]] = []
        for ev in plan.events:
            assert ev.given_id is None
            node_id = refs[ev.ref] = take("Event")
            yield {
                "kind": "node", "label": "Event", "id": node_id, "summary": ev.summary,
                "content": ev.content, "time": ev.time, "create_time": plan.create_time,
                "create_date": plan.create_date, "content_hash": ev.content_hash,
                "embedding": _stored(ev.embedding),
            }  # fmt: skip
            chunks += [
                {"kind": "chunk", "event_id": node_id, "chunk_index": c.chunk_index,
                 "start": c.start, "end": c.end, "text": c.text, "text_hash": c.text_hash,
                 "embedding": _stored(c.embedding)}
                for c in ev.chunks
            ]  # fmt: skip
        for ent in plan.entities:
            assert ent.merge_into is None
            node_id = refs[ent.ref] = take(ent.label)
            yield {
                "kind": "node", "label": ent.label, "id": node_id, "name": ent.name,
                "aliases": rules.clean_aliases(ent.name, ent.aliases, set()),
                "description": ent.description, "create_time": plan.create_time,
                "embedding": _stored(ent.embedding),
            }  # fmt: skip
        yield from chunks
        seen: set[tuple[str, str, str]] = set()
        for r in plan.relations:
            assert r.type != "HAS_ATTITUDE"
            src, dst = refs.get(r.source, r.source), refs.get(r.target, r.target)
            if (r.type, src, dst) in seen:
                continue
            seen.add((r.type, src, dst))
            yield {"kind": "relation", "type": r.type, "source": src, "target": dst,
                   "props": {k: v for k, v in r.props.items() if v is not None}}  # fmt: skip


def _stored(vector: Any) -> Any:
    """The vector as ``apply_save`` stores it (unit length in float32)."""
    values, _ = rec.vec_param(vector)
    return None if values is None else np.asarray(values, dtype=np.float32)


def space_plans(seed: int, events: int, model: VectorModel) -> Iterator[SavePlan]:
    """The space's plans, as ``write_space`` saves them (generated as they are consumed)."""
    rng = np.random.default_rng(seed)
    n = 0
    while n < events:
        count = min(PLAN_EVENTS, events - n)
        yield make_plan(rng, n, count, first=n == 0, vectors=model)[0]
        n += count


async def bulk_space(store: Neo4jStore, seed: int, events: int, model: VectorModel) -> float:
    """Write the space's corpus through ``import_records`` (plans converted by
    ``plan_records`` as the importer consumes them); returns the seconds spent."""
    t0 = time.perf_counter()
    await store.import_records(plan_records(space_plans(seed, events, model)))
    return time.perf_counter() - t0


GRAPH_NODES = """
MATCH (n) WHERE n.space = $space
RETURN [x IN labels(n) | CASE x WHEN $events_label THEN '<events>'
        WHEN $chunks_label THEN '<chunks>' ELSE x END] AS labels, properties(n) AS props
"""
GRAPH_RELS = """
MATCH (a)-[r]->(b) WHERE a.space = $space
RETURN type(r) AS type, a.id AS a, b.id AS b, properties(r) AS props
"""
# the space node's counters: one bump per save transaction, one per import (not data), and
# the topic change feed's bookkeeping (engine/store/neo4j/_changes.py)
_SPACE_COUNTERS = frozenset({"writes", "topics_reload", "removals", "removals_floor"})
_MARKS = frozenset(qwrite.MARK_PROPERTY.values())  # a mark of 0 (the import's) = none (a save's)


async def graph_of(store: Neo4jStore) -> tuple[list[Any], list[Any]]:
    labels = q.space_params(store.space)
    nodes = []
    for r in await store._run(GRAPH_NODES, labels):
        props = {k: v for k, v in r["props"].items() if k != "space"}
        if "name_keys" in props:  # keys begin with their space's digest: compare the rest
            prefix = q.name_prefix(store.space)
            assert all(k.startswith(prefix) for k in props["name_keys"]), props["name_keys"]
            props["name_keys"] = [k[len(prefix) :] for k in props["name_keys"]]
        if q.SPACE_LABEL in r["labels"]:
            props = {k: v for k, v in props.items()
                     if k not in _SPACE_COUNTERS and not (k in _MARKS and v == 0)}  # fmt: skip
        nodes.append((sorted(r["labels"]), sorted(props.items(), key=lambda kv: kv[0])))
    rels = [(r["type"], r["a"], r["b"], sorted(r["props"].items()))
            for r in await store._run(GRAPH_RELS)]  # fmt: skip
    return sorted(nodes, key=repr), sorted(rels, key=repr)


async def check_bulk(endpoint: tuple[str, str, str], events: int, model: VectorModel) -> str:
    """Write one corpus through apply_save and through the bulk writer into two new spaces
    and compare every node (labels with the space's own label, every property, vectors bit
    for bit) and relation; returns a one-line verdict (raises on a difference)."""
    saved = store_for(endpoint, "bulkcheck_saved", own=False)
    bulk = store_for(endpoint, "bulkcheck_bulk", own=False)
    for s in (saved, bulk):
        await s.open()
        await s.drop_space()
    try:
        for plan in space_plans(3, events, model):
            await saved.apply_save(plan)
        await bulk_space(bulk, 3, events, model)
        a, b = await graph_of(saved), await graph_of(bulk)
        for what, x, y in (("nodes", a[0], b[0]), ("relations", a[1], b[1])):
            if x != y:
                diff = next((i for i, (u, v) in enumerate(zip(x, y, strict=False)) if u != v), None)
                raise AssertionError(
                    f"bulk {what} differ from saved ones: {len(x)} vs {len(y)}; first "
                    f"difference at {diff}: {x[diff] if diff is not None else None!r:.400} / "
                    f"{y[diff] if diff is not None else None!r:.400}"
                )
        return (
            f"bulk writer checked against apply_save on {events:,} events: {len(a[0]):,} nodes "
            f"(labels incl. the space's own, every property, vectors bit for bit) and "
            f"{len(a[1]):,} relations identical; the space node differs only in its "
            f"`writes` counter (one per save transaction) and its unused id marks (0 / absent)"
        )
    finally:
        for s in (saved, bulk):
            await s.drop_space()
            await s.close()


async def drop_shared(store: Neo4jStore) -> None:
    for statement in [*q.DROP_VECTOR_INDEX.values(), q.DROP_CHUNK_VECTOR_INDEX]:
        await store.runner.schema(statement)


async def total_events(store: Neo4jStore) -> int:
    rows = await store._run(qroute.SPACE_SIZE)
    return int(rows[0]["total"] or 0) if rows else 0


@dataclass
class Answer:
    """What one reader answered to one query: the delivered events and the two route lists
    ``Memory.search`` ranked (event id, score), as its ``route_pool`` returned them."""

    delivered: list[str]
    summary: list[tuple[str, float]]
    chunk: list[tuple[str, float]]

    def to_json(self) -> dict[str, Any]:
        return {"delivered": self.delivered, "summary": self.summary, "chunk": self.chunk}

    @classmethod
    def of(cls, d: dict[str, Any]) -> Answer:
        return cls(list(d["delivered"]), [(a, float(b)) for a, b in d["summary"]],
                   [(a, float(b)) for a, b in d["chunk"]])  # fmt: skip


def recording(store: Neo4jStore) -> list[RoutePool]:
    """The route pools the store hands out from now on (appended as they are returned)."""
    seen: list[RoutePool] = []
    inner = store.route_pool

    async def route_pool(*args: Any, **kwargs: Any) -> RoutePool:
        pool = await inner(*args, **kwargs)
        seen.append(pool)
        return pool

    store.route_pool = route_pool  # type: ignore[method-assign]
    return seen


async def searches(
    reader: Reader, stub: StubEmbedder, qs: Sequence[tuple[str, Any]], tag: str
) -> tuple[list[float], list[Answer]]:
    """``Memory.search`` of every query (fresh session each), the first 5 untimed."""
    times, answers = [], []
    pools = getattr(reader.store, "_bench_pools", None)
    if pools is None:
        pools = reader.store._bench_pools = recording(reader.store)  # type: ignore[attr-defined]
    for i, (text, vec) in enumerate(qs):
        stub.vectors[text] = vec
        pools.clear()
        t0 = time.perf_counter()
        out = await reader.memory.search(SearchRequest(query=text), f"{tag}-{i}")
        if i >= 5:
            times.append(time.perf_counter() - t0)
        assert len(pools) == 1, f"{len(pools)} route pools in one search"
        answers.append(Answer(
            [item.event_id for item in out.page.items],
            [(h.event_id, h.score) for h in pools[0].summary],
            [(h.event_id, h.score) for h in pools[0].chunk],
        ))  # fmt: skip
    return times, answers


def answers_key(args: argparse.Namespace) -> dict[str, Any]:
    """What the exact answers depend on besides the queries: the space's corpus."""
    return {"prefix": args.prefix, "events": args.events, "seed": args.seed,
            "vectors": args.vectors}  # fmt: skip


def query_id(text: str, vec: Any) -> str:
    return hashlib.sha256(text.encode() + np.asarray(vec, np.float32).tobytes()).hexdigest()[:16]


async def exact_answers(
    path: Path, key: dict[str, Any], reader: Reader, stub: StubEmbedder,
    qs: Sequence[tuple[str, Any]],
) -> list[Answer]:
    """The exact scan's answers to every query, from ``path`` when it holds them (for this
    key, query by query: the queries of a run are a prefix of a longer run's), the others
    computed untimed and saved after each one, so an interrupted pass resumes."""
    done: list[dict[str, Any]] = []
    if path.exists():
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved["key"] == key:
            done = saved["answers"]
    ids = [query_id(t, v) for t, v in qs]
    kept = 0
    while kept < min(len(done), len(ids)) and done[kept]["query"] == ids[kept]:
        kept += 1
    done = done[: max(kept, len(done) if kept == len(ids) else kept)]
    t0 = time.perf_counter()
    for i in range(kept, len(qs)):
        _, got = await searches(reader, stub, qs[i : i + 1], f"exact-pass-{i}")
        done.append({"query": ids[i], **got[0].to_json()})
        path.write_text(json.dumps({"key": key, "answers": done}), encoding="utf-8")
        if i % 10 == 0:
            print(f"  exact answer {i + 1}/{len(qs)} ({time.perf_counter() - t0:.0f} s, "
                  f"{load_average()})", file=sys.stderr, flush=True)  # fmt: skip
    return [Answer.of(d) for d in done[: len(qs)]]


class SpaceVectors:
    """Every vector of a bench space as the store holds it (from its plans: ids and stored
    vectors as ``plan_records`` makes them), for exact candidate sets (``assist``)."""

    def __init__(self, plans: Iterable[SavePlan]) -> None:
        ev_ids: list[str] = []
        ev: list[Any] = []
        ch_of: list[int] = []
        ch: list[Any] = []
        for plan in plans:
            for draft in plan.events:
                ev_ids.append(f"event_{len(ev_ids) + 1}")
                ev.append(_stored(draft.embedding))
                for c in draft.chunks:
                    ch_of.append(len(ev_ids) - 1)
                    ch.append(_stored(c.embedding))
        self.ids = np.array(ev_ids)
        self.events = np.stack(ev)
        self.chunks = np.stack(ch)
        self.chunk_event = np.array(ch_of)

    def candidates(self, route: str, query: Any, n: int) -> frozenset[str]:
        """The ``n`` best events of the route by exact cosine (an event's best chunk for the
        chunk route), computed over every vector of the space."""
        qv = np.asarray(query, np.float32)
        qv = qv / np.linalg.norm(qv)
        if route == "summary":
            scores = self.events @ qv
        else:
            scores = np.full(len(self.ids), -np.inf, dtype=np.float32)
            np.maximum.at(scores, self.chunk_event, self.chunks @ qv)
        top = np.argpartition(-scores, n)[:n]
        return frozenset(self.ids[top].tolist())


MARGIN = 40  # candidates beyond the route limit handed to the exact scan


def assist(store: Neo4jStore, vectors: SpaceVectors) -> None:
    """Make an exact-scan store answer ``route_pool`` by the same exact Cypher over a
    restricted set: each route's best ``limit + MARGIN`` events by exact cosine over every
    vector of the space (numpy, from the space's plans). The exact top ``limit`` is inside the
    set, so the rows are the full scan's; a search costs ~0.1 s instead of ~7 s. Searches
    with filters, exclusions, a restriction or a lexical text go to the full scan."""
    inner = store.route_pool

    async def route_pool(
        query: Any, filters: Any, exclude: frozenset[str], limit: int,
        restrict: frozenset[str] | None = None, text: str | None = None,
    ) -> RoutePool:  # fmt: skip
        if restrict is not None or exclude or filters != EMPTY_FILTERS or text is not None:
            return await inner(query, filters, exclude, limit, restrict, text)
        got = [
            await routes.rows(store.index, route, query, filters, exclude, limit,  # type: ignore[arg-type]
                              vectors.candidates(route, query, limit + MARGIN), True)
            for route in ("summary", "chunk")
        ]  # fmt: skip
        return routes.pool(got[0], got[1])

    store.route_pool = route_pool  # type: ignore[method-assign]


async def route_hits(
    store: Neo4jStore, route: str, qs: Sequence[tuple[str, Any]]
) -> tuple[list[float], list[list[str]]]:
    times, ids = [], []
    for i, (_, vec) in enumerate(qs):
        t0 = time.perf_counter()
        hits = await store.route(route, vec, EMPTY_FILTERS, frozenset(), K)  # type: ignore[arg-type]
        if i >= 5:
            times.append(time.perf_counter() - t0)
        ids.append([h.event_id for h in hits])
    return times, ids


INDEX_RANKS = """
CALL db.index.vector.queryNodes($index, $fetch, $q) YIELD node
WITH node WHERE node.space = $space
RETURN coalesce(node.event_id, node.id) AS id
"""


async def index_ranks(store: Neo4jStore, route: str, vec: Any, ids: set[str]) -> dict[str, int]:
    """Where each of ``ids`` first comes in the route's own index for this query, among the
    first INDEX_MAX_FETCH nodes it returns (chunks count one by one): what fetch would have
    caught it. Absent ids are missing."""
    names = store.space_names
    index = names.events_index if route == "summary" else names.chunks_index
    values, _ = rec.query_param(vec)
    found = await store._run(INDEX_RANKS, {"index": index, "fetch": INDEX_MAX_FETCH, "q": values})
    ranks: dict[str, int] = {}
    for i, row in enumerate(found, 1):
        if row["id"] in ids and row["id"] not in ranks:
            ranks[row["id"]] = i
    return ranks


async def diagnose(
    reader: Reader, got: Sequence[Answer], ref: Sequence[Answer], qs: Sequence[tuple[str, Any]]
) -> str:
    """Per query whose delivered events differ from the exact scan's: which route candidates
    the reader's lists miss (their exact rank and score, where the index first returns them),
    which it holds instead, and whether the routes' lists are whole while the page differs."""
    lines = [f"Disagreements of \"{reader.name}\" with the exact scan:", ""]
    for i, (a, b) in enumerate(zip(got, ref, strict=True)):
        if a.delivered == b.delivered:
            continue
        lines.append(f"- query {i}: delivered {a.delivered} instead of {b.delivered}")
        for route in ("summary", "chunk"):
            mine, exact = getattr(a, route), getattr(b, route)
            have = {x for x, _ in mine}
            missing = [(rank, x, sc) for rank, (x, sc) in enumerate(exact, 1) if x not in have]
            extra = [(rank, x, sc) for rank, (x, sc) in enumerate(mine, 1)
                     if x not in {y for y, _ in exact}]  # fmt: skip
            if not missing and not extra:
                same_order = [x for x, _ in mine] == [x for x, _ in exact]
                lines.append(f"  - {route}: same {len(exact)} candidates"
                             + ("" if same_order else " (in another order)"))  # fmt: skip
                continue
            ranks = await index_ranks(reader.store, route, qs[i][1], {x for _, x, _ in missing})
            ties = {round(sc, 6) for _, _, sc in missing} & {round(sc, 6) for _, _, sc in extra}
            lines.append(
                f"  - {route}: missing "
                + ", ".join(f"{x} (exact rank {rank}, score {sc:.4f}, index position "
                            f"{ranks.get(x, f'> {INDEX_MAX_FETCH}')})"
                            for rank, x, sc in missing)
                + "; instead " + (", ".join(f"{x} (rank {rank}, score {sc:.4f})"
                                            for rank, x, sc in extra) or "nothing")
                + ("; tied scores" if ties else "")
            )  # fmt: skip
    if len(lines) == 2:
        lines.append("none.")
    return "\n".join(lines) + "\n"


async def variant_readers(
    args: argparse.Namespace, endpoint: tuple[str, str, str], target: str, settings: Any,
    client: httpx.AsyncClient, stub: StubEmbedder, opened_store: Any,
) -> list[Reader]:
    """Further own-index readers of space 0 (``--overfetch`` values beside the store's)."""
    out = []
    for k in args.overfetch:
        s = await opened_store(store_for(endpoint, target))
        s.index_overfetch = k
        out.append(Reader(f"own index, k x {k}", s, memory_on(s, settings, client, stub)))
    return out


async def _keep_none(self: Schema, dims: int) -> None:
    """``--shared-indexes none``: stores of this bench process create no shared indexes."""


async def main(args: argparse.Namespace) -> str:
    started = time.perf_counter()
    if args.shared_indexes == "none":
        Schema.create_vector_indexes = _keep_none  # type: ignore[method-assign]
    model = VECTOR_MODELS[args.vectors]()
    stub = StubEmbedder()
    names = [f"{args.prefix}{i}" for i in range(args.spaces)]
    search_rows: list[list[object]] = []
    route_rows: list[list[object]] = []
    write_rows: list[list[object]] = []
    notes: list[str] = []

    def report() -> str:
        head = (
            "# Neo4j with many spaces\n\n"
            f"Command: `{command_line()}`\n\n"
            f"Commit {git_rev()}; {machine_line()}. Neo4j: "
            + (f"`{args.neo4j_uri}`" if args.neo4j_uri else
               f"managed 5.26 Community, heap {args.heap}, page cache {args.page_cache}")
            + f". {args.spaces} spaces x {args.events:,} {args.vectors} events; "
            f"{args.queries} timed queries after 5 warm-up ones; wall time "
            f"{time.perf_counter() - started:.0f} s.\n"
        )  # fmt: skip
        return (
            head
            + "\n## Search in space 0\n\n"
            + table(
                ["database", "reader", "Memory.search p50 / p95 ms (stub embedder)",
                 "same evidence as the exact scan", "exact scan's first item delivered",
                 "load average"],
                search_rows,
            )
            + "\n\n## Routes in space 0\n\n"
            + table(
                ["database", "route", "reader", "p50 / p95 ms", "recall@40 vs exact"],
                route_rows,
            )
            + "\n\n## Writes\n\n"
            + table(["what", "figure", "load average"], write_rows)
            + "\n\n" + "\n".join(notes) + "\n"
        )  # fmt: skip

    def save_report() -> None:
        if not args.no_write:
            Path(args.out).write_text(report(), encoding="utf-8")

    async with contextlib.AsyncExitStack() as stack:
        import tempfile

        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mnemoql-spaces-")))
        client = await stack.enter_async_context(httpx.AsyncClient())
        endpoint = await stack.enter_async_context(neo4j_endpoint(args))
        opened: list[Neo4jStore] = []

        async def opened_store(store: Neo4jStore) -> Neo4jStore:
            await store.open()
            opened.append(store)
            return store

        async def cleanup() -> None:
            for s in opened:
                await s.close()
            if not args.keep:
                for name in names:
                    s = store_for(endpoint, name)
                    await s.open()
                    await s.drop_space()
                    await s.close()

        stack.push_async_callback(cleanup)
        settings = settings_for(tmp / "stub", "hashing")
        bulk = args.write == "bulk"
        if args.check_bulk:
            notes.append(await check_bulk(endpoint, args.check_bulk, model) + ".")
            print(notes[-1], file=sys.stderr, flush=True)
        writers = {n: await opened_store(store_for(endpoint, n, own=False)) for n in names}

        async def fill(batch: Sequence[str]) -> None:
            todo = [n for n in batch if await space_size(writers[n]) < args.events]
            for n in todo:
                if await space_size(writers[n]) > 0:
                    await writers[n].drop_space()  # an unfinished space of an earlier run
            if not todo:
                return
            t0 = time.perf_counter()
            load = load_average()
            sem = asyncio.Semaphore(args.writers)

            if bulk:  # the database-wide vector indexes are built after the load
                await drop_shared(writers[todo[0]])
                for w in writers.values():
                    w.schema.vector_indexes = True  # the importer would create them at once

            async def one(n: str) -> None:
                async with sem:
                    seed = names.index(n) + args.seed
                    if bulk:
                        await bulk_space(writers[n], seed, args.events, model)
                    else:
                        await write_space(writers[n], seed, args.events, model)
                    print(f"  wrote {n} ({load_average()})", file=sys.stderr, flush=True)

            await asyncio.gather(*(one(n) for n in todo))
            await writers[todo[0]]._run("CALL db.awaitIndexes(7200)")
            secs = time.perf_counter() - t0
            rate = len(todo) * args.events / secs
            how = ("import_records (the restore path), database-wide vector indexes dropped"
                   if bulk else "apply_save, shared indexes maintained")  # fmt: skip
            write_rows.append([
                f"{len(todo)} space(s) x {args.events:,} events through {how} "
                f"({args.writers} at a time)",
                f"{secs:.0f} s ({rate:,.0f} events/s)", load,
            ])  # fmt: skip
            save_report()
            if bulk and args.shared_indexes == "build":
                t0 = time.perf_counter()
                await writers[todo[0]].schema.create_vector_indexes(DIMS)
                await writers[todo[0]]._run("CALL db.awaitIndexes(7200)")
                write_rows.append([
                    "database-wide vector indexes (SPEC's four and the chunk index) created "
                    f"and populated over {await total_events(writers[todo[0]]):,} events",
                    f"{time.perf_counter() - t0:.0f} s", load_average(),
                ])  # fmt: skip
                save_report()

        async def own_indexes(batch: Sequence[str]) -> None:
            t0 = time.perf_counter()
            for n in batch:
                s = await opened_store(store_for(endpoint, n))  # creates them on open
                assert s.schema.space_indexed, f"{n}: no own indexes"
            await writers[batch[0]]._run("CALL db.awaitIndexes(7200)")
            write_rows.append([
                f"own vector indexes of {len(batch)} space(s) created and populated",
                f"{time.perf_counter() - t0:.0f} s", load_average(),
            ])  # fmt: skip

        target = names[0]
        readers = [
            Reader("exact scan only", s := await opened_store(store_for(endpoint, target,
                                                                        exact=True)),
                   memory_on(s, settings, client, stub)),
        ]  # fmt: skip
        if args.shared_indexes == "build":
            before = await opened_store(store_for(endpoint, target, own=False))
            before.share_fetch = False
            before.index_overfetch = 10  # the route before per-space indexes
            sized = await opened_store(store_for(endpoint, target, own=False))
            readers += [
                Reader("shared index, k x 10 (before)", before,
                       memory_on(before, settings, client, stub)),
                Reader("shared index, crowding-sized fetch", sized,
                       memory_on(sized, settings, client, stub)),
            ]  # fmt: skip
        else:
            notes.append(
                "Run without the database-wide event and chunk vector indexes "
                "(`--shared-indexes none`): no shared-index readers."
            )
        space0_plans: list[Any] = []  # kept for --assist
        corpus = corpus_of(args.seed, args.events, model, space0_plans if args.assist else None)
        rng = np.random.default_rng(args.seed + 1000)
        qs = queries(rng, corpus, args.queries + 5, model)
        if args.plain_queries:  # "q12 ..." is identifier-like and calls the BM25 route in
            qs = [(f"{text.split(' ', 1)[1]} {i}", v) for i, (text, v) in enumerate(qs)]

        exact_ref: list[Answer] | None = None

        async def measure(database: str) -> None:
            nonlocal exact_ref
            if args.answers and exact_ref is None:
                source = readers[0]
                if args.assist:
                    helper = await opened_store(store_for(endpoint, target, exact=True))
                    assist(helper, SpaceVectors(space0_plans))
                    space0_plans.clear()
                    source = Reader("exact scan over exact candidates", helper,
                                    memory_on(helper, settings, client, stub))  # fmt: skip
                exact_ref = await exact_answers(Path(args.answers), answers_key(args), source,
                                                stub, qs)  # fmt: skip
                notes.append(
                    f"The exact scan's answers to all {len(qs)} queries (warm-ups included) "
                    f"come from `{args.answers}`, computed untimed before the timing"
                    + (" with `--assist`: the exact Cypher scan over each route's best "
                       f"{K + MARGIN} events by exact cosine over all of the space's vectors "
                       "(numpy), which hold the exact top 40; the timed exact scan below "
                       "checks them on its queries." if args.assist else ".")
                )  # fmt: skip
            if args.answers_only:
                return
            own = await opened_store(store_for(endpoint, target))
            assert own.schema.space_indexed
            current = [*readers, Reader("own index (this store)", own,
                                        memory_on(own, settings, client, stub))]  # fmt: skip
            current += await variant_readers(args, endpoint, target, settings, client, stub,
                                             opened_store)  # fmt: skip
            for r in current:
                r.store.index.seen = -1e9  # read the index state and the counts again
            load = load_average()
            ref = exact_ref
            timed_exact = len(qs) if args.exact_timed < 0 else min(len(qs), 5 + args.exact_timed)
            got_of: dict[str, list[Answer]] = {}
            for r in current:
                exact = r is current[0]
                subset = qs[:timed_exact] if exact else qs
                t, got = await searches(r, stub, subset, f"{database}{r.name}")
                ref = ref or got
                got_of[r.name] = got
                if exact:
                    agree = sum(a.delivered == b.delivered for a, b in zip(got, ref, strict=False))
                    if agree != len(got):
                        notes.append(f"The timed exact scan disagreed with the stored answers "
                                     f"in {len(got) - agree} of {len(got)} queries.")  # fmt: skip
                    name = r.name if len(subset) == len(qs) else (
                        f"{r.name} (timed on {len(subset) - 5} queries)")  # fmt: skip
                    same = first = 1.0
                else:
                    name = r.name
                    same = float(np.mean([a.delivered == b.delivered
                                          for a, b in zip(got, ref, strict=True)]))  # fmt: skip
                    first = float(np.mean([bool(b.delivered) and b.delivered[0] in a.delivered
                                           for a, b in zip(got, ref, strict=True)]))  # fmt: skip
                search_rows.append([
                    database, name, f"{pct(t, 50):.1f} / {pct(t, 95):.1f}", f"{same:.0%}",
                    f"{first:.0%}", load,
                ])  # fmt: skip
                print(search_rows[-1], file=sys.stderr, flush=True)
            assert ref is not None
            for route in ("summary", "chunk"):
                for r in current:
                    exact = r is current[0]
                    subset = qs[:timed_exact] if exact else qs
                    t, ids = await route_hits(r.store, route, subset)
                    lists = [[x for x, _ in getattr(a, route)] for a in ref]
                    recall = np.mean([
                        len(set(a) & set(b)) / max(1, len(b))
                        for a, b in zip(ids, lists, strict=False)
                    ])  # fmt: skip
                    route_rows.append([
                        database, route, r.name if len(subset) == len(qs) else
                        f"{r.name} (timed on {len(subset) - 5} queries)",
                        f"{pct(t, 50):.1f} / {pct(t, 95):.1f}", f"{recall:.3f}",
                    ])  # fmt: skip
                    print(route_rows[-1], file=sys.stderr, flush=True)
            save_report()
            if args.diagnose:
                for r in current[1:]:
                    notes.append(await diagnose(r, got_of[r.name], ref, qs))
                save_report()

        reused = await space_size(writers[target]) >= args.events
        if bulk:  # one load, then the indexes: no "alone" phase
            await fill(names)
            notes.append(
                "Spaces written in bulk (or reused): no 'alone' figures (the single-space ones "
                "are in bench/results/neo4j.md)."
            )
        else:
            await fill([target])
        if not reused and not bulk:
            await own_indexes([target])
            await measure(f"space 0 alone ({args.events:,} events)")
        elif not bulk:
            notes.append("Space 0 was reused from an earlier run: no 'alone' figures.")
        await fill(names[1:])
        await own_indexes(names if args.own_indexes == "all" else [target])
        total = args.spaces * args.events
        await measure(f"{args.spaces} spaces ({total:,} events)")
    return report()


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--spaces", type=int, default=10)
    p.add_argument("--events", type=int, default=10_000, help="events per space")
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--writers", type=int, default=2, help="spaces written at a time")
    p.add_argument(
        "--write", choices=["save", "bulk"], default="save",
        help="save: apply_save per plan of 1000 events, indexes maintained; bulk: the same "
        "records through import_records with the database-wide vector indexes dropped, "
        "created after the load (a bench server only: its other spaces scan exactly meanwhile)",
    )  # fmt: skip
    p.add_argument(
        "--shared-indexes", choices=["build", "none"], default="build",
        help="none: never create the database-wide event and chunk vector indexes (populating "
        "them over 1M events takes hours here); only the exact scan and own-index readers",
    )  # fmt: skip
    p.add_argument(
        "--check-bulk", type=int, default=0, metavar="EVENTS",
        help="first compare a corpus of EVENTS written both ways, node by node",
    )  # fmt: skip
    p.add_argument("--vectors", default="text-like", choices=sorted(VECTOR_MODELS))
    p.add_argument("--prefix", default="benchspace", help="space names: <prefix><i>")
    p.add_argument("--keep", action="store_true", help="leave the spaces in the database")
    p.add_argument(
        "--own-indexes", choices=["all", "target"], default="all",
        help="which spaces get their own indexes before the crowded figures (target: saves "
        "the other spaces' population time; their own indexes do not change space 0's reads)",
    )  # fmt: skip
    p.add_argument(
        "--plain-queries", action="store_true",
        help="query texts without the identifier-like q<i> (no BM25 route: vector routes only)",
    )  # fmt: skip
    p.add_argument(
        "--answers", default="", metavar="PATH",
        help="read the exact scan's answers (delivered events, route lists) from PATH, computing "
        "and saving the missing ones untimed first; the agreement uses them for every query",
    )  # fmt: skip
    p.add_argument(
        "--assist", action="store_true",
        help="compute the missing exact answers by the exact scan over exact candidate sets "
        "(numpy over the space's vectors, regenerated from its plans)",
    )  # fmt: skip
    p.add_argument("--answers-only", action="store_true",
                   help="stop once the exact answers are computed (an untimed pass)")  # fmt: skip
    p.add_argument(
        "--exact-timed", type=int, default=-1, metavar="N",
        help="time the exact scan on the first N queries only (after the warm-ups); -1: all",
    )  # fmt: skip
    p.add_argument("--overfetch", type=int, action="append", default=[],
                   help="also measure an own-index reader with this index_overfetch")  # fmt: skip
    p.add_argument("--diagnose", action="store_true",
                   help="after the timing, explain every query a reader answers differently")
    neo4j_arguments(p, heap="3g", page_cache="4g")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default=str(RESULTS / "neo4j_spaces.md"))
    p.add_argument("--no-write", action="store_true")
    return p.parse_args(argv)


def cli(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    publish(asyncio.run(main(args)), args.out, write=not args.no_write)


if __name__ == "__main__":
    cli()
