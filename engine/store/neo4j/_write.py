"""The Neo4j store's write transactions other than the save (``_save.py``): topic bindings,
re-vectorizing and forgetting, and the statement helpers every transaction uses (``run``,
``labels_of``, ``create_chunks``, ``oldest_first``).

Each function runs inside one managed write transaction. ``execute_write`` re-runs a function
from the start after a transient failure (a deadlock, a leader switch), so they keep no state
outside the transaction; raising rolls everything back. Every write first locks its space
(``LOCK_SPACE``), which serialises writers of one space across processes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from neo4j import AsyncManagedTransaction

from mnemoql.engine.drafts import TopicDraft
from mnemoql.engine.errors import NotFound
from mnemoql.engine.models import (
    NODE_LABELS,
    TOPIC_SEPARATOR,
    Chunk,
    NodeLabel,
    VectorSet,
    topic_id,
)
from mnemoql.engine.store.neo4j import _changes as changes
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_write as qwrite
from mnemoql.engine.store.neo4j import _records as rec

_LABEL_RANK = {lbl: i for i, lbl in enumerate(NODE_LABELS)}


async def run(
    tx: AsyncManagedTransaction, space: str, query: str, **params: Any
) -> list[dict[str, Any]]:
    # Every statement gets the space and its labels (``_cypher.space_params``).
    result = await tx.run(query, rec.quiet({"space": space, **q.space_params(space), **params}))
    # Every query returns plain values and maps (projections, never Node objects), so a record
    # becomes a dict as is: Record.data() would walk every float of every vector in Python.
    return [dict(zip(r.keys(), r, strict=True)) async for r in result]


async def labels_of(
    tx: AsyncManagedTransaction, space: str, ids: Sequence[str]
) -> dict[str, NodeLabel]:
    """The label of each id that names an Event/Person/Concept/Location of the space."""
    if not ids:
        return {}
    rows = await run(tx, space, qwrite.LABELS_OF, ids=list(dict.fromkeys(ids)))
    return {r["id"]: q.label(r["label"]) for r in rows}


async def create_chunks(
    tx: AsyncManagedTransaction, space: str, chunks: Sequence[tuple[str, Chunk]]
) -> None:
    """EventSource nodes for (event id, chunk) pairs; chunks of unknown events are skipped."""
    rows = []
    for event_id, c in chunks:
        rows.append({
            "event_id": event_id, "chunk_index": c.chunk_index, "start": c.start,
            "end": c.end, "text": c.text, "text_hash": c.text_hash,
            **rec.vector_fields(c.embedding),
        })  # fmt: skip
    for batch in rec.batches(rows):
        await run(tx, space, qwrite.CREATE_CHUNKS, rows=batch)


# ---------------------------------------------------------------- name-index rows


def oldest_first(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entities of name-index rows (``seq``, ``n``; batches of keys may find one twice),
    in insertion order."""
    seen: dict[str, tuple[int, dict[str, Any]]] = {}
    for r in rows:
        seen.setdefault(r["n"]["id"], (int(r["seq"] or 0), r["n"]))
    return [n for _, n in sorted(seen.values(), key=lambda x: x[0])]


# ---------------------------------------------------------------- topics


async def write_topic(
    tx: AsyncManagedTransaction,
    space: str,
    draft: TopicDraft,
    event_ids: Sequence[str],
    timestamp: int,
    take_seq: Callable[[], int],
    stamp: int,
) -> None:
    """Topic nodes along the path and the related paths (with SUBTOPIC links), then one BINDS
    per event; NotFound if an id is not an event of the space."""
    rows = []
    for path in draft.node_paths():
        parts = path.split(TOPIC_SEPARATOR)
        parent = TOPIC_SEPARATOR.join(parts[:-1]) if len(parts) > 1 else None
        rows.append({
            "id": topic_id(path), "path": path, "name": parts[-1], "parent": parent,
            "parent_id": topic_id(parent) if parent is not None else None, "seq": take_seq(),
        })  # fmt: skip
    await run(tx, space, qwrite.MERGE_TOPICS, rows=rows)
    await run(tx, space, qwrite.MERGE_SUBTOPICS, rows=[r for r in rows if r["parent"] is not None])
    ids = list(dict.fromkeys(event_ids))
    found = await run(
        tx, space, qwrite.BIND_TOPIC, topic=topic_id(draft.path), ids=ids, timestamp=timestamp,
        activation=float(draft.activation), diffusion=float(draft.diffusion),
        independence=float(draft.context_independence), related=list(draft.related), stamp=stamp,
    )  # fmt: skip
    if int(found[0]["bound"]) != len(ids):
        known = {r["id"] for r in await run(tx, space, qwrite.EVENT_IDS, ids=ids)}
        missing = [i for i in ids if i not in known]
        raise NotFound(
            f"cannot bind {', '.join(missing)}: no such event", zh=f"事件不存在：{missing[0]}"
        )


