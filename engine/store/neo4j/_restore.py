"""Whole-memory import of the Neo4j store (the record format of ``engine.dump``); the export
is ``_dump``.

A large memory does not fit one Neo4j transaction, so it is written in batches of ``BATCH``
rows, one transaction each, and made all-or-nothing another way: the import only starts in an
**empty** space (``Conflict`` otherwise, nothing written), marks the space's ``MnemoSpace`` node
``importing`` with a token in the same transaction, checks the token in every batch, and clears
it in the last one. On any failure the space is dropped again. If even that fails (the server
went away), the marker stays, and the next import into that space first deletes the unfinished
one. Nothing else may write to a space while it is being restored.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import Counter
from collections.abc import Iterable
from typing import Any, Final

import numpy as np
from neo4j import AsyncManagedTransaction

from mnemoql.engine.errors import Conflict
from mnemoql.engine.models import (
    ENTITY_LABELS,
    ID_PREFIX,
    NODE_LABELS,
    EntityLabel,
    NodeLabel,
    RelType,
    topic_id,
)
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_write as qwrite
from mnemoql.engine.store.neo4j import _records as rec
from mnemoql.engine.store.neo4j._runner import Runner
from mnemoql.engine.store.neo4j._schema import Schema
from mnemoql.engine.store.neo4j._write import run

log = logging.getLogger(__name__)

Record = dict[str, Any]
BATCH: Final = rec.BATCH
_EVENT_KEYS: Final = ("summary", "content", "time", "create_date", "content_hash")

# ---------------------------------------------------------------- Cypher

_CONTENT_LABELS: Final = "|".join(
    lbl for lbl in qwrite.SPACE_LABELS if lbl not in (q.SPACE_LABEL, qwrite.REMOVAL_LABEL)
)
# The space's lock node: an unfinished import shows as ``importing``; anything else of the
# space means it is not empty.
BEGIN: Final = f"""
MERGE (s:{q.SPACE_LABEL} {{space: $space}})
ON CREATE SET s.seq = 0, s.labelled = true, s.named = true
RETURN s.importing AS importing, EXISTS {{
  MATCH (n:{_CONTENT_LABELS})
  WHERE n.space = $space
}} AS used
"""
MARK: Final = f"MATCH (s:{q.SPACE_LABEL} {{space: $space}}) SET s.importing = $token"
# Every batch re-reads the token: it write-locks the space node and proves the import is ours.
CHECK: Final = (
    f"MATCH (s:{q.SPACE_LABEL} {{space: $space}}) WHERE s.importing = $token "
    "SET s.import_batches = coalesce(s.import_batches, 0) + 1 RETURN count(s) AS n"
)
FINISH: Final = (
    f"MATCH (s:{q.SPACE_LABEL} {{space: $space}}) WHERE s.importing = $token "
    "SET s.seq = $seq, s.writes = coalesce(s.writes, 0) + 1, "
    + ", ".join(f"s.{prop} = ${ID_PREFIX[lbl]}" for lbl, prop in qwrite.MARK_PROPERTY.items())
    # every process's topic index reloads after an import (its bindings carry no stamp)
    + " SET s.topics_reload = s.writes"
    + " REMOVE s.importing, s.import_batches RETURN count(s) AS n"
)
IMPORT_META: Final = """
UNWIND $rows AS r
CREATE (m:MemoryMeta {space: $space, key: 'embedding', model: r.model, dimensions: r.dimensions,
                      updated_at: r.updated_at, schema_version: r.schema_version})
RETURN count(m) AS n
"""
IMPORT_EVENTS: Final = """
UNWIND $rows AS r
CREATE (e:Event:$($events_label) {space: $space, id: r.id, num: r.num, seq: r.seq,
                 summary: r.summary, content: r.content, time: r.time, create_time: r.create_time,
                 create_date: r.create_date, content_hash: r.content_hash,
                 embedding: r.embedding, embedding_zero: r.zero, embedding_dims: r.dims})
RETURN count(e) AS n
"""
IMPORT_ENTITIES: Final[dict[EntityLabel, str]] = {
    lbl: f"""
UNWIND $rows AS r
CREATE (n:{lbl} {{space: $space, id: r.id, num: r.num, seq: r.seq, name: r.name,
                 aliases: r.aliases, norm_names: r.norm_names, name_keys: {q.NAME_KEYS_OF_ROW},
                 description: r.description, create_time: r.create_time,
                 embedding: r.embedding, embedding_zero: r.zero, embedding_dims: r.dims}})
RETURN count(n) AS n
"""
    for lbl in ENTITY_LABELS
}
IMPORT_CHUNKS: Final = qwrite.CREATE_CHUNKS + "RETURN count(c) AS n\n"  # a save's, counted
IMPORT_RELATIONS: Final[dict[tuple[NodeLabel, RelType, NodeLabel], str]] = {
    (src, kind, dst): f"""
