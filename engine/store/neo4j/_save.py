"""The Neo4j store's save transaction (``SaveTx``): under the space's lock, ids counted on
from its high-water marks, events and chunks, new, merged and late-twin entities, relations,
the save's topic and its idempotency record.

``execute_write`` re-runs the transaction from the start after a transient failure, so a
``SaveTx`` is made afresh for each attempt and keeps no state outside the transaction.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from neo4j import AsyncManagedTransaction

from mnemoql.engine.drafts import EntityDraft, SavePlan, SaveResult
from mnemoql.engine.errors import Conflict, InvalidInput, NotFound
from mnemoql.engine.models import (
    ENTITY_LABELS,
    ID_PREFIX,
    Chunk,
    EntityLabel,
    NodeLabel,
    RelType,
    epoch_ms,
)
from mnemoql.engine.store import rules
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_read as qread
from mnemoql.engine.store.neo4j import _cypher_write as qwrite
from mnemoql.engine.store.neo4j import _records as rec
from mnemoql.engine.store.neo4j._write import (
    create_chunks,
    labels_of,
    oldest_first,
    run,
    write_topic,
)
from mnemoql.engine.text import normalise_name


class SaveTx:
    """One apply_save: ids (counted on from the space's high-water marks, read under its
    lock), events
    and chunks, new and merged entities, relations, MemoryMeta if absent, idempotency record."""

    def __init__(
        self, tx: AsyncManagedTransaction, space: str, plan: SavePlan, *,
        names_indexed: bool = False,
    ) -> None:  # fmt: skip
        self.tx = tx
        self.names_indexed = names_indexed  # look names up through the name index
        self.space = space
        self.plan = plan
        self.result = SaveResult(event_ids=[], created={}, merged=[], refs={})
        self.labels: dict[str, NodeLabel] = {}
        self._next: dict[NodeLabel, int] = {}
        self._marks: dict[str, Any] = {}  # the space's id marks by prefix, read under its lock
        self._seq = 0
        self._stamp = 0  # the space's ``writes`` value of this transaction (``_changes``)
        self.space_size = 0  # the space's insertion counter after this save

    async def _q(self, query: str, **params: Any) -> list[dict[str, Any]]:
        return await run(self.tx, self.space, query, **params)

    async def run(self) -> SaveResult:
        plan = self.plan
        new_nodes = len(plan.events) + sum(1 for e in plan.entities if e.merge_into is None)
        if plan.topic is not None:  # topic nodes take insertion numbers from the same counter
            new_nodes += len(plan.topic.node_paths())
        lock = await self._q(qwrite.LOCK_SPACE, n=new_nodes)
        self._seq = int(lock[0]["first"])
        self._stamp = int(lock[0]["writes"])
        self._marks = lock[0]["state"]
        self.space_size = self._seq + new_nodes - 1
        if plan.idempotency_key is not None:
            rows = await self._q(qread.GET_RECORD, key=plan.idempotency_key)
            if rows:
                return rules.json_result(rows[0]["result"])
        m = plan.meta
        await self._q(
            qwrite.ENSURE_META,
            model=m.model,
            dims=m.dimensions,
            at=m.updated_at,
            v=m.schema_version,
        )
        await self._events()
        await self._entities()
        await self._record_marks()
        await self._relations()
        if plan.topic is not None:
            await write_topic(
                self.tx, self.space, plan.topic, self.result.event_ids,
                epoch_ms(plan.create_time), self._take_seq, self._stamp,
            )  # fmt: skip
        if plan.idempotency_key is not None:
            await self._q(
                qwrite.PUT_RECORD,
                key=plan.idempotency_key,
                result=rules.result_json(self.result),
                at=datetime.now(UTC).isoformat(),
            )
        return self.result

    async def _take(self, label: NodeLabel) -> tuple[str, int]:
        if label not in self._next:
            mark = self._marks.get(ID_PREFIX[label])
            if mark is None:  # a space from before the marks: count on from the highest id
                mark = (await self._q(qwrite.MAX_NUM[label]))[0]["m"]
            self._next[label] = int(mark or 0) + 1
        n = self._next[label]
        self._next[label] = n + 1
        return f"{ID_PREFIX[label]}_{n}", n

    async def _record_marks(self) -> None:
        """Raise the high-water marks to the ids this save took (as values:
        ``qwrite.LOCK_SPACE``)."""
        raised = {
            qwrite.MARK_PROPERTY[lbl]: n - 1
            for lbl, n in self._next.items()
            if n - 1 > int(self._marks.get(ID_PREFIX[lbl]) or 0)
        }
        if raised:
            await self._q(qwrite.SET_MARKS, marks=raised)

    def _take_seq(self) -> int:
        self._seq += 1
        return self._seq - 1

    async def _events(self) -> None:
        plan = self.plan
        given = [e.given_id for e in plan.events if e.given_id is not None]
        taken = await labels_of(self.tx, self.space, given)
        for gid in given:
            if gid in taken:
                raise Conflict(
                    f"an event with id {gid!r} already exists; choose another id",
                    zh=f"事件 ID 已存在：{gid}",
                    id=gid,
                )
        rows: list[dict[str, Any]] = []
        chunks: list[tuple[str, Chunk]] = []
        for ev in plan.events:
            if ev.given_id is not None:
                node_id, num = ev.given_id, rec.allocation_number(ev.given_id)
            else:
                node_id, num = await self._take("Event")
            rows.append({
                "id": node_id, "num": num, "seq": self._take_seq(), "summary": ev.summary,
                "content": ev.content, "time": ev.time, "content_hash": ev.content_hash,
                **rec.vector_fields(ev.embedding),
            })  # fmt: skip
            chunks += [(node_id, c) for c in ev.chunks]
            self.result.event_ids.append(node_id)
            self.result.refs[ev.ref] = node_id
            self.labels[node_id] = "Event"
        for batch in rec.batches(rows):
            await self._q(
                qwrite.CREATE_EVENTS, rows=batch, create_time=plan.create_time,
                create_date=plan.create_date,
            )  # fmt: skip
        await create_chunks(self.tx, self.space, chunks)

    async def _late_twins(self) -> dict[str, str]:
        """ref -> id of the entity of the same label that already holds one of a new entity's
        names: the plan looked names up before this transaction, so another process may have
        created the same person or concept since (merged by name, never created twice). Its
        reserved insertion number stays unused, a gap like a forgotten node's."""
        twins: dict[str, str] = {}
        for lbl in ENTITY_LABELS:
            new = {
                e.ref: {normalise_name(n) for n in (e.name, *e.aliases)} - {""}
                for e in self.plan.entities
                if e.label == lbl and e.merge_into is None
            }
            keys = sorted(set().union(*new.values())) if new else []
            if not keys:
                continue
            if self.names_indexed:
                rows: list[dict[str, Any]] = []
                for i in range(0, len(keys), q.NAME_LOOKUP_BATCH):
                    batch = keys[i : i + q.NAME_LOOKUP_BATCH]
                    rows += await self._q(qread.FIND_ENTITIES_BY_KEY[lbl], keys=batch)
                found = oldest_first(rows)
            else:
                found = [r["n"] for r in await self._q(qread.FIND_ENTITIES[lbl], keys=keys)]
            for n in found:  # oldest first
                held = {normalise_name(x) for x in (n["name"] or "", *(n["aliases"] or []))}
                for ref, names in new.items():
                    if ref not in twins and names & held:
                        twins[ref] = n["id"]
        return twins

    async def _entities(self) -> None:
        rows: dict[EntityLabel, list[dict[str, Any]]] = {lbl: [] for lbl in ENTITY_LABELS}
        merged: dict[str, list[str]] = {}
        twins = await self._late_twins()
        for ent in self.plan.entities:
            if ent.ref in twins:
                ent = replace(ent, merge_into=twins[ent.ref])
            if ent.merge_into is not None:
                node_id = await self._merge(ent, merged)
            else:
                node_id, num = await self._take(ent.label)
                aliases = rules.clean_aliases(ent.name, ent.aliases, set())
                rows[ent.label].append({
                    "id": node_id, "num": num, "seq": self._take_seq(), "name": ent.name,
                    "aliases": aliases, "norm_names": rec.norm_names([ent.name, *aliases]),
                    "description": ent.description, **rec.vector_fields(ent.embedding),
                })  # fmt: skip
                self.result.created.setdefault(ent.label, []).append(node_id)
            self.result.refs[ent.ref] = node_id
            self.labels[node_id] = ent.label
        self.result.merged = list(merged.items())
        for lbl, label_rows in rows.items():
            for batch in rec.batches(label_rows):
                await self._q(
                    qwrite.CREATE_ENTITIES[lbl], rows=batch, create_time=self.plan.create_time
                )

    async def _merge(self, ent: EntityDraft, merged: dict[str, list[str]]) -> str:
        node_id = ent.merge_into
        assert node_id is not None
        rows = await self._q(qwrite.GET_FOR_MERGE, id=node_id)
        if not rows:
            raise NotFound(
                f"cannot merge into {node_id!r}: no such node", zh=f"节点不存在：{node_id}"
            )
        row = rows[0]
        if row["label"] != ent.label:
            raise InvalidInput(
                f"cannot merge a {ent.label} into {node_id!r}, a {row['label']}",
                zh=f"不能把 {ent.label} 合并到 {node_id!r}（它是 {row['label']}）",
            )
        aliases: list[str] = list(row["aliases"] or [])
        taken = {normalise_name(row["name"] or "")} | {normalise_name(a) for a in aliases}
        added = rules.clean_aliases("", [ent.name, *ent.aliases], taken)
        if added:
            aliases += added
            await self._q(
                qwrite.UPDATE_MERGED,
                id=node_id,
                aliases=aliases,
                norm_names=rec.norm_names([row["name"] or "", *aliases]),
            )
        if row["no_vector"] and ent.embedding is not None:  # merged nodes keep their vector
            await self._q(qwrite.FILL_VECTOR, id=node_id, **rec.vector_fields(ent.embedding))
        merged.setdefault(node_id, []).extend(added)
        return node_id

    async def _relations(self) -> None:
        refs = self.result.refs
        resolved = [(r, refs.get(r.source, r.source), refs.get(r.target, r.target))
                    for r in self.plan.relations]  # fmt: skip
        unknown = [i for _, s, t in resolved for i in (s, t) if i not in self.labels]
        self.labels.update(await labels_of(self.tx, self.space, unknown))
        groups: dict[tuple[NodeLabel, RelType, NodeLabel], list[dict[str, Any]]] = {}
        seen: set[tuple[str, str, str, str]] = set()
        for r, src, dst in resolved:
            kind = q.rel_type(r.type)
            for end, node_id in ((r.source, src), (r.target, dst)):
                if node_id not in self.labels:
                    raise NotFound(
                        f"relation {kind} points to {end!r}, which is neither a ref of this "
                        "save nor an existing node",
                        zh=f"关系端点不存在：{end}",
                    )
            a, b = self.labels[src], self.labels[dst]
            srcs, dsts = qwrite.REL_ENDS[kind]
            if a not in srcs or b not in dsts:
                raise InvalidInput(
                    f"{kind} cannot connect a {a} to a {b}", zh=f"{kind} 不能连接 {a} 与 {b}"
                )
            props = {k: v for k, v in r.props.items() if v is not None}
            ek = ""
            if kind == "HAS_ATTITUDE":
                if r.event_ref is not None:
                    props["event_id"] = refs.get(r.event_ref, r.event_ref)
                elif "event_id" in props:
                    props["event_id"] = refs.get(str(props["event_id"]), str(props["event_id"]))
                ek = str(props.get("event_id", ""))
            key = (kind, src, dst, ek)
            if key in seen:  # the first of duplicate edges wins, as in the embedded store
                continue
            seen.add(key)
            row = {"s": src, "t": dst, "props": props, "ek": ek}
            groups.setdefault((a, kind, b), []).append(row)
        for shape, rows in groups.items():
            for batch in rec.batches(rows):
                await self._q(qwrite.MERGE_REL[shape], rows=batch)
