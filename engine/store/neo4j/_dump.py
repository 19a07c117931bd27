"""Whole-memory export of the Neo4j store (the record format of ``engine.dump``); the import
is ``_restore``.

Node ids in insertion order (``seq``) first, then the nodes by id in pages, chunks per page of
events, and the relations, bindings and save records filtered to the exported nodes, so a dump
taken while saves go on still holds together. (Neo4j reads are read-committed, not a snapshot:
stop writers for an exact point-in-time dump.)
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Final

import numpy as np

from mnemoql.engine.models import ID_PREFIX, NodeLabel
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_read as qread
from mnemoql.engine.store.neo4j import _cypher_write as qwrite
from mnemoql.engine.store.neo4j import _records as rec
from mnemoql.engine.store.neo4j._runner import Runner

Record = dict[str, Any]
BATCH: Final = rec.BATCH
_NODE_FIELDS: Final = (
    ".id, .name, .aliases, .description, .create_time, .summary, .content, .time, "
    f".create_date, .content_hash, label: {q.LABEL_OF}"
)

# ---------------------------------------------------------------- Cypher

NODE_ORDER: Final = (
    f"MATCH (n:{q.ALL_LABELS}) WHERE n.space = $space AND n.id IS NOT NULL "
    "RETURN n.id AS id ORDER BY n.seq"
)
NODES: Final = (
    f"UNWIND $ids AS id MATCH (n:{q.ALL_LABELS} {{space: $space, id: id}}) "
    f"RETURN n {{{_NODE_FIELDS}}} AS n"
)
NODES_VEC: Final = (
    f"UNWIND $ids AS id MATCH (n:{q.ALL_LABELS} {{space: $space, id: id}}) "
    f"RETURN n {{{_NODE_FIELDS}, .embedding}} AS n"
)
RELATIONS: Final = f"""
MATCH (a:{q.ALL_LABELS})-[r:{"|".join(qwrite.REL_ENDS)}]->(b:{q.ALL_LABELS})
WHERE a.space = $space AND b.space = $space
RETURN type(r) AS type, a.id AS source, b.id AS target, properties(r) AS props
"""
SAVE_RECORDS: Final = (
    f"MATCH (r:{q.RECORD_LABEL}) WHERE r.space = $space "
    "RETURN r.key AS key, r.result AS result, r.created_at AS created_at"
)


async def export_records(runner: Runner, vectors: bool) -> AsyncIterator[Record]:
    """Every record of the runner's space (see the module docstring for consistency)."""
    found_meta = await runner.run(qread.GET_META)
    meta = rec.meta(found_meta[0]["m"]) if found_meta else None
    if meta is not None:
        yield {"kind": "meta", "model": meta.model, "dimensions": meta.dimensions,
               "updated_at": meta.updated_at, "schema_version": meta.schema_version}  # fmt: skip
    order = [r["id"] for r in await runner.run(NODE_ORDER)]
    labels: dict[str, NodeLabel] = {}
    for ids in _pages(order):
        rows = await runner.run(NODES_VEC if vectors else NODES, {"ids": ids})
        found = {r["n"]["id"]: r["n"] for r in rows}
        for node_id in ids:
            if node_id in found:  # forgotten meanwhile
                record = _node(found[node_id])
                labels[node_id] = record["label"]
                yield record
    events = sorted(i for i, lbl in labels.items() if lbl == "Event")
    for ids in _pages(events):
        rows = await runner.run(qread.GET_CHUNKS_VEC if vectors else qread.GET_CHUNKS, {"ids": ids})
        for c in sorted((r["c"] for r in rows), key=lambda c: (c["event_id"], c["chunk_index"])):
            yield _chunk(c)
    relations = [
        _relation(r)
        for r in await runner.run(RELATIONS)
        if r["source"] in labels and r["target"] in labels
    ]
    relations.sort(key=_relation_key)
    for record in relations:
        yield record
    topics: set[str] = set()
    for r in await runner.run(qread.TOPIC_ROWS):
        topics.add(r["t"]["path"])
        yield {"kind": "topic", "path": r["t"]["path"], "name": r["t"]["name"],
               "parent": r["t"].get("parent")}  # fmt: skip
    for r in await runner.run(qread.BINDING_ROWS):
        b = rec.binding(r["b"])
        if b.path in topics and b.event_id in labels:
            yield {
                "kind": "binding", "path": b.path, "event_id": b.event_id,
                "timestamp": b.timestamp, "activation": b.activation,
                "diffusion": b.diffusion, "context_independence": b.context_independence,
                "related": list(b.related),
            }  # fmt: skip
    records = await runner.run(SAVE_RECORDS)
    for r in sorted(records, key=lambda r: str(r["key"])):
        yield {"kind": "save_record", "key": r["key"], "result": _json(r["result"]),
               "created_at": r["created_at"]}  # fmt: skip
    # read last: every node exported above was allocated before this read, so its number is
    # below the mark; a space from before the marks counts from its highest id
    marks = dict.fromkeys(ID_PREFIX.values(), 0)
    for row in await runner.run(qwrite.GET_MARKS):
        marks.update({p: int(v) for p, v in row.items() if v is not None})
    for node_id in labels:
        if (num := rec.allocation_number(node_id)) is not None:
            prefix = node_id.rpartition("_")[0]
            marks[prefix] = max(marks[prefix], num)
    if any(marks.values()):
        yield {"kind": "ids", **marks}


def _pages(ids: Sequence[str], size: int = BATCH) -> Iterator[list[str]]:
    for i in range(0, len(ids), size):
        yield list(ids[i : i + size])


def _vector(value: Any) -> Any:
    return None if value is None else np.asarray(value, dtype=np.float32)


def _node(n: dict[str, Any]) -> Record:
    if n["label"] == "Event":
        return {
            "kind": "node", "label": "Event", "id": n["id"], "summary": n.get("summary") or "",
            "content": n.get("content") or "", "time": n.get("time"),
            "create_time": n.get("create_time") or "", "create_date": n.get("create_date") or "",
            "content_hash": n.get("content_hash") or "", "embedding": _vector(n.get("embedding")),
        }  # fmt: skip
    return {
        "kind": "node", "label": q.label(n["label"]), "id": n["id"], "name": n.get("name") or "",
        "aliases": list(n.get("aliases") or []), "description": n.get("description"),
        "create_time": n.get("create_time") or "", "embedding": _vector(n.get("embedding")),
    }  # fmt: skip


def _chunk(c: dict[str, Any]) -> Record:
    return {
        "kind": "chunk", "event_id": c["event_id"], "chunk_index": int(c["chunk_index"]),
        "start": int(c["start"]), "end": int(c["end"]), "text": c.get("text") or "",
        "text_hash": c.get("text_hash") or "", "embedding": _vector(c.get("embedding")),
    }  # fmt: skip


def _relation(r: dict[str, Any]) -> Record:
    return {"kind": "relation", "type": r["type"], "source": r["source"],
            "target": r["target"], "props": dict(r["props"] or {})}  # fmt: skip


def _relation_key(r: Record) -> tuple[str, str, str, str]:
    ek = str(r["props"].get("event_id", "")) if r["type"] == "HAS_ATTITUDE" else ""
    return r["type"], r["source"], r["target"], ek


def _json(text: str) -> Any:
    return json.loads(text)