UNWIND $rows AS r
MATCH (a:{src} {{space: $space, id: r.s}})
MATCH (b:{dst} {{space: $space, id: r.t}})
CREATE (a)-[x:{kind}]->(b)
SET x = r.props
RETURN count(x) AS n
"""
    for src, kind, dst in qwrite.MERGE_REL
}
IMPORT_TOPICS: Final = """
UNWIND $rows AS r
CREATE (t:Topic {space: $space, id: r.id, path: r.path, name: r.name, parent: r.parent,
                 seq: r.seq})
WITH t, r
OPTIONAL MATCH (p:Topic {space: $space, id: r.parent_id})
FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END | CREATE (p)-[:SUBTOPIC]->(t))
RETURN count(t) AS n
"""
IMPORT_BINDINGS: Final = """
UNWIND $rows AS r
MATCH (t:Topic {space: $space, id: r.topic})
MATCH (e:Event {space: $space, id: r.event_id})
CREATE (t)-[b:BINDS {timestamp: r.timestamp, activation_weight: r.activation,
                     diffusion_weight: r.diffusion,
                     context_independence_weight: r.independence, related_paths: r.related}]->(e)
RETURN count(b) AS n
"""
MARK_STALE: Final = "MATCH (m:MemoryMeta {space: $space, key: 'embedding'}) SET m.stale = true"
IMPORT_NOTHING: Final = "RETURN size($rows) AS n"  # records whose content _finish writes
IMPORT_SAVE_RECORDS: Final = f"""
UNWIND $rows AS r
CREATE (x:{q.RECORD_LABEL} {{space: $space, key: r.key, result: r.result,
                            created_at: r.created_at}})
