"""The embedded store's save transaction: ids from the high-water marks, events with their
chunks, entities (new, merged or late twins), relations checked against SPEC §1.2's ends, the
save's topic and its idempotency record. It runs inside one open ``BEGIN IMMEDIATE``
transaction on the store's database thread; raising rolls it all back.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from mnemoql.engine.drafts import EntityDraft, EventDraft, RelationDraft, SavePlan, SaveResult
from mnemoql.engine.errors import Conflict, InvalidInput, NotFound
from mnemoql.engine.models import ID_PREFIX, REL_TYPES, EntityLabel, MemoryMeta, NodeLabel, epoch_ms
from mnemoql.engine.store.embedded import _lexical as lexical
from mnemoql.engine.store.embedded._index import F32, NewEvent
from mnemoql.engine.store.embedded._query import IN_SET, json_set
from mnemoql.engine.store.embedded._schema import (
    LABEL_RANK,
    META_SQL,
    row_meta,
)
from mnemoql.engine.store.embedded._write import as_f32, blob, write_topic
from mnemoql.engine.store.rules import (
    allocation_key,
    check_plan,
    clean_aliases,
    json_result,
    result_json,
)
from mnemoql.engine.text import normalise_name

# SPEC §1.2: which labels each relationship type may connect.
REL_ENDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "PARTICIPATED_IN": (frozenset({"Person"}), frozenset({"Event"})),
    "OCCURRED_AT": (frozenset({"Event"}), frozenset({"Location"})),
    "MENTIONS": (frozenset({"Event"}), frozenset({"Concept"})),
    "HAS_ATTITUDE": (frozenset({"Person"}), frozenset({"Person", "Concept"})),
}

_INSERT_NODE = (
    "INSERT INTO nodes (id, label, lrank, seq, id_prefix, id_num, name, aliases, description, "
    "summary, content, time, content_hash, create_time, create_date, embedding) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_CHUNK = (
    "INSERT INTO chunks (event_id, chunk_index, start_pos, end_pos, text, text_hash, embedding) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)


@dataclass(slots=True)
class Written:
    """What a committed save adds to the in-memory mirrors."""

    result: SaveResult
    events: list[NewEvent] = field(default_factory=list)
    entities: dict[EntityLabel, list[tuple[str, F32 | None]]] = field(default_factory=dict)
    meta: MemoryMeta | None = None


class _Allocator:
    """Ids count on from the prefix's high-water mark (``id_marks``), read once inside the
    transaction; ``commit`` raises the marks to what was taken. Never ``1 + max N`` of the
    nodes that exist now: a forgotten id stays used (cursors, quoteRefs, idempotency records
    and client caches may still hold it)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._next: dict[str, int] = {}
        self._taken: set[str] = set()

    def take(self, prefix: str) -> str:
        if prefix not in self._next:
            row = self._conn.execute(
                "SELECT MAX(COALESCE((SELECT last FROM id_marks WHERE prefix = ?1), 0), "
                "COALESCE((SELECT MAX(id_num) FROM nodes WHERE id_prefix = ?1), 0))",
                (prefix,),
            ).fetchone()
            self._next[prefix] = int(row[0]) + 1
        n = self._next[prefix]
        self._next[prefix] = n + 1
        self._taken.add(prefix)
        return f"{prefix}_{n}"

    def commit(self) -> None:
        """Record the highest id taken of each prefix (inside the same transaction)."""
        self._conn.executemany(
            "INSERT INTO id_marks (prefix, last) VALUES (?, ?) "
            "ON CONFLICT (prefix) DO UPDATE SET last = MAX(last, excluded.last)",
            [(p, self._next[p] - 1) for p in sorted(self._taken)],
        )

    def next_seq(self) -> int:
        if "" not in self._next:
            row = self._conn.execute("SELECT MAX(seq) FROM nodes").fetchone()
            self._next[""] = int(row[0] or 0) + 1
        n = self._next[""]
        self._next[""] = n + 1
        return n


def ensure_meta(conn: sqlite3.Connection, meta: MemoryMeta) -> MemoryMeta:
    conn.execute(
        "INSERT INTO meta (key, model, dimensions, updated_at, schema_version) "
        "VALUES ('embedding', ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING",
        (meta.model, meta.dimensions, meta.updated_at, meta.schema_version),
    )
    stored = row_meta(conn.execute(META_SQL).fetchone())
    assert stored is not None
    return stored


