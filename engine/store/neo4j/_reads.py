"""The Neo4j store's reads of stored rows: events and chunks by id, nodes, lists, the graph.

Each function reads one space through the store's ``Runner`` and turns the records into the
engine's models (``_records``); none writes, holds state or touches a vector index (the
retrieval routes that may are ``_routes`` and ``_lexical``; lookups by name are ``_names``).
Kept apart from ``store.py`` so the store reads as the ``Store`` protocol it implements,
each method handing its work to the module of its concept, as the embedded store does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from neo4j import AsyncManagedTransaction

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.models import (
    Binding,
    Chunk,
    Counts,
    Direction,
    Entity,
    EntityLabel,
    Event,
    Filters,
    GraphSnapshot,
    Neighbour,
    Node,
    NodeLabel,
    NodePage,
    Page,
    RelType,
    SortSpec,
    Topic,
    Vector,
    Where,
)
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_read as qread
from mnemoql.engine.store.neo4j import _cypher_route as qroute
from mnemoql.engine.store.neo4j import _cypher_write as qwrite
from mnemoql.engine.store.neo4j import _records as rec
from mnemoql.engine.store.neo4j import _write as write
from mnemoql.engine.store.neo4j._runner import Runner

_MIN_EPS = 1e-6  # Neo4j scores in float32 through (1+cos)/2: keep boundary cosines in


async def counts(runner: Runner) -> Counts:
    rows = await runner.run(qread.COUNTS)
    r = rows[0]
    return Counts(
        events=r["events"],
        persons=r["persons"],
        concepts=r["concepts"],
        locations=r["locations"],
        chunks=r["chunks"],
        relations=r["relations"],
    )


async def entity_top(
    runner: Runner, label: EntityLabel, vector: Vector, k: int, min_cosine: float | None
) -> list[tuple[Entity, float]]:
    lbl = q.entity_label(label)
    if k <= 0:
        return []
    values, zero = rec.query_param(vector)
    rows = await runner.run(
        qread.ENTITY_TOP[lbl],
        {
            "q": values, "qzero": zero, "d": len(values), "k": int(k),
            "min": None if min_cosine is None else float(min_cosine) - _MIN_EPS,
        },
    )  # fmt: skip
    return [(rec.entity(r["n"]), rec.raw_cosine(r["s"])) for r in rows]


async def all_for_revectorize(runner: Runner) -> tuple[list[Event], list[Entity]]:
    async def work(tx: AsyncManagedTransaction) -> tuple[list[Event], list[Entity]]:
        events = [rec.event(r["e"]) for r in await write.run(tx, runner.space, qwrite.ALL_EVENTS)]
        entities = [
            rec.entity(r["n"]) for r in await write.run(tx, runner.space, qwrite.ALL_ENTITIES)
        ]
        return events, entities

    return await runner.read(work)


# ---------------------------------------------------------------- events


async def recent_events(
    runner: Runner,
    filters: Filters,
    exclude: frozenset[str],
    limit: int,
    restrict: frozenset[str] | None,
) -> list[str]:
    if limit <= 0 or (restrict is not None and not restrict):
        return []
    params = {**rec.filter_params(filters, exclude, restrict), "limit": int(limit)}
    rows = await runner.run(qroute.ROUTES[("recent", restrict is not None)], params)
    return [r["id"] for r in rows]


async def get_events(runner: Runner, ids: Sequence[str], with_vectors: bool) -> list[Event]:
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return []
    rows = await runner.run(
        qread.GET_EVENTS_VEC if with_vectors else qread.GET_EVENTS, {"ids": wanted}
    )
    found = {r["e"]["id"]: rec.event(r["e"], with_vectors) for r in rows}
    return [found[i] for i in ids if i in found]


async def get_chunks(
    runner: Runner, event_ids: Sequence[str], with_vectors: bool
) -> dict[str, list[Chunk]]:
    out: dict[str, list[Chunk]] = {i: [] for i in event_ids}
    if not out:
        return out
    rows = await runner.run(
        qread.GET_CHUNKS_VEC if with_vectors else qread.GET_CHUNKS, {"ids": list(out)}
    )
    for r in rows:
        c = rec.chunk(r["c"], with_vectors)
        out[c.event_id].append(c)
    return out


async def id_counts(runner: Runner, ids: Sequence[str]) -> dict[str, int]:
    out = dict.fromkeys(ids, 0)
    if out:
        rows = await runner.run(qread.ID_COUNTS, {"ids": list(out)})
        out.update({r["id"]: int(r["n"]) for r in rows})
    return out


async def events_mentioning(runner: Runner, concept_id: str) -> frozenset[str]:
    rows = await runner.run(qread.EVENTS_MENTIONING, {"id": concept_id})
    return frozenset(r["id"] for r in rows)


async def positional_events(runner: Runner, prefix: str, chapter: str) -> list[str]:
    head = f"{prefix}_ch{chapter}_e"
    rows = await runner.run(qread.POSITIONAL, {"head": head})
    tail = re.compile(r"[0-9]+")
    found = [r["id"] for r in rows if tail.fullmatch(r["id"][len(head) :])]
    return sorted(found, key=lambda i: (int(i[len(head) :]), i))


# ---------------------------------------------------------------- graph reads


async def get_nodes(runner: Runner, ids: Sequence[str]) -> list[Node | None]:
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return []
    rows = await runner.run(qread.GET_NODES, {"ids": wanted})
    found = {r["n"]["id"]: rec.node(r["n"]) for r in rows}
    return [found.get(i) for i in ids]


async def list_nodes(
    runner: Runner, label: NodeLabel, where: Where | None, sort: SortSpec, page: Page
) -> NodePage:
    lbl = q.label(label)
    key, direction = rec.sort_key(lbl, sort)
    compiler = rec.WhereCompiler(lbl)
    cond = compiler.compile(where)
    rec.check_page(page)
    params: dict[str, Any] = {**compiler.params, "limit": page.size + 1}
    if page.position is not None:
        params["after_key"], params["after_id"] = page.position
    # a backward page walks the sort the other way from its position, then is reversed
    order = ("DESC" if direction == "ASC" else "ASC") if page.backward else direction

    async def work(tx: AsyncManagedTransaction) -> tuple[int, list[dict[str, Any]]]:
        paged = qread.list_page(lbl, cond, key, order, page.position is not None)
        total = await write.run(tx, runner.space, qread.list_count(lbl, cond), **compiler.params)
        rows = await write.run(tx, runner.space, paged, **params)
        return int(total[0]["total"]), rows

    total, rows = await runner.read(work)
    rows, more = rows[: page.size], len(rows) > page.size
    if page.backward:
        rows.reverse()
    return NodePage(
        nodes=[rec.node(r["n"]) for r in rows],
        has_next=more and not page.backward,
        positions=[(r["k"], r["n"]["id"]) for r in rows],
        total=total,
        has_previous=more and page.backward,
    )


async def neighbours(
    runner: Runner,
    node_ids: Sequence[str],
    rel_type: RelType | None,
    direction: Direction,
    limit_per_node: int,
    after: str | None,
    before: str | None,
    backward: bool,
) -> dict[str, list[Neighbour]]:
    kind = None if rel_type is None else q.rel_type(rel_type)
    backward = backward or before is not None
    if after is not None and before is not None:
        raise InvalidInput(
            "neighbours pages forward (after) or backward (before), not both",
            zh="neighbours 只能向前（after）或向后（before）翻页，不能同时两者",
        )
    if direction not in ("out", "in", "both"):
        raise InvalidInput(
            f"direction must be out, in or both (got {direction!r})",
            zh=f"direction 须为 out、in 或 both（收到 {direction!r}）",
        )
    if limit_per_node < 0:
        raise InvalidInput("limit_per_node must not be negative", zh="limit_per_node 不能为负数")
    unique = list(dict.fromkeys(node_ids))
    out: dict[str, list[Neighbour]] = {i: [] for i in unique}
    if not unique or limit_per_node == 0:
        return out
    rows = await runner.run(
        qread.NEIGHBOURS_BACKWARD if backward else qread.NEIGHBOURS,
        {
            "ids": unique, "type": kind, "after": after, "before": before,
            "limit": int(limit_per_node), "out": direction != "in", "in": direction != "out",
        },
    )  # fmt: skip
    for r in rows:
        node_id = r["id"]
        for e in r["rows"]:
            rel = rec.relation(e["type"], e["source"], e["target"], e["props"] or {})
            out[node_id].append(Neighbour(node_id, rel, e["other"], e["dir"]))
        if backward:
            out[node_id].reverse()  # walked backward from `before` (or the end)
    return out


async def graph(runner: Runner, max_nodes: int, max_relations: int, topics: bool) -> GraphSnapshot:
    if max_nodes < 0 or max_relations < 0:
        raise InvalidInput("graph caps must not be negative", zh="图的上限不能为负数")

    async def work(tx: AsyncManagedTransaction) -> GraphSnapshot:
        rows = await write.run(tx, runner.space, qread.GRAPH_NODES, cap=max_nodes + 1)
        truncated_nodes = len(rows) > max_nodes
        nodes = [rec.node(r["n"]) for r in rows[:max_nodes]]
        rels = await write.run(
            tx,
            runner.space,
            qread.GRAPH_RELATIONS,
            ids=[n.id for n in nodes],
            cap=max_relations + 1,
        )
        snapshot = GraphSnapshot(
            nodes=nodes,
            relations=[
                rec.relation(r["type"], r["source"], r["target"], r["props"] or {}) for r in rels
            ],
            truncated_nodes=truncated_nodes,
            truncated_relations=len(rels) > max_relations,
        )
        if topics and not truncated_nodes:
            await _add_topics(tx, runner.space, snapshot, max_nodes - len(nodes), max_relations)
        snapshot.relations = snapshot.relations[:max_relations]
        return snapshot

    return await runner.read(work)


async def _add_topics(
    tx: AsyncManagedTransaction, space: str, snapshot: GraphSnapshot, room: int, max_relations: int
) -> None:
    """Topic nodes by id into the ``room`` left, with their SUBTOPIC and BINDS links."""
    found = await write.run(tx, space, qread.GRAPH_TOPICS, cap=room + 1)
    kept = [rec.topic(r["t"]) for r in found[:room]]
    snapshot.topics = kept
    snapshot.truncated_nodes = len(found) > room
    binds = await write.run(
        tx, space, qread.GRAPH_BINDS, ids=[t.id for t in kept], cap=max_relations + 1
    )
    paths = {t.path for t in kept}
    links = [
        link for t in kept if t.parent in paths and (link := t.subtopic_relation()) is not None
    ]
    merged = sorted(
        [*snapshot.relations, *(rec.binding(r["b"]).relation() for r in binds), *links],
        key=lambda r: (r.type, r.source, r.target),
    )
    snapshot.relations = merged
    snapshot.truncated_relations = len(merged) > max_relations


# ---------------------------------------------------------------- topics


async def topic_rows(runner: Runner) -> tuple[list[Topic], list[Binding]]:
    async def work(tx: AsyncManagedTransaction) -> tuple[list[Topic], list[Binding]]:
        topics = await write.run(tx, runner.space, qread.TOPIC_ROWS)
        bindings = await write.run(tx, runner.space, qread.BINDING_ROWS)
        return [rec.topic(r["t"]) for r in topics], [rec.binding(r["b"]) for r in bindings]

    return await runner.read(work)
