"""Whole-memory export and import of the embedded store (the record format of ``engine.dump``).

Export reads through its own SQLite connection inside one read transaction, so the dump is a
consistent snapshot (WAL) while saves go on; it runs on a thread of its own, a page of rows at
a time. Import runs on the store's database thread as **one** ``BEGIN IMMEDIATE`` transaction:
it refuses a space that holds anything (``Conflict``), and any failure -- a bad record found
late, a truncated file -- rolls the whole import back.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections import Counter
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from mnemoql.engine.errors import Conflict
from mnemoql.engine.models import ID_PREFIX, NodeLabel
from mnemoql.engine.store.embedded import _lexical as lexical
from mnemoql.engine.store.embedded._db import Database
from mnemoql.engine.store.embedded._schema import (
    BINDING_COLS,
    CATCH_UP_MARKS,
    LABEL_RANK,
    MARK_STALE,
)
from mnemoql.engine.store.rules import allocation_key
from mnemoql.engine.text import normalise_name

Record = dict[str, Any]
PAGE = 500

_NODE_SQL = (
    "SELECT label, id, name, aliases, description, create_time, summary, content, time, "
    "create_date, content_hash, {vec} FROM nodes ORDER BY seq"
)
_CHUNK_SQL = (
    "SELECT event_id, chunk_index, start_pos, end_pos, text, text_hash, {vec} FROM chunks "
    "ORDER BY event_id, chunk_index"
)
_INSERT_NODE = (
    "INSERT INTO nodes (id, label, lrank, seq, id_prefix, id_num, name, aliases, description, "
    "summary, content, time, content_hash, create_time, create_date, embedding) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


# ---------------------------------------------------------------- export


async def export_records(file: Path, vectors: bool) -> AsyncIterator[Record]:
    """Every record of the database at ``file``, from one read snapshot."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mnemoql-export")
    pages = _pages(file, vectors)
    loop = asyncio.get_running_loop()
    try:
        while True:
            page = await loop.run_in_executor(pool, next, pages, None)
            if page is None:
                return
            for record in page:
                yield record
    finally:
        await loop.run_in_executor(pool, pages.close)  # closes the connection on its thread
        pool.shutdown(wait=False)


