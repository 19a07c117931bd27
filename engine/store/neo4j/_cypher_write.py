"""Cypher of the Neo4j store's write transactions: the space lock and its counters, creating
and merging nodes and relationships, re-vectorize, topics and bindings, forget and dropping a
space (with the few reads those transactions make, e.g. the nodes a re-vectorize re-embeds).

Static text with ``$parameters``, like all the store's Cypher; the labels, schema and
projections the writes share with the reads are in ``_cypher``. Kept apart from the reads
(``_cypher_read``, ``_cypher_route``) because these statements run in write transactions,
which take the space lock first (``LOCK_SPACE``) and follow the rules it sets.
"""

from __future__ import annotations

from typing import Final

from mnemoql.engine.models import (
    ENTITY_LABELS,
    ID_PREFIX,
    NODE_LABELS,
    TOPIC_LABEL,
    EntityLabel,
    NodeLabel,
    RelType,
)
from mnemoql.engine.store.neo4j._cypher import (
    ALL_LABELS,
    ENTITY_MAP,
    EVENT_MAP,
    LABEL_OF,
    META_MAP,
    NAME_KEYS_OF_ROW,
    RECORD_LABEL,
    SPACE_LABEL,
    name_keys,
)

# ---------------------------------------------------------------- records

PUT_RECORD: Final = (
    f"CREATE (:{RECORD_LABEL} {{space: $space, key: $key, result: $result, created_at: $at}})"
)

# ---------------------------------------------------------------- writes

# The id high-water marks live on the space node: ``last_<prefix>`` is the highest N ever
# allocated (or restored) for that prefix; the allocator counts on from it, so a forgotten id
# is never handed out again. A space written before marks existed has none: the allocator then
# starts from the highest id present (MAX_NUM). Read (LOCK_SPACE's ``state``) and raised
# (SET_MARKS) under the lock.
MARK_PROPERTY: Final[dict[NodeLabel, str]] = {lbl: f"last_{ID_PREFIX[lbl]}" for lbl in NODE_LABELS}
_SPACE_STATE: Final = ", ".join(
    [f"{ID_PREFIX[lbl]}: s.{prop}" for lbl, prop in MARK_PROPERTY.items()]
    + [".removals", ".removals_floor", ".topics_reload"]
)
# Locks the space for the rest of the transaction (writers queue here, across processes) and
# reserves ``$n`` insertion numbers; returns the first, and ``state``: the counters the
# transaction may raise (the id marks by prefix, and ``_changes``' removal log). After this
# statement a transaction writes the space node only with values computed from ``state``
# (``SET s += $map``), never with an expression that reads the node again
# (``SET s.x = s.x + 1``): Neo4j 5.26 reports such a second read-modify-write of the locked
# node as DeadlockDetected against every writer queued here (20 concurrent saves: ~30 retries
# a round, and failures under load once the driver's retry window ran out).
LOCK_SPACE: Final = f"""
MERGE (s:{SPACE_LABEL} {{space: $space}})
ON CREATE SET s.seq = 0, s.labelled = true, s.named = true
SET s.seq = s.seq + $n, s.writes = coalesce(s.writes, 0) + 1
RETURN s.seq - $n + 1 AS first, s.writes AS writes, s {{{_SPACE_STATE}}} AS state
"""
# ``writes`` counts committed write transactions of the space, from every process: a store
# compares it with its own count to notice writes made elsewhere (``changed_elsewhere``).
GET_WRITES: Final = f"MATCH (s:{SPACE_LABEL} {{space: $space}}) RETURN s.writes AS n"
GET_MARKS: Final = f"MATCH (s:{SPACE_LABEL} {{space: $space}}) RETURN " + ", ".join(
    f"s.{prop} AS {ID_PREFIX[lbl]}" for lbl, prop in MARK_PROPERTY.items()
)
# ``$marks``: ``last_<prefix>`` -> the raised mark, only for the marks this save raised.
SET_MARKS: Final = f"MATCH (s:{SPACE_LABEL} {{space: $space}}) SET s += $marks"
ENSURE_META: Final = f"""
MERGE (m:MemoryMeta {{space: $space, key: 'embedding'}})
ON CREATE SET m.model = $model, m.dimensions = $dims, m.updated_at = $at, m.schema_version = $v
RETURN {META_MAP} AS m
"""
SET_META: Final = """
MERGE (m:MemoryMeta {space: $space, key: 'embedding'})
SET m.model = $model, m.dimensions = $dims, m.updated_at = $at, m.schema_version = $v
REMOVE m.stale
"""
MAX_NUM: Final[dict[NodeLabel, str]] = {
    lbl: f"MATCH (n:{lbl}) WHERE n.space = $space AND n.num IS NOT NULL RETURN max(n.num) AS m"
    for lbl in NODE_LABELS
}
# id -> label for any of the four labels (unknown ids are absent).
LABELS_OF: Final = (
    f"UNWIND $ids AS id MATCH (n:{ALL_LABELS} {{space: $space, id: id}}) "
    f"RETURN n.id AS id, {LABEL_OF} AS label"
)
CREATE_EVENTS: Final = """
UNWIND $rows AS r
CREATE (e:Event:$($events_label) {space: $space, id: r.id, num: r.num, seq: r.seq,
                 summary: r.summary, content: r.content, time: r.time, create_time: $create_time,
                 create_date: $create_date, content_hash: r.content_hash,
                 embedding: r.embedding, embedding_zero: r.zero,
                 embedding_dims: r.dims})
"""
CREATE_CHUNKS: Final = """
UNWIND $rows AS r
MATCH (e:Event {space: $space, id: r.event_id})
CREATE (c:EventSource:$($chunks_label) {space: $space,
                       id: r.event_id + '#' + toString(r.chunk_index),
                       event_id: r.event_id, chunk_index: r.chunk_index, start: r.start,
                       end: r.end, text: r.text, text_hash: r.text_hash,
                       embedding: r.embedding, embedding_zero: r.zero, embedding_dims: r.dims})
"""
CREATE_ENTITIES: Final[dict[EntityLabel, str]] = {
    lbl: f"""
UNWIND $rows AS r
CREATE (n:{lbl} {{space: $space, id: r.id, num: r.num, seq: r.seq, name: r.name,
                 aliases: r.aliases, norm_names: r.norm_names, name_keys: {NAME_KEYS_OF_ROW},
                 description: r.description, create_time: $create_time, embedding: r.embedding,
                 embedding_zero: r.zero, embedding_dims: r.dims}})
"""
    for lbl in ENTITY_LABELS
}
GET_FOR_MERGE: Final = (
    f"MATCH (n:{ALL_LABELS} {{space: $space, id: $id}}) "
    f"RETURN {LABEL_OF} AS label, n.name AS name, n.aliases AS aliases, "
    "n.embedding IS NULL AS no_vector"
)
UPDATE_MERGED: Final = """
MATCH (n:Person|Concept|Location {space: $space, id: $id})
SET n.aliases = $aliases, n.norm_names = $norm_names, n.name_keys = """ + name_keys("$norm_names")

