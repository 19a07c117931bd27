"""SQLite layout of the embedded store and the row <-> record conversions.

One database file per memory space. Vectors are float32 BLOBs, L2-normalised on write.
EventSource chunks live in their own table keyed by (event_id, chunk_index), as SPEC §1.2 links
them by property, not by a relationship.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import numpy as np

from mnemoql.engine.models import (
    NODE_LABELS,
    Binding,
    Chunk,
    Entity,
    EntityLabel,
    Event,
    MemoryMeta,
    Node,
    NodeLabel,
    Relation,
    RelType,
    Topic,
    Vector,
)
from mnemoql.engine.store.embedded._index import normalise

LAYOUT_VERSION = 2  # 2: id_marks

DDL = """
CREATE TABLE IF NOT EXISTS nodes (
    id           TEXT PRIMARY KEY,
    label        TEXT NOT NULL CHECK (label IN ('Event', 'Person', 'Concept', 'Location')),
    lrank        INTEGER NOT NULL,          -- label order of the graph page
    seq          INTEGER NOT NULL,          -- insertion order
    id_prefix    TEXT,                      -- 'event' for event_12 ...
    id_num       INTEGER,                   -- ... and 12: what the allocator takes max() of
    name         TEXT,
    aliases      TEXT,                      -- JSON list
    description  TEXT,
    summary      TEXT,
    content      TEXT,
    time         TEXT,
    content_hash TEXT,
    create_time  TEXT NOT NULL,
    create_date  TEXT,
    embedding    BLOB
);
CREATE INDEX IF NOT EXISTS nodes_alloc ON nodes (id_prefix, id_num);
CREATE UNIQUE INDEX IF NOT EXISTS nodes_seq ON nodes (seq);
CREATE INDEX IF NOT EXISTS nodes_label_seq ON nodes (label, seq);
CREATE INDEX IF NOT EXISTS nodes_rank ON nodes (lrank, id);
CREATE INDEX IF NOT EXISTS nodes_label_time ON nodes (label, create_time, id);
CREATE INDEX IF NOT EXISTS nodes_label_date ON nodes (label, create_date, id);
CREATE INDEX IF NOT EXISTS nodes_hash ON nodes (content_hash) WHERE content_hash IS NOT NULL;

CREATE TABLE IF NOT EXISTS relations (
    type      TEXT NOT NULL,
    source    TEXT NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    target    TEXT NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    event_key TEXT NOT NULL DEFAULT '',     -- HAS_ATTITUDE's event_id: one edge per event
    props     TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (type, source, target, event_key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS relations_source ON relations (source, type, target);
CREATE INDEX IF NOT EXISTS relations_target ON relations (target, type, source);
CREATE INDEX IF NOT EXISTS relations_event_key ON relations (event_key) WHERE event_key <> '';

CREATE TABLE IF NOT EXISTS chunks (
    event_id    TEXT NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    chunk_index INTEGER NOT NULL,
    start_pos   INTEGER NOT NULL,
    end_pos     INTEGER NOT NULL,
    text        TEXT NOT NULL,
    text_hash   TEXT NOT NULL,
    embedding   BLOB,
    PRIMARY KEY (event_id, chunk_index)
);  -- a rowid table: rows carry ~1.5 KB vectors, too wide for WITHOUT ROWID
-- What a search reads of its ~70 candidate events' chunks (MMR's overlap term), from compact
-- index pages instead of rows that carry the text and the vector: at 1M events 0.6 against
-- 2.6 ms per search when those rows' pages are not cached (built at the first open of an
-- older file: ~10 s for 1.6M chunks)
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks (event_id, text_hash);