def _pages(file: Path, vectors: bool) -> Generator[list[Record], None, None]:
    conn = sqlite3.connect(f"file:{file}?mode=ro", uri=True, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 10000")
        conn.execute("BEGIN")  # the snapshot starts at the first read and ends at COMMIT
        vec = "embedding" if vectors else "NULL"
        meta = conn.execute(
            "SELECT model, dimensions, updated_at, schema_version FROM meta WHERE key = 'embedding'"
        ).fetchone()
        if meta is not None:
            yield [{"kind": "meta", "model": meta[0], "dimensions": int(meta[1]),
                    "updated_at": meta[2], "schema_version": int(meta[3])}]  # fmt: skip
        yield from _paged(conn.execute(_NODE_SQL.format(vec=vec)), _node)
        yield from _paged(conn.execute(_CHUNK_SQL.format(vec=vec)), _chunk)
        yield from _paged(
            conn.execute(
                "SELECT type, source, target, props FROM relations "
                "ORDER BY type, source, target, event_key"
            ),
            _relation,
        )
        yield from _paged(conn.execute("SELECT path, name, parent FROM topics ORDER BY seq"),
                          _topic)  # fmt: skip
        yield from _paged(
            conn.execute(
                f"SELECT {BINDING_COLS} FROM topic_bindings b JOIN nodes e ON e.id = b.event_id "
                "JOIN topics t ON t.path = b.path ORDER BY e.seq, t.seq"
            ),
            _binding,
        )
        yield from _paged(
            conn.execute("SELECT key, result, created_at FROM idempotency ORDER BY key"),
            _save_record,
        )
        if (ids := _ids(conn)) is not None:
            yield [ids]
        conn.execute("COMMIT")
    finally:
        conn.close()


def _paged(
    cursor: sqlite3.Cursor, convert: Callable[[tuple[Any, ...]], Record]
) -> Iterator[list[Record]]:
    while rows := cursor.fetchmany(PAGE):
        yield [convert(r) for r in rows]


def _vector(blob: bytes | None) -> Any:
    return None if blob is None else np.frombuffer(blob, dtype=np.float32).copy()


def _node(r: tuple[Any, ...]) -> Record:
    if r[0] == "Event":
        return {
            "kind": "node", "label": "Event", "id": r[1], "summary": r[6] or "",
            "content": r[7] or "", "time": r[8], "create_time": r[5],
            "create_date": r[9] or "", "content_hash": r[10] or "", "embedding": _vector(r[11]),
        }  # fmt: skip
    return {
        "kind": "node", "label": r[0], "id": r[1], "name": r[2] or "",
        "aliases": json.loads(r[3] or "[]"), "description": r[4], "create_time": r[5],
        "embedding": _vector(r[11]),
    }  # fmt: skip


def _chunk(r: tuple[Any, ...]) -> Record:
    return {
        "kind": "chunk", "event_id": r[0], "chunk_index": int(r[1]), "start": int(r[2]),
        "end": int(r[3]), "text": r[4], "text_hash": r[5], "embedding": _vector(r[6]),
    }  # fmt: skip


def _relation(r: tuple[Any, ...]) -> Record:
    return {"kind": "relation", "type": r[0], "source": r[1], "target": r[2],
            "props": json.loads(r[3] or "{}")}  # fmt: skip


def _topic(r: tuple[Any, ...]) -> Record:
    return {"kind": "topic", "path": r[0], "name": r[1], "parent": r[2]}


def _binding(r: tuple[Any, ...]) -> Record:
    return {
        "kind": "binding", "path": r[0], "event_id": r[1], "timestamp": int(r[2]),
        "activation": float(r[3]), "diffusion": float(r[4]),
        "context_independence": float(r[5]), "related": json.loads(r[6] or "[]"),
    }  # fmt: skip


def _ids(conn: sqlite3.Connection) -> Record | None:
    """The high-water marks (never below an allocated id present), or None when no id was
    ever allocated."""
    marks = dict.fromkeys(ID_PREFIX.values(), 0)
    for prefix, last in conn.execute(_MARKS_SQL):
        if prefix in marks:
            marks[prefix] = max(marks[prefix], int(last))
    if not any(marks.values()):
        return None
    return {"kind": "ids", **marks}


_MARKS_SQL = (
    "SELECT prefix, last FROM id_marks UNION ALL "
    "SELECT id_prefix, MAX(id_num) FROM nodes WHERE id_prefix IS NOT NULL GROUP BY id_prefix"
)


def _save_record(r: tuple[Any, ...]) -> Record:
    return {"kind": "save_record", "key": r[0], "result": json.loads(r[1]), "created_at": r[2]}


# ---------------------------------------------------------------- import


def import_records(db: Database, records: Iterable[Record]) -> dict[str, int]:
    """Write ``records`` into the empty space of ``db`` in one transaction (runs on the
    database thread); then rebuild the vector mirrors."""
    return db.rewrite(_import, records)


_EMPTY_SQL = (
    "SELECT EXISTS (SELECT 1 FROM nodes) OR EXISTS (SELECT 1 FROM meta) "
    "OR EXISTS (SELECT 1 FROM topics) OR EXISTS (SELECT 1 FROM idempotency) "
    "OR EXISTS (SELECT 1 FROM chunks) OR EXISTS (SELECT 1 FROM id_marks WHERE last > 0)"
)


def _import(conn: sqlite3.Connection, records: Iterable[Record]) -> dict[str, int]:
    if conn.execute(_EMPTY_SQL).fetchone()[0]:
        raise Conflict(
            "this memory space is not empty; restore only into a new, empty space "
            "(another --space, or a fresh data directory)",
            zh="目标记忆空间非空",
        )
    counts: Counter[str] = Counter()
    seq = {"node": 0, "topic": 0}
    for rec in records:
        kind = rec["kind"]
        if kind in seq:
            seq[kind] += 1
        _WRITERS[kind](conn, rec, seq.get(kind, 0))
        counts[kind] += 1
    lexical.rebuild(conn)  # derived from the restored chunks and summaries
    conn.execute(CATCH_UP_MARKS)  # a version 1 dump has no ids record
    conn.execute(MARK_STALE)
    return dict(counts)


def _blob(rec: Record) -> bytes | None:
    v = rec.get("embedding")
    return None if v is None else np.asarray(v, dtype=np.float32).tobytes()


def _write_meta(conn: sqlite3.Connection, rec: Record, _: int) -> None:
    conn.execute(
        "INSERT INTO meta (key, model, dimensions, updated_at, schema_version) "
        "VALUES ('embedding', ?, ?, ?, ?)",
        (rec["model"], rec["dimensions"], rec["updated_at"], rec["schema_version"]),
    )


def _write_node(conn: sqlite3.Connection, rec: Record, seq: int) -> None:
    label: NodeLabel = rec["label"]
    prefix, num = allocation_key(rec["id"])
    event = label == "Event"
    conn.execute(
        _INSERT_NODE,
        (
            rec["id"], label, LABEL_RANK[label], seq, prefix, num,
            None if event else rec["name"],
            None if event else json.dumps(rec["aliases"], ensure_ascii=False),
            None if event else rec["description"],
            rec["summary"] if event else None, rec["content"] if event else None,
            rec["time"] if event else None, rec["content_hash"] if event else None,
            rec["create_time"], rec["create_date"] if event else None, _blob(rec),
        ),
    )  # fmt: skip
    if not event:
        names = {normalise_name(n) for n in [rec["name"], *rec["aliases"]]}
        conn.executemany(
            "INSERT OR IGNORE INTO names (norm, node_id, label) VALUES (?, ?, ?)",
            [(k, rec["id"], label) for k in names if k],
        )


def _write_chunk(conn: sqlite3.Connection, rec: Record, _: int) -> None:
    conn.execute(
        "INSERT INTO chunks (event_id, chunk_index, start_pos, end_pos, text, text_hash, "
        "embedding) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (rec["event_id"], rec["chunk_index"], rec["start"], rec["end"], rec["text"],
         rec["text_hash"], _blob(rec)),
    )  # fmt: skip