async def bind_topic(
    tx: AsyncManagedTransaction,
    space: str,
    draft: TopicDraft,
    event_ids: Sequence[str],
    timestamp: int,
) -> None:
    draft.check()
    lock = await run(tx, space, qwrite.LOCK_SPACE, n=len(draft.node_paths()))
    seq = iter(range(int(lock[0]["first"]), 1 << 62))
    stamp = int(lock[0]["writes"])
    await write_topic(tx, space, draft, event_ids, timestamp, lambda: next(seq), stamp)


# ---------------------------------------------------------------- revectorize, forget


async def replace_vectors(tx: AsyncManagedTransaction, space: str, vectors: VectorSet) -> None:
    """Every embedding swapped (nodes absent from ``vectors`` lose theirs), all chunks rebuilt
    (chunks of unknown events skipped) and MemoryMeta set -- the data half of SPEC §1.12."""
    await run(tx, space, qwrite.LOCK_SPACE, n=0)
    for statement in qwrite.CLEAR_VECTORS.values():
        await run(tx, space, statement)
    labels = await labels_of(tx, space, list(vectors.entities))
    by_label: dict[NodeLabel, list[dict[str, Any]]] = {lbl: [] for lbl in NODE_LABELS}
    for node_id, v in vectors.events.items():
        by_label["Event"].append({"id": node_id, **rec.vector_fields(v)})
    for node_id, v in vectors.entities.items():
        lbl = labels.get(node_id)
        if lbl is not None and lbl != "Event":
            by_label[lbl].append({"id": node_id, **rec.vector_fields(v)})
    for lbl, rows in by_label.items():
        for batch in rec.batches(rows):
            await run(tx, space, qwrite.SET_VECTORS[lbl], rows=batch)
    await run(tx, space, qwrite.DELETE_CHUNKS)
    await create_chunks(tx, space, [(c.event_id, c) for c in vectors.chunks])
    m = vectors.meta
    await run(
        tx, space, qwrite.SET_META, model=m.model, dims=m.dimensions, at=m.updated_at,
        v=m.schema_version,
    )  # fmt: skip


async def forget(tx: AsyncManagedTransaction, space: str, event_id: str) -> list[str]:
    """Delete the event, its chunks and the attitudes stated in it, then every entity it
    touched that no longer relates to any event; [event id, pruned ids by label then id]."""
    lock = await run(tx, space, qwrite.LOCK_SPACE, n=0)
    rows = await run(tx, space, qwrite.FORGET_TOUCHED, id=event_id)
    if not rows:
        raise NotFound(f"no event with id {event_id!r}", zh=f"事件不存在：{event_id}", id=event_id)
    touched = list(dict.fromkeys([*rows[0]["adjacent"], *rows[0]["attitude_ends"]]))
    await changes.log_removal(
        tx, space, event_id, changes.KEEP, int(lock[0]["writes"]), lock[0]["state"]
    )
    for statement in qwrite.FORGET_DELETE:
        await run(tx, space, statement, id=event_id)
    pruned = await run(tx, space, qwrite.FORGET_PRUNE, ids=touched)
    order = sorted((_LABEL_RANK[q.label(r["label"])], r["id"]) for r in pruned)
    return [event_id, *(i for _, i in order)]