RETURN count(x) AS n
"""


def _vector_row(v: Any) -> dict[str, Any]:
    """Stored as given (``engine.dump`` already made it unit length): no second scaling, so
    the exported bits come back exactly."""
    if v is None:
        return {"embedding": None, "zero": None, "dims": None}
    arr = np.asarray(v, dtype=np.float32)
    zero = True if not arr.any() else None
    return {"embedding": arr.astype(np.float64).tolist(), "zero": zero, "dims": int(arr.size)}


class Importer:
    """One import into one (empty) space; see the module docstring."""

    def __init__(self, runner: Runner, schema: Schema) -> None:
        self.runner = runner
        self.schema = schema
        self.token = uuid.uuid4().hex
        self.counts: Counter[str] = Counter()
        self.labels: dict[str, NodeLabel] = {}
        self.seq = 0
        self.dims: int | None = None
        self.marks: dict[str, int] = dict.fromkeys(ID_PREFIX.values(), 0)
        self.events = 0
        self.vectors = 0  # records that carried an embedding

    async def run(self, records: Iterable[Record]) -> dict[str, int]:
        await self._begin()
        try:
            kind, rows = "", list[Record]()
            for record in records:
                if record["kind"] != kind or len(rows) >= BATCH:
                    await self._flush(kind, rows)
                    kind, rows = record["kind"], []
                rows.append(record)
            await self._flush(kind, rows)
            await self._finish()
        except BaseException:
            await self._undo()
            raise
        if self.dims is not None and not self.schema.vector_indexes:
            await self.schema.create_vector_indexes(self.dims)
        return dict(self.counts)

    async def _begin(self, retry: bool = True) -> None:
        async def work(tx: AsyncManagedTransaction) -> bool:
            rows = await run(tx, self.runner.space, BEGIN)
            if rows[0]["importing"]:
                return False  # leftovers of an unfinished import: drop them first
            if rows[0]["used"]:
                raise Conflict(
                    f"memory space {self.runner.space!r} is not empty; restore only into a "
                    "new, empty space (another --space, or another database)",
                    zh="目标记忆空间非空",
                )
            await run(tx, self.runner.space, MARK, token=self.token)
            return True

        if not await self.runner.write(work):
            if not retry:
                raise Conflict(
                    f"memory space {self.runner.space!r} is being restored already",
                    zh=f"记忆空间 {self.runner.space!r} 正在恢复中",
                )
            log.warning("space %r holds an unfinished restore; deleting it", self.runner.space)
            await self.schema.drop_space()
            await self._begin(retry=False)

    async def _undo(self) -> None:
        try:
            await self.schema.drop_space()
        except Exception:
            log.warning(
                "could not undo the failed restore of space %r; the next restore into it "
                "deletes it first", self.runner.space, exc_info=True,
            )  # fmt: skip

    async def _finish(self) -> None:
        if self.events and not self.vectors:  # MemoryMeta.stale until a re-vectorize
            await self.runner.run(MARK_STALE, writable=True)
        params = {"token": self.token, "seq": self.seq, **self.marks}
        rows = await self.runner.run(FINISH, params, writable=True)
        if not rows or int(rows[0]["n"]) != 1:
            raise Conflict(
                f"the restore of space {self.runner.space!r} was taken over",
                zh=f"空间 {self.runner.space!r} 的恢复已被另一进程接管",
            )

    async def _flush(self, kind: str, records: list[Record]) -> None:
        if not records:
            return
        statements = getattr(self, f"_{kind}")(records)
        expected = len(records)

        async def work(tx: AsyncManagedTransaction) -> int:
            ok = await run(tx, self.runner.space, CHECK, token=self.token)
            if int(ok[0]["n"]) != 1:
                raise Conflict(
                    f"the restore of space {self.runner.space!r} was taken over",
                    zh=f"空间 {self.runner.space!r} 的恢复已被另一进程接管",
                )
            written = 0
            for query, rows in statements:
                out = await run(tx, self.runner.space, query, rows=rows)
                written += int(out[0]["n"]) if out else 0
            return written

        written = await self.runner.write(work)
        if written != expected:
            raise Conflict(
                f"restoring {kind} records wrote {written} of {expected}: the space changed "
                "during the restore",
                zh=f"恢复 {kind} 记录时写入 {written}/{expected} 条：恢复期间空间被改动",
            )
        self.counts[kind] += expected

    # Each returns the (query, rows) statements of one batch.

    def _meta(self, records: list[Record]) -> list[tuple[str, list[Record]]]:
        self.dims = int(records[0]["dimensions"])
        rows = [{k: r[k] for k in ("model", "dimensions", "updated_at", "schema_version")}
                for r in records]  # fmt: skip
        return [(IMPORT_META, rows)]

    def _node(self, records: list[Record]) -> list[tuple[str, list[Record]]]:
        by_label: dict[NodeLabel, list[Record]] = {lbl: [] for lbl in NODE_LABELS}
        for r in records:
            label: NodeLabel = q.label(r["label"])
            self.seq += 1
            self.events += label == "Event"
            self.vectors += r.get("embedding") is not None
            self.labels[r["id"]] = label
            num = rec.allocation_number(r["id"])
            if num is not None:
                prefix = r["id"].rpartition("_")[0]
                self.marks[prefix] = max(self.marks[prefix], num)
            row = {"id": r["id"], "num": num, "seq": self.seq,
                   "create_time": r["create_time"], **_vector_row(r.get("embedding"))}  # fmt: skip
            if label == "Event":
                row.update({k: r[k] for k in _EVENT_KEYS})
            else:
                row.update({"name": r["name"], "aliases": list(r["aliases"]),
                            "norm_names": rec.norm_names([r["name"], *r["aliases"]]),
                            "description": r["description"]})  # fmt: skip
            by_label[label].append(row)
        out = [(IMPORT_EVENTS, by_label["Event"])]
        out += [(IMPORT_ENTITIES[lbl], by_label[lbl]) for lbl in ENTITY_LABELS]
        return [(query, rows) for query, rows in out if rows]

    def _chunk(self, records: list[Record]) -> list[tuple[str, list[Record]]]:
        self.vectors += sum(r.get("embedding") is not None for r in records)
        rows = [
            {k: r[k] for k in ("event_id", "chunk_index", "start", "end", "text", "text_hash")}
            | _vector_row(r.get("embedding"))
            for r in records
        ]
        return [(IMPORT_CHUNKS, rows)]

    def _relation(self, records: list[Record]) -> list[tuple[str, list[Record]]]:
        groups: dict[tuple[NodeLabel, RelType, NodeLabel], list[Record]] = {}
        for r in records:
            shape = (self.labels[r["source"]], q.rel_type(r["type"]), self.labels[r["target"]])
            groups.setdefault(shape, []).append(
                {"s": r["source"], "t": r["target"], "props": r["props"]}
            )
        return [(IMPORT_RELATIONS[shape], rows) for shape, rows in groups.items()]

    def _topic(self, records: list[Record]) -> list[tuple[str, list[Record]]]:
        rows = []
        for r in records:
            self.seq += 1
            parent = r["parent"]
            rows.append({"id": topic_id(r["path"]), "path": r["path"], "name": r["name"],
                         "parent": parent, "seq": self.seq,
                         "parent_id": None if parent is None else topic_id(parent)})  # fmt: skip
        return [(IMPORT_TOPICS, rows)]

    def _binding(self, records: list[Record]) -> list[tuple[str, list[Record]]]:
        rows = [
            {"topic": topic_id(r["path"]), "event_id": r["event_id"], "timestamp": r["timestamp"],
             "activation": r["activation"], "diffusion": r["diffusion"],
             "independence": r["context_independence"], "related": list(r["related"])}
            for r in records
        ]  # fmt: skip
        return [(IMPORT_BINDINGS, rows)]

    def _ids(self, records: list[Record]) -> list[tuple[str, list[Record]]]:
        """The marks are written by ``_finish`` (with the seq counter); the batch only proves
        the import is still ours, like every other."""
        for r in records:
            for prefix in self.marks:
                self.marks[prefix] = max(self.marks[prefix], int(r[prefix]))
        return [(IMPORT_NOTHING, records)]

    def _save_record(self, records: list[Record]) -> list[tuple[str, list[Record]]]:
        rows = [{"key": r["key"], "result": json.dumps(r["result"], ensure_ascii=False),
                 "created_at": r["created_at"]} for r in records]  # fmt: skip
        return [(IMPORT_SAVE_RECORDS, rows)]