CREATE TABLE IF NOT EXISTS names (
    norm    TEXT NOT NULL,                  -- engine.text.normalise_name of a name or alias
    node_id TEXT NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    label   TEXT NOT NULL,
    PRIMARY KEY (norm, node_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS names_node ON names (node_id);

CREATE TABLE IF NOT EXISTS meta (
    key            TEXT PRIMARY KEY,
    model          TEXT NOT NULL,
    dimensions     INTEGER NOT NULL,
    updated_at     TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    stale          INTEGER NOT NULL DEFAULT 0  -- MemoryMeta.stale: restored without vectors
);

-- The id high-water mark per prefix (event, person, concept, location): the highest N ever
-- allocated or restored. The allocator counts on from here, so an id is never handed out twice,
-- not even after the node that carried it was forgotten.
CREATE TABLE IF NOT EXISTS id_marks (
    prefix TEXT PRIMARY KEY,
    last   INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS idempotency (
    key        TEXT PRIMARY KEY,
    result     TEXT NOT NULL,               -- JSON SaveResult
    created_at TEXT NOT NULL
);

-- Topic nodes (SPEC §2.2); the node id is 'topic:' || path. seq = creation order.
CREATE TABLE IF NOT EXISTS topics (
    path   TEXT PRIMARY KEY,
    name   TEXT NOT NULL,                   -- the last segment
    parent TEXT REFERENCES topics (path),   -- NULL for a root (the SUBTOPIC link)
    seq    INTEGER NOT NULL UNIQUE
);
-- BINDS: an event bound to a topic, with the save's time (ms) and activation profile.
CREATE TABLE IF NOT EXISTS topic_bindings (
    path                 TEXT NOT NULL REFERENCES topics (path),
    event_id             TEXT NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
    timestamp            INTEGER NOT NULL,
    activation           REAL NOT NULL,
    diffusion            REAL NOT NULL,
    context_independence REAL NOT NULL,
    related              TEXT NOT NULL DEFAULT '[]',  -- JSON list of paths, in order
    stamp                INTEGER NOT NULL DEFAULT 0,  -- recall_clock when last written (RECALL_DDL)
    PRIMARY KEY (path, event_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS topic_bindings_event ON topic_bindings (event_id);
"""

# What another process's topic and date index needs to follow this file by the rows that changed
# (issue 30; engine.recall): a clock that every binding written or removed moves on, each
# binding's stamp (the clock when it was last written), and a log of removed bindings and
# events with the stamp of their removal. Triggers, so that every writer keeps them: a save, a
# rebinding, a forget and its cascade, a restore, whichever code version runs it. Run after the
# migration that adds ``topic_bindings.stamp`` to an older file.
RECALL_DDL = """
CREATE TABLE IF NOT EXISTS recall_clock (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    stamp  INTEGER NOT NULL,
    pruned INTEGER NOT NULL DEFAULT 0,      -- RECALL_BOUND_DDL: the newest stamp pruned
    keep   INTEGER NOT NULL DEFAULT 50000   -- removals kept (at most keep + keep / 4)
);
INSERT OR IGNORE INTO recall_clock (id, stamp) VALUES (1, 0);
CREATE TABLE IF NOT EXISTS recall_removed (
    stamp    INTEGER NOT NULL,
    event_id TEXT NOT NULL,
    path     TEXT,                          -- a binding removed; NULL: the event itself
    day      TEXT,                          -- the removed event's create_date
    seq      INTEGER                        -- the removed event's seq (may be given again)
);
CREATE INDEX IF NOT EXISTS recall_removed_stamp ON recall_removed (stamp);
CREATE INDEX IF NOT EXISTS topic_bindings_stamp ON topic_bindings (stamp);
CREATE TRIGGER IF NOT EXISTS topic_bindings_new AFTER INSERT ON topic_bindings BEGIN
    UPDATE recall_clock SET stamp = stamp + 1 WHERE id = 1;
    UPDATE topic_bindings SET stamp = (SELECT stamp FROM recall_clock WHERE id = 1)
    WHERE path = NEW.path AND event_id = NEW.event_id;
END;
CREATE TRIGGER IF NOT EXISTS topic_bindings_changed
AFTER UPDATE OF timestamp, activation, diffusion, context_independence, related
ON topic_bindings BEGIN
    UPDATE recall_clock SET stamp = stamp + 1 WHERE id = 1;
    UPDATE topic_bindings SET stamp = (SELECT stamp FROM recall_clock WHERE id = 1)
    WHERE path = NEW.path AND event_id = NEW.event_id;
END;
CREATE TRIGGER IF NOT EXISTS topic_bindings_removed AFTER DELETE ON topic_bindings BEGIN
    UPDATE recall_clock SET stamp = stamp + 1 WHERE id = 1;
    INSERT INTO recall_removed (stamp, event_id, path)
    VALUES ((SELECT stamp FROM recall_clock WHERE id = 1), OLD.event_id, OLD.path);
END;
CREATE TRIGGER IF NOT EXISTS events_removed AFTER DELETE ON nodes WHEN OLD.label = 'Event' BEGIN
    UPDATE recall_clock SET stamp = stamp + 1 WHERE id = 1;
    INSERT INTO recall_removed (stamp, event_id, day, seq)
    VALUES ((SELECT stamp FROM recall_clock WHERE id = 1), OLD.id, OLD.create_date, OLD.seq);
END;
"""

# The removal log is bounded: once it holds ``keep + keep / 4`` entries, the oldest are deleted
# down to ``keep`` and ``pruned`` rises to the newest stamp deleted. A reader whose mark is
# below ``pruned`` may have missed a removal and reloads in full (``_recall.topic_changes``);
# one within the horizon catches up by rows as before. Rowids only grow (the newest entry is
# never deleted), so the entry count is the rowid span: one b-tree end lookup per removal.
# A trigger, like the log itself, so that every writer keeps it bounded. Run after the
# migration that adds ``recall_clock.pruned`` and ``keep`` to an older file.
RECALL_BOUND_DDL = """
CREATE TRIGGER IF NOT EXISTS recall_removed_bound AFTER INSERT ON recall_removed
WHEN NEW.rowid - (SELECT MIN(rowid) FROM recall_removed)
    >= (SELECT keep + keep / 4 FROM recall_clock WHERE id = 1)
BEGIN
    UPDATE recall_clock SET pruned = MAX(pruned, (
        SELECT stamp FROM recall_removed
        WHERE rowid <= NEW.rowid - (SELECT MAX(keep, 1) FROM recall_clock WHERE id = 1)
        ORDER BY rowid DESC LIMIT 1
    )) WHERE id = 1;
    DELETE FROM recall_removed
    WHERE rowid <= NEW.rowid - (SELECT MAX(keep, 1) FROM recall_clock WHERE id = 1);
END;
"""

# Raises every mark to at least the highest allocated id present: a database written before marks
# existed, or a restore from a dump without an ``ids`` record. Marks only ever grow.
CATCH_UP_MARKS = (
    "INSERT INTO id_marks (prefix, last) SELECT id_prefix, MAX(id_num) FROM nodes "
    "WHERE id_prefix IS NOT NULL GROUP BY id_prefix "
    "ON CONFLICT (prefix) DO UPDATE SET last = MAX(last, excluded.last)"
)

META_SQL = (
    "SELECT model, dimensions, updated_at, schema_version, stale FROM meta WHERE key = 'embedding'"
)
# After a restore: a memory with events but not one vector anywhere is stale (MemoryMeta.stale).
MARK_STALE = (
    "UPDATE meta SET stale = 1 WHERE EXISTS (SELECT 1 FROM nodes WHERE label = 'Event') "
    "AND NOT EXISTS (SELECT 1 FROM nodes WHERE embedding IS NOT NULL) "
    "AND NOT EXISTS (SELECT 1 FROM chunks WHERE embedding IS NOT NULL)"
)

LABEL_RANK: dict[NodeLabel, int] = {label: i for i, label in enumerate(NODE_LABELS)}

EVENT_COLS = (
    "id, summary, content, time, create_time, create_date, content_hash, embedding, "
    "EXISTS (SELECT 1 FROM chunks c WHERE c.event_id = nodes.id) AS has_chunks"
)
ENTITY_COLS = "label, id, name, aliases, description, create_time, embedding"
NODE_COLS = (
    "label, id, name, aliases, description, create_time, NULL, summary, content, time, "
    "create_date, content_hash, EXISTS (SELECT 1 FROM chunks c WHERE c.event_id = nodes.id)"
)
CHUNK_COLS = "event_id, chunk_index, start_pos, end_pos, text, text_hash, embedding"
TOPIC_COLS = "path, name, parent, seq"
BINDING_COLS = (
    "b.path, b.event_id, b.timestamp, b.activation, b.diffusion, b.context_independence, "
    "b.related"
)


def connect(path: str) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit BEGIN IMMEDIATE)."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=True)
    # Vector rows are 1.5-4 KB: 16 KiB pages waste far less than 4 KiB ones. Only takes
    # effect when the file is new (before WAL is switched on).
    conn.execute("PRAGMA page_size = 16384")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.executescript(DDL)
    conn.execute("BEGIN IMMEDIATE")
    try:
        if "stale" not in {r[1] for r in conn.execute("PRAGMA table_info(meta)")}:
            conn.execute("ALTER TABLE meta ADD COLUMN stale INTEGER NOT NULL DEFAULT 0")
        if "stamp" not in {r[1] for r in conn.execute("PRAGMA table_info(topic_bindings)")}:
            conn.execute("ALTER TABLE topic_bindings ADD COLUMN stamp INTEGER NOT NULL DEFAULT 0")
        for statement in _statements(RECALL_DDL):
            conn.execute(statement)
        clock = {r[1] for r in conn.execute("PRAGMA table_info(recall_clock)")}
        if "pruned" not in clock:
            conn.execute("ALTER TABLE recall_clock ADD COLUMN pruned INTEGER NOT NULL DEFAULT 0")
        if "keep" not in clock:
            conn.execute("ALTER TABLE recall_clock ADD COLUMN keep INTEGER NOT NULL DEFAULT 50000")
        for statement in _statements(RECALL_BOUND_DDL):
            conn.execute(statement)
        conn.execute(CATCH_UP_MARKS)
        conn.execute(f"PRAGMA user_version = {LAYOUT_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return conn


def _statements(script: str) -> list[str]:
    """The statements of a script, one by one, a trigger's body kept whole (``executescript``
    would commit the transaction the migration runs in)."""
    out: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            out.append(pending.strip())
            pending = ""
    return out


def vec_blob(vector: Vector | None) -> bytes | None:
    return None if vector is None else normalise(vector).tobytes()


def blob_vec(blob: bytes | None) -> Vector | None:
    return None if blob is None else np.frombuffer(blob, dtype=np.float32)


def row_event(row: sqlite3.Row | tuple[Any, ...], with_vectors: bool) -> Event:
    return event_of(row, blob_vec(row[7]) if with_vectors else None, bool(row[8]))


def event_of(
    row: sqlite3.Row | tuple[Any, ...], embedding: Vector | None, has_chunks: bool
) -> Event:
    """An Event from an events row's first seven columns (id .. content_hash)."""
    return Event(
        id=row[0],
        summary=row[1] or "",
        content=row[2] or "",
        time=row[3],
        create_time=row[4],
        create_date=row[5] or "",
        content_hash=row[6] or "",
        embedding=embedding,
        has_chunks=has_chunks,
    )


def row_entity(row: sqlite3.Row | tuple[Any, ...], with_vectors: bool = False) -> Entity:
    label: EntityLabel = row[0]
    return Entity(
        label=label,
        id=row[1],
        name=row[2] or "",
        aliases=json.loads(row[3] or "[]"),
        description=row[4],
        create_time=row[5],
        embedding=blob_vec(row[6]) if with_vectors else None,
    )


def row_node(row: sqlite3.Row | tuple[Any, ...]) -> Node:
    """A NODE_COLS row (never with its vector)."""
    if row[0] == "Event":
        return Event(
            id=row[1],
            summary=row[7] or "",
            content=row[8] or "",
            time=row[9],
            create_time=row[5],
            create_date=row[10] or "",
            content_hash=row[11] or "",
            has_chunks=bool(row[12]),
        )
    return row_entity(row[:7])


def row_chunk(row: sqlite3.Row | tuple[Any, ...], with_vectors: bool) -> Chunk:
    return Chunk(
        event_id=row[0],
        chunk_index=row[1],
        start=row[2],
        end=row[3],
        text=row[4],
        text_hash=row[5],
        embedding=blob_vec(row[6]) if with_vectors else None,
    )


def row_topic(row: sqlite3.Row | tuple[Any, ...]) -> Topic:
    return Topic(path=row[0], name=row[1], parent=row[2], seq=int(row[3]))


def row_binding(row: sqlite3.Row | tuple[Any, ...]) -> Binding:
    return Binding(
        path=row[0],
        event_id=row[1],
        timestamp=int(row[2]),
        activation=float(row[3]),
        diffusion=float(row[4]),
        context_independence=float(row[5]),
        related=tuple(json.loads(row[6] or "[]")),
    )


def row_meta(row: sqlite3.Row | tuple[Any, ...] | None) -> MemoryMeta | None:
    if row is None:
        return None
    return MemoryMeta(
        model=row[0],
        dimensions=int(row[1]),
        updated_at=row[2],
        schema_version=int(row[3]),
        stale=bool(row[4]) if len(row) > 4 else False,
    )


def relation(rel_type: str, source: str, target: str, props_json: str) -> Relation:
    kind: RelType = rel_type  # type: ignore[assignment]  # the table only holds REL_TYPES
    props = json.loads(props_json or "{}")
    return Relation(kind, source, target, tuple(sorted(props.items())))