def _write_relation(conn: sqlite3.Connection, rec: Record, _: int) -> None:
    props = rec["props"]
    event_key = str(props.get("event_id", "")) if rec["type"] == "HAS_ATTITUDE" else ""
    conn.execute(
        "INSERT INTO relations (type, source, target, event_key, props) VALUES (?, ?, ?, ?, ?)",
        (rec["type"], rec["source"], rec["target"], event_key,
         json.dumps(props, ensure_ascii=False, sort_keys=True)),
    )  # fmt: skip


def _write_topic(conn: sqlite3.Connection, rec: Record, seq: int) -> None:
    conn.execute(
        "INSERT INTO topics (path, name, parent, seq) VALUES (?, ?, ?, ?)",
        (rec["path"], rec["name"], rec["parent"], seq),
    )


def _write_binding(conn: sqlite3.Connection, rec: Record, _: int) -> None:
    conn.execute(
        "INSERT INTO topic_bindings (path, event_id, timestamp, activation, diffusion, "
        "context_independence, related) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (rec["path"], rec["event_id"], rec["timestamp"], rec["activation"], rec["diffusion"],
         rec["context_independence"], json.dumps(rec["related"], ensure_ascii=False)),
    )  # fmt: skip


def _write_save_record(conn: sqlite3.Connection, rec: Record, _: int) -> None:
    conn.execute(
        "INSERT INTO idempotency (key, result, created_at) VALUES (?, ?, ?)",
        (rec["key"], json.dumps(rec["result"], ensure_ascii=False), rec["created_at"]),
    )


def _write_ids(conn: sqlite3.Connection, rec: Record, _: int) -> None:
    conn.executemany(
        "INSERT INTO id_marks (prefix, last) VALUES (?, ?) "
        "ON CONFLICT (prefix) DO UPDATE SET last = MAX(last, excluded.last)",
        [(prefix, int(rec[prefix])) for prefix in ID_PREFIX.values()],
    )


_WRITERS: dict[str, Callable[[sqlite3.Connection, Record, int], None]] = {
    "meta": _write_meta,
    "node": _write_node,
    "chunk": _write_chunk,
    "relation": _write_relation,
    "topic": _write_topic,
    "binding": _write_binding,
    "save_record": _write_save_record,
    "ids": _write_ids,
}