def apply_save(conn: sqlite3.Connection, plan: SavePlan) -> Written:
    if plan.idempotency_key is not None:
        row = conn.execute(
            "SELECT result FROM idempotency WHERE key = ?", (plan.idempotency_key,)
        ).fetchone()
        if row is not None:
            return Written(json_result(row[0]))
    check_plan(plan)
    out = Written(SaveResult(event_ids=[], created={}, merged=[], refs={}))
    out.meta = ensure_meta(conn, plan.meta)
    alloc = _Allocator(conn)
    labels: dict[str, NodeLabel] = {}  # ref or id -> label, for relation checks
    for ev in plan.events:
        node_id = _insert_event(conn, alloc, plan, ev, out)
        out.result.refs[ev.ref] = node_id
        labels[node_id] = "Event"
    lexical.index_saved(conn, plan.events, out.result.refs)
    merged: dict[str, list[str]] = {}
    for ent in [e if e.merge_into else _late_twin(conn, e) for e in plan.entities]:
        if ent.merge_into is not None:
            node_id = _merge_entity(conn, ent, merged, out)
        else:
            node_id = _insert_entity(conn, alloc, plan, ent, out)
            out.result.created.setdefault(ent.label, []).append(node_id)
        out.result.refs[ent.ref] = node_id
        labels[node_id] = ent.label
    out.result.merged = list(merged.items())
    alloc.commit()
    for rel in plan.relations:
        _insert_relation(conn, rel, out.result.refs, labels)
    if plan.topic is not None:
        write_topic(conn, plan.topic, out.result.event_ids, epoch_ms(plan.create_time))
    if plan.idempotency_key is not None:
        conn.execute(
            "INSERT INTO idempotency (key, result, created_at) VALUES (?, ?, ?)",
            (plan.idempotency_key, result_json(out.result), datetime.now(UTC).isoformat()),
        )
    return out


def _insert_event(
    conn: sqlite3.Connection, alloc: _Allocator, plan: SavePlan, ev: EventDraft, out: Written
) -> str:
    if ev.given_id is not None:
        node_id = ev.given_id
        if conn.execute("SELECT 1 FROM nodes WHERE id = ?", (node_id,)).fetchone():
            raise Conflict(
                f"an event with id {node_id!r} already exists; choose another id",
                zh=f"事件 ID 已存在：{node_id}",
                id=node_id,
            )
    else:
        node_id = alloc.take(ID_PREFIX["Event"])
    prefix, num = allocation_key(node_id)
    vec = as_f32(ev.embedding)
    conn.execute(
        _INSERT_NODE,
        (
            node_id,
            "Event",
            LABEL_RANK["Event"],
            alloc.next_seq(),
            prefix,
            num,
            None,
            None,
            None,
            ev.summary,
            ev.content,
            ev.time,
            ev.content_hash,
            plan.create_time,
            plan.create_date,
            blob(vec),
        ),
    )
    new = NewEvent(node_id, plan.create_date, vec)
    rows = []
    for c in ev.chunks:
        cvec = as_f32(c.embedding)
        rows.append((node_id, c.chunk_index, c.start, c.end, c.text, c.text_hash, blob(cvec)))
        if cvec is not None:
            new.chunks.append((c.chunk_index, c.start, c.end, cvec))
    conn.executemany(_INSERT_CHUNK, rows)
    new.chunks.sort(key=lambda c: c[0])
    out.events.append(new)
    out.result.event_ids.append(node_id)
    return node_id


def _add_names(conn: sqlite3.Connection, node_id: str, label: str, names: list[str]) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO names (norm, node_id, label) VALUES (?, ?, ?)",
        [(k, node_id, label) for k in {normalise_name(n) for n in names} if k],
    )


def _insert_entity(
    conn: sqlite3.Connection, alloc: _Allocator, plan: SavePlan, ent: EntityDraft, out: Written
) -> str:
    if ent.label not in ("Person", "Concept", "Location"):
        raise InvalidInput(f"unknown entity label {ent.label!r}", zh=f"未知实体标签 {ent.label!r}")
    node_id = alloc.take(ID_PREFIX[ent.label])
    prefix, num = allocation_key(node_id)
    aliases = clean_aliases(ent.name, list(ent.aliases), set())
    vec = as_f32(ent.embedding)
    conn.execute(
        _INSERT_NODE,
        (
            node_id,
            ent.label,
            LABEL_RANK[ent.label],
            alloc.next_seq(),
            prefix,
            num,
            ent.name,
            json.dumps(aliases, ensure_ascii=False),
            ent.description,
            None,
            None,
            None,
            None,
            plan.create_time,
            None,
            blob(vec),
        ),
    )
    _add_names(conn, node_id, ent.label, [ent.name, *aliases])
    out.entities.setdefault(ent.label, []).append((node_id, vec))
    return node_id


