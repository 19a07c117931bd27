"""The embedded store's write transactions other than the save (``_save.py``): topic
bindings, forgetting an event and re-vectorizing. Each function runs inside one open
``BEGIN IMMEDIATE`` transaction on the store's database thread; raising rolls it all back.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from mnemoql.engine.drafts import TopicDraft
from mnemoql.engine.errors import NotFound
from mnemoql.engine.models import TOPIC_SEPARATOR, VectorSet
from mnemoql.engine.store.embedded import _lexical as lexical
from mnemoql.engine.store.embedded._index import F32, normalise


def blob(vec: F32 | None) -> bytes | None:
    return None if vec is None else vec.tobytes()


def as_f32(vector: Any) -> F32 | None:
    return None if vector is None else normalise(vector)


def write_topic(
    conn: sqlite3.Connection, draft: TopicDraft, event_ids: list[str], timestamp: int
) -> None:
    """Topic nodes along the path and the related paths, then one binding per event: a
    rebinding of the same (topic, event) refreshes time and profile and merges related paths."""
    draft.check()
    seq = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM topics").fetchone()[0]) + 1
    for path in draft.node_paths():
        parts = path.split(TOPIC_SEPARATOR)
        parent = TOPIC_SEPARATOR.join(parts[:-1]) if len(parts) > 1 else None
        cur = conn.execute(
            "INSERT INTO topics (path, name, parent, seq) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (path) DO NOTHING",
            (path, parts[-1], parent, seq),
        )
        seq += cur.rowcount
    for event_id in event_ids:
        row = conn.execute(
            "SELECT related FROM topic_bindings WHERE path = ? AND event_id = ?",
            (draft.path, event_id),
        ).fetchone()
        related = list(dict.fromkeys([*json.loads(row[0] if row else "[]"), *draft.related]))
        conn.execute(
            "INSERT INTO topic_bindings (path, event_id, timestamp, activation, diffusion, "
            "context_independence, related) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (path, event_id) DO UPDATE SET timestamp = excluded.timestamp, "
            "activation = excluded.activation, diffusion = excluded.diffusion, "
            "context_independence = excluded.context_independence, related = excluded.related",
            (
                draft.path,
                event_id,
                timestamp,
                float(draft.activation),
                float(draft.diffusion),
                float(draft.context_independence),
                json.dumps(related, ensure_ascii=False),
            ),
        )


def bind_topic(
    conn: sqlite3.Connection, draft: TopicDraft, event_ids: list[str], timestamp: int
) -> None:
    """Bind existing events to ``draft``'s topic (NotFound if any id is not an event)."""
    ids = list(dict.fromkeys(event_ids))
    found = {
        r[0]
        for r in conn.execute(
            "SELECT id FROM nodes WHERE label = 'Event' AND id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        )
    }
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFound(
            f"cannot bind {', '.join(missing)}: no such event", zh=f"事件不存在：{missing[0]}"
        )
    write_topic(conn, draft, ids, timestamp)


def forget(conn: sqlite3.Connection, event_id: str) -> list[str]:
    """Delete the event (chunks, relations and the attitudes recorded in it cascade or go
    explicitly), then every entity it touched that no longer relates to any event."""
    row = conn.execute("SELECT label FROM nodes WHERE id = ?", (event_id,)).fetchone()
    if row is None or row[0] != "Event":
        raise NotFound(f"no event with id {event_id!r}", zh=f"事件不存在：{event_id}", id=event_id)
    touched = [
        r[0]
        for r in conn.execute(
            "SELECT target FROM relations WHERE source = ?1 UNION SELECT source FROM relations "
            "WHERE target = ?1 UNION SELECT source FROM relations WHERE event_key = ?1 "
            "UNION SELECT target FROM relations WHERE event_key = ?1",
            (event_id,),
        )
    ]
    conn.execute("DELETE FROM relations WHERE event_key = ?", (event_id,))
    lexical.unindex_event(conn, event_id)
    conn.execute("DELETE FROM nodes WHERE id = ?", (event_id,))
    pruned: list[tuple[int, str]] = []
    for node_id in touched:
        found = conn.execute(
            "SELECT lrank FROM nodes n WHERE id = ?1 AND label <> 'Event' AND NOT EXISTS ("
            "SELECT 1 FROM relations r JOIN nodes e ON e.id = r.target "
            "WHERE r.source = ?1 AND e.label = 'Event') AND NOT EXISTS ("
            "SELECT 1 FROM relations r JOIN nodes e ON e.id = r.source "
            "WHERE r.target = ?1 AND e.label = 'Event')",
            (node_id,),
        ).fetchone()
        if found is not None:
            pruned.append((found[0], node_id))
    pruned.sort()
    conn.executemany("DELETE FROM nodes WHERE id = ?", [(i,) for _, i in pruned])
    return [event_id, *(i for _, i in pruned)]


def replace_vectors(conn: sqlite3.Connection, vectors: VectorSet) -> None:
    """Every embedding swapped (nodes absent from ``vectors`` lose theirs), all chunks rebuilt
    (chunks of unknown events skipped) and MemoryMeta set."""
    conn.execute("UPDATE nodes SET embedding = NULL WHERE embedding IS NOT NULL")
    conn.executemany(
        "UPDATE nodes SET embedding = ? WHERE id = ? AND label = 'Event'",
        [(blob(normalise(v)), i) for i, v in vectors.events.items()],
    )
    conn.executemany(
        "UPDATE nodes SET embedding = ? WHERE id = ? AND label <> 'Event'",
        [(blob(normalise(v)), i) for i, v in vectors.entities.items()],
    )
    conn.execute("DELETE FROM chunks")
    conn.executemany(
        "INSERT INTO chunks (event_id, chunk_index, start_pos, end_pos, text, text_hash, "
        "embedding) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 "
        "WHERE EXISTS (SELECT 1 FROM nodes WHERE id = ?1 AND label = 'Event')",
        [
            (
                c.event_id,
                c.chunk_index,
                c.start,
                c.end,
                c.text,
                c.text_hash,
                blob(as_f32(c.embedding)),
            )
            for c in vectors.chunks
        ],
    )
    lexical.rebuild(conn)  # the chunks were rewritten; the index is derived from them
    m = vectors.meta
    conn.execute(
        "INSERT INTO meta (key, model, dimensions, updated_at, schema_version) "
        "VALUES ('embedding', ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET model = excluded.model, "
        "dimensions = excluded.dimensions, updated_at = excluded.updated_at, "
        "schema_version = excluded.schema_version, stale = 0",
        (m.model, m.dimensions, m.updated_at, m.schema_version),
    )