FILL_VECTOR: Final = """
MATCH (n:Person|Concept|Location {space: $space, id: $id})
WHERE n.embedding IS NULL
SET n.embedding = $embedding, n.embedding_zero = $zero, n.embedding_dims = $dims
"""


def _merge_rel(src: str, kind: RelType, dst: str) -> str:
    # Adjacency types are unique per (type, source, target); HAS_ATTITUDE per event as well.
    # As in the embedded store, the first write of an edge wins (ON CREATE).
    if kind == "HAS_ATTITUDE":
        return f"""
UNWIND $rows AS r
MATCH (a:{src} {{space: $space, id: r.s}})
MATCH (b:{dst} {{space: $space, id: r.t}})
CALL (a, b, r) {{
  OPTIONAL MATCH (a)-[x:HAS_ATTITUDE]->(b) WHERE coalesce(x.event_id, '') = r.ek
  WITH a, b, r, count(x) AS found
  WHERE found = 0
  CREATE (a)-[y:HAS_ATTITUDE]->(b)
  SET y = r.props
}}
"""
    return f"""
UNWIND $rows AS r
MATCH (a:{src} {{space: $space, id: r.s}})
MATCH (b:{dst} {{space: $space, id: r.t}})
MERGE (a)-[x:{kind}]->(b)
ON CREATE SET x = r.props
"""


# SPEC §1.2: which labels each relationship type connects.
REL_ENDS: Final[dict[RelType, tuple[tuple[NodeLabel, ...], tuple[NodeLabel, ...]]]] = {
    "PARTICIPATED_IN": (("Person",), ("Event",)),
    "OCCURRED_AT": (("Event",), ("Location",)),
    "MENTIONS": (("Event",), ("Concept",)),
    "HAS_ATTITUDE": (("Person",), ("Person", "Concept")),
}
MERGE_REL: Final[dict[tuple[NodeLabel, RelType, NodeLabel], str]] = {
    (src, kind, dst): _merge_rel(src, kind, dst)
    for kind, (srcs, dsts) in REL_ENDS.items()
    for src in srcs
    for dst in dsts
}

# ---------------------------------------------------------------- revectorize