def _late_twin(conn: sqlite3.Connection, ent: EntityDraft) -> EntityDraft:
    """``ent`` as a merge into the entity of its label that already holds one of its names, if
    there is one: the plan looked names up before this transaction, so another process may
    have created the same person or concept since (a new entity is merged by name, never
    created twice)."""
    keys = {normalise_name(n) for n in (ent.name, *ent.aliases)} - {""}
    row = conn.execute(
        f"SELECT n.id FROM nodes n WHERE n.id IN (SELECT node_id FROM names "
        f"WHERE label = ? AND norm IN {IN_SET}) ORDER BY n.seq LIMIT 1",
        (ent.label, json_set(keys)),
    ).fetchone()
    return ent if row is None else replace(ent, merge_into=row[0])


def _merge_entity(
    conn: sqlite3.Connection, ent: EntityDraft, merged: dict[str, list[str]], out: Written
) -> str:
    node_id = ent.merge_into
    assert node_id is not None
    row = conn.execute(
        "SELECT label, name, aliases, embedding IS NULL FROM nodes WHERE id = ?", (node_id,)
    ).fetchone()
    if row is None:
        raise NotFound(f"cannot merge into {node_id!r}: no such node", zh=f"节点不存在：{node_id}")
    if row[0] != ent.label:
        raise InvalidInput(
            f"cannot merge a {ent.label} into {node_id!r}, a {row[0]}",
            zh=f"不能把 {ent.label} 合并到 {node_id!r}（它是 {row[0]}）",
        )
    aliases: list[str] = json.loads(row[2] or "[]")
    taken = {normalise_name(row[1] or "")} | {normalise_name(a) for a in aliases}
    added = clean_aliases("", [ent.name, *ent.aliases], taken)
    if added:
        aliases += added
        conn.execute(
            "UPDATE nodes SET aliases = ? WHERE id = ?",
            (json.dumps(aliases, ensure_ascii=False), node_id),
        )
        _add_names(conn, node_id, ent.label, added)
    vec = as_f32(ent.embedding)
    if row[3] and vec is not None:  # the merged node keeps its vector; fill one only if absent
        conn.execute("UPDATE nodes SET embedding = ? WHERE id = ?", (blob(vec), node_id))
        out.entities.setdefault(ent.label, []).append((node_id, vec))
    merged.setdefault(node_id, []).extend(added)
    return node_id


def _insert_relation(
    conn: sqlite3.Connection,
    draft: RelationDraft,
    refs: dict[str, str],
    labels: dict[str, NodeLabel],
) -> None:
    rel_type, source, target = draft.type, draft.source, draft.target
    if rel_type not in REL_TYPES:
        raise InvalidInput(
            f"unknown relationship type {rel_type!r}", zh=f"未知关系类型 {rel_type!r}"
        )
    ends = []
    for end in (source, target):
        node_id = refs.get(end, end)
        if node_id not in labels:
            row = conn.execute("SELECT label FROM nodes WHERE id = ?", (node_id,)).fetchone()
            if row is None:
                raise NotFound(
                    f"relation {rel_type} points to {end!r}, which is neither a ref of this "
                    "save nor an existing node",
                    zh=f"关系端点不存在：{end}",
                )
            labels[node_id] = row[0]
        ends.append(node_id)
    allowed_src, allowed_dst = REL_ENDS[rel_type]
    if labels[ends[0]] not in allowed_src or labels[ends[1]] not in allowed_dst:
        raise InvalidInput(
            f"{rel_type} cannot connect a {labels[ends[0]]} to a {labels[ends[1]]}",
            zh=f"{rel_type} 不能连接 {labels[ends[0]]} 与 {labels[ends[1]]}",
        )
    clean = {k: v for k, v in draft.props.items() if v is not None}
    event_key = ""
    if rel_type == "HAS_ATTITUDE":
        # event_ref names the event by draft ref (or existing id); a ref left in
        # props["event_id"] is resolved the same way
        stated_in = draft.event_ref if draft.event_ref is not None else clean.get("event_id")
        if stated_in is not None:
            clean["event_id"] = event_key = refs.get(str(stated_in), str(stated_in))
    conn.execute(
        "INSERT INTO relations (type, source, target, event_key, props) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        (
            rel_type,
            ends[0],
            ends[1],
            event_key,
            json.dumps(clean, ensure_ascii=False, sort_keys=True),
        ),
    )