CLEAR_VECTORS: Final[dict[NodeLabel, str]] = {
    lbl: f"MATCH (n:{lbl}) WHERE n.space = $space AND n.embedding IS NOT NULL "
    "REMOVE n.embedding, n.embedding_zero, n.embedding_dims"
    for lbl in NODE_LABELS
}
SET_VECTORS: Final[dict[NodeLabel, str]] = {
    lbl: f"UNWIND $rows AS r MATCH (n:{lbl} {{space: $space, id: r.id}}) "
    "SET n.embedding = r.embedding, n.embedding_zero = r.zero, n.embedding_dims = r.dims"
    for lbl in NODE_LABELS
}
DELETE_CHUNKS: Final = (
    "MATCH (c:EventSource) WHERE c.space = $space AND c.id IS NOT NULL DETACH DELETE c"
)
ALL_EVENTS: Final = (
    "MATCH (e:Event) WHERE e.space = $space AND e.id IS NOT NULL "
    f"RETURN {EVENT_MAP} AS e ORDER BY e.seq"
)
ALL_ENTITIES: Final = (
    "MATCH (n:Person|Concept|Location) WHERE n.space = $space AND n.id IS NOT NULL "
    f"RETURN {ENTITY_MAP} AS n ORDER BY n.seq"
)
# ---------------------------------------------------------------- topics (SPEC §2)
# (:Topic {space, id: 'topic:' + path, path, name, parent, seq})-[:SUBTOPIC]->(:Topic) and
# (:Topic)-[:BINDS {timestamp, activation_weight, diffusion_weight,
#                   context_independence_weight, related_paths}]->(:Event)

MERGE_TOPICS: Final = """
UNWIND $rows AS r
MERGE (t:Topic {space: $space, id: r.id})
ON CREATE SET t.path = r.path, t.name = r.name, t.parent = r.parent, t.seq = r.seq
"""
MERGE_SUBTOPICS: Final = """
UNWIND $rows AS r
MATCH (p:Topic {space: $space, id: r.parent_id})
MATCH (t:Topic {space: $space, id: r.id})
MERGE (p)-[:SUBTOPIC]->(t)
"""
# A rebinding refreshes time and profile and appends the new related paths (no duplicates);
# ``stamp``: the transaction's ``writes`` value, what another process's catch-up reads by
# (``_changes``).
BIND_TOPIC: Final = """
MATCH (t:Topic {space: $space, id: $topic})
UNWIND $ids AS id
MATCH (e:Event {space: $space, id: id})
MERGE (t)-[b:BINDS]->(e)
SET b.space = $space, b.stamp = $stamp,
    b.timestamp = $timestamp, b.activation_weight = $activation,
    b.diffusion_weight = $diffusion, b.context_independence_weight = $independence,
    b.related_paths = coalesce(b.related_paths, [])
                      + [p IN $related WHERE NOT p IN coalesce(b.related_paths, [])]
RETURN count(b) AS bound
"""
EVENT_IDS: Final = "UNWIND $ids AS id MATCH (e:Event {space: $space, id: id}) RETURN e.id AS id"

# ---------------------------------------------------------------- forget

FORGET_TOUCHED: Final = """
MATCH (e:Event {space: $space, id: $id})
OPTIONAL MATCH (e)--(x)
WITH e, collect(DISTINCT x.id) AS adjacent
OPTIONAL MATCH (a:Person)-[h:HAS_ATTITUDE {event_id: $id}]->(b)
WHERE a.space = $space
RETURN adjacent, collect(DISTINCT a.id) + collect(DISTINCT b.id) AS attitude_ends
"""
FORGET_DELETE: Final[tuple[str, ...]] = (
    "MATCH (:Person {space: $space})-[h:HAS_ATTITUDE {event_id: $id}]->() DELETE h",
    "MATCH (c:EventSource {space: $space, event_id: $id}) DETACH DELETE c",
    "MATCH (e:Event {space: $space, id: $id}) DETACH DELETE e",
)
FORGET_PRUNE: Final = """
UNWIND $ids AS id
MATCH (n:Person|Concept|Location {space: $space, id: id})
WHERE NOT EXISTS { MATCH (n)--(:Event) }
WITH n, n.id AS id, labels(n)[0] AS label
DETACH DELETE n
RETURN id, label
"""
REMOVAL_LABEL: Final = "MnemoTopicRemoval"  # the topic removal log (``_changes``)
SPACE_LABELS: Final = (
    *NODE_LABELS, "EventSource", "MemoryMeta", RECORD_LABEL, SPACE_LABEL, TOPIC_LABEL,
    REMOVAL_LABEL,
)  # fmt: skip
DROP_SPACE: Final = (
    "CALL () {"
    + " UNION ALL ".join(f"MATCH (n:{lbl}) WHERE n.space = $space RETURN n" for lbl in SPACE_LABELS)
    + "} WITH n LIMIT $batch DETACH DELETE n RETURN count(*) AS deleted"
)
