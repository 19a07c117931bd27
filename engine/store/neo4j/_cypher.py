"""Static Cypher of the Neo4j store.

Every query is fixed text with ``$parameters``. Where Cypher cannot take a parameter (a label
in a MATCH pattern, a property name), the text is built here, once, at import time, from the
allow-lists of ``engine.models`` -- never from caller input. Callers pick a prepared query
through ``label()`` / ``entity_label()`` (``engine.store.rules``), which reject anything
outside those lists.

Every node carries a ``space`` property; ``(space, id)`` is unique per label, so one database
holds many memory spaces. Helper properties: ``num`` (N of an allocated ``prefix_N`` id, what
the allocator takes max() of), ``seq`` (insertion order within the space), ``norm_names``
(normalised name and aliases, for entity merging and ``entity_filter``), ``embedding_dims``
(the vector's width: checking an integer is much cheaper than ``size()`` of a list property)
and ``embedding_zero`` (set when a vector has no direction: ``vector.similarity.cosine``
rejects those, and they score as raw cosine 0, as in the embedded store).
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Final, NamedTuple

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.models import (
    ADJACENCY,
    ENTITY_LABELS,
    ID_PREFIX,
    NODE_LABELS,
    TOPIC_LABEL,
    EntityLabel,
    NodeLabel,
    RelType,
)
from mnemoql.engine.store.rules import entity_label as entity_label
from mnemoql.engine.store.rules import label as label
from mnemoql.engine.store.rules import rel_type as rel_type

SPACE_LABEL: Final = "MnemoSpace"  # one per space: the write lock and the seq counter
RECORD_LABEL: Final = "MnemoSaveRecord"  # idempotency records
VECTOR_INDEXES: Final[dict[NodeLabel, str]] = {
    "Event": "event_summary_vector",
    "Person": "person_name_vector",
    "Concept": "concept_name_vector",
    "Location": "location_name_vector",
}
ALL_LABELS: Final = "Event|Person|Concept|Location"
# Which of the four labels a node has: Events also carry their space's label (below), so
# labels(n)[0] is not it.
LABEL_OF: Final = "head([x IN labels(n) WHERE x IN ['Event', 'Person', 'Concept', 'Location']])"
_ADJ: Final = "|".join(ADJACENCY)


# ---------------------------------------------------------------- schema

_UNIQUE = {
    "event_id_unique": "Event",
    "person_id_unique": "Person",
    "concept_id_unique": "Concept",
    "location_id_unique": "Location",
    "event_source_id_unique": "EventSource",
    "topic_id_unique": TOPIC_LABEL,
}
CONSTRAINTS: Final[dict[str, str]] = {
    **{
        name: f"CREATE CONSTRAINT {name} IF NOT EXISTS "
        f"FOR (n:{lbl}) REQUIRE (n.space, n.id) IS UNIQUE"
        for name, lbl in _UNIQUE.items()
    },
    "memory_meta_unique": "CREATE CONSTRAINT memory_meta_unique IF NOT EXISTS "
    "FOR (n:MemoryMeta) REQUIRE (n.space, n.key) IS UNIQUE",
    "mnemo_save_record_unique": f"CREATE CONSTRAINT mnemo_save_record_unique IF NOT EXISTS "
    f"FOR (n:{RECORD_LABEL}) REQUIRE (n.space, n.key) IS UNIQUE",
    "mnemo_space_unique": f"CREATE CONSTRAINT mnemo_space_unique IF NOT EXISTS "
    f"FOR (n:{SPACE_LABEL}) REQUIRE n.space IS UNIQUE",
}
INDEXES: Final[dict[str, str]] = {
    "event_source_event_id": "CREATE INDEX event_source_event_id IF NOT EXISTS "
    "FOR (n:EventSource) ON (n.space, n.event_id)",
    "event_create_date": "CREATE INDEX event_create_date IF NOT EXISTS "
    "FOR (n:Event) ON (n.space, n.create_date)",
    "event_create_time": "CREATE INDEX event_create_time IF NOT EXISTS "
    "FOR (n:Event) ON (n.space, n.create_time)",
    "event_content_hash": "CREATE INDEX event_content_hash IF NOT EXISTS "
    "FOR (n:Event) ON (n.space, n.content_hash)",
    "has_attitude_event_id": "CREATE INDEX has_attitude_event_id IF NOT EXISTS "
    "FOR ()-[r:HAS_ATTITUDE]-() ON (r.event_id)",
    **{
        f"{lbl.lower()}_num": f"CREATE INDEX {lbl.lower()}_num IF NOT EXISTS "
        f"FOR (n:{lbl}) ON (n.space, n.num)"
        for lbl in NODE_LABELS
    },
}
# (and the name index, ``NAME_INDEX``, defined with the entity names below)
# Dimensions are a parameter: CREATE VECTOR INDEX accepts $params in OPTIONS.
CREATE_VECTOR_INDEX: Final[dict[NodeLabel, str]] = {
    lbl: f"CREATE VECTOR INDEX {name} IF NOT EXISTS FOR (n:{lbl}) ON n.embedding "
    "OPTIONS {indexConfig: {`vector.dimensions`: $dims, `vector.similarity_function`: 'cosine'}}"
    for lbl, name in VECTOR_INDEXES.items()
}
DROP_VECTOR_INDEX: Final[dict[NodeLabel, str]] = {
    lbl: f"DROP INDEX {name} IF EXISTS" for lbl, name in VECTOR_INDEXES.items()
}
# Beyond SPEC §1.2's four: chunks get a vector index as well, only for the chunk route of large
# spaces (docs/DECISIONS.md, "Neo4j routes"); created, dropped and rebuilt with the four.
CHUNK_VECTOR_INDEX: Final = "event_source_vector"
CREATE_CHUNK_VECTOR_INDEX: Final = (
    f"CREATE VECTOR INDEX {CHUNK_VECTOR_INDEX} IF NOT EXISTS FOR (n:EventSource) ON n.embedding "
    "OPTIONS {indexConfig: {`vector.dimensions`: $dims, `vector.similarity_function`: 'cosine'}}"
)
DROP_CHUNK_VECTOR_INDEX: Final = f"DROP INDEX {CHUNK_VECTOR_INDEX} IF EXISTS"
SHOW_INDEXES: Final = "SHOW INDEXES YIELD name"

# Per-space vector indexes (docs/DECISIONS.md, "Neo4j with many spaces"). The database-wide
# indexes above hold every space's vectors and cannot filter, so a space holding a tenth of them
# gets a tenth of each fetch. Every Event and EventSource therefore also carries a label of its
# own space (``MnemoEvents_<key>`` / ``MnemoChunks_<key>``, set by the writes through
# ``$events_label`` / ``$chunks_label``), and a space that grows past ``index_min_events`` gets
# two vector indexes on those labels. The key is a digest of the space name: 16 hex digits, the
# only text ever interpolated into these statements.
_SPACE_KEY = re.compile(r"^[0-9a-f]{16}$")


class SpaceSchema(NamedTuple):
    """Labels and vector indexes of one space, and the statements that create and drop them."""

    events_label: str
    chunks_label: str
    events_index: str
    chunks_index: str
    create: tuple[str, str]  # take $dims
    drop: tuple[str, str]


def space_key(space: str) -> str:
    return hashlib.sha256(space.encode("utf-8")).hexdigest()[:16]


@lru_cache(maxsize=1024)
def space_schema(space: str) -> SpaceSchema:
    key = space_key(space)
    if not _SPACE_KEY.match(key):  # cannot happen; the allow-list of what is interpolated
        raise InvalidInput(f"bad space key {key!r}", zh=f"无效的空间键 {key!r}")
    labels = (f"MnemoEvents_{key}", f"MnemoChunks_{key}")
    names = (f"space_events_{key}", f"space_chunks_{key}")
    create = tuple(
        f"CREATE VECTOR INDEX {name} IF NOT EXISTS FOR (n:{lbl}) ON n.embedding OPTIONS "
        "{indexConfig: {`vector.dimensions`: $dims, `vector.similarity_function`: 'cosine'}}"
        for name, lbl in zip(names, labels, strict=True)
    )
    drop = tuple(f"DROP INDEX {name} IF EXISTS" for name in names)
    return SpaceSchema(*labels, *names, (create[0], create[1]), (drop[0], drop[1]))


def space_params(space: str) -> dict[str, str]:
    """The label parameters every write statement gets beside ``$space``, and the prefix of
    its entities' name keys (below)."""
    schema = space_schema(space)
    return {"events_label": schema.events_label, "chunks_label": schema.chunks_label,
            "name_prefix": name_prefix(space)}  # fmt: skip


# ---------------------------------------------------------------- entity names

# Entity merging (``find_entities``: every save plans with it, and SaveTx looks again under
# the space lock), entity filters and Person/Concept searches (``resolve_terms``) and the
# activator's name cues look entities up by a normalised name or alias. ``norm_names`` is a
# list, which no range or text index serves (``$k IN n.norm_names`` scanned every entity of the
# label in the space), so every entity also carries ``name_keys``: per normalised name, the
# space's digest, ':' and the name's first NAME_KEY_CHARS characters, made in Cypher from
# ``norm_names`` by every write that sets them (saves, merges, restores; older nodes once at
# open). A full-text index with Lucene's ``keyword`` analyser holds each key as one term, so a
# lookup reads the postings of its keys only, and a key names its space: other spaces'
# entities never match. The keys are cut because Lucene refuses terms over 32,766 bytes (and a
# refused term fails the commit and stops the database until a restart); the rows are then
# checked against ``norm_names`` exactly, so a shared prefix never returns a wrong entity.
NAME_KEY_CHARS: Final = 100
NAME_INDEX: Final = "entity_name_keys"
CREATE_NAME_INDEX: Final = (
    f"CREATE FULLTEXT INDEX {NAME_INDEX} IF NOT EXISTS FOR (n:Person|Concept|Location) "
    "ON EACH [n.name_keys] OPTIONS {indexConfig: {`fulltext.analyzer`: 'keyword'}}"
)
INDEXES[NAME_INDEX] = CREATE_NAME_INDEX


def name_prefix(space: str) -> str:
    return f"{space_key(space)}:"


def _name_keys(names: str) -> str:
    """Cypher: the name keys of the list expression ``names``."""
    return f"[k IN {names} | $name_prefix + left(k, {NAME_KEY_CHARS})]"


# The Lucene query of the keys of ``$keys``: each key as a quoted term (backslash and quote
# escaped), any of them; built in Cypher so the keys are cut exactly as the writes cut them.
_LUCENE_KEYS: Final = (
    r"""reduce(s = '', k IN $keys | s + ' name_keys:"' + replace(replace("""
    rf"""$name_prefix + left(k, {NAME_KEY_CHARS}), '\\', '\\\\'), '"', '\\"') + '"')"""
)
NAME_LOOKUP_BATCH: Final = 500  # keys per query (Lucene allows 1,024 clauses)
NAME_KEYS_OF_ROW: Final = _name_keys("r.norm_names")
# Entities of the space written before the name keys get them once, in batches (open);
# ``named`` on the space node records that every entity has them.
KEY_NAMES: Final = f"""
MATCH (n:Person|Concept|Location)
WHERE n.space = $space AND n.id IS NOT NULL AND n.name_keys IS NULL
WITH n LIMIT $batch
SET n.name_keys = {_name_keys("coalesce(n.norm_names, [])")}
RETURN count(n) AS n
"""
MARK_NAMED: Final = f"MATCH (s:{SPACE_LABEL} {{space: $space}}) SET s.named = true"
SPACE_NAMED: Final = f"MATCH (s:{SPACE_LABEL} {{space: $space}}) RETURN s.named AS named"
NAME_INDEX_STATE: Final = (
    "SHOW FULLTEXT INDEXES YIELD name, state WHERE name = $name RETURN state"
)


# Spaces written before the per-space labels get them once, in batches (``Neo4jStore.open``);
# ``labelled`` on the space node records that every node has its label.
LABEL_EVENTS: Final = """
MATCH (e:Event) WHERE e.space = $space AND e.id IS NOT NULL AND NOT $events_label IN labels(e)
WITH e LIMIT $batch
SET e:$($events_label)
RETURN count(e) AS n
"""
MARK_LABELLED: Final = f"MATCH (s:{SPACE_LABEL} {{space: $space}}) SET s.labelled = true"
LABEL_CHUNKS: Final = """
MATCH (c:EventSource) WHERE c.space = $space AND c.id IS NOT NULL
  AND NOT $chunks_label IN labels(c)
WITH c LIMIT $batch
SET c:$($chunks_label)
RETURN count(c) AS n
"""

# ---------------------------------------------------------------- projections

EVENT_MAP: Final = (
    "e {.id, .summary, .content, .time, .create_time, .create_date, .content_hash, "
    "has_chunks: EXISTS { MATCH (c:EventSource {space: $space, event_id: e.id}) }}"
)
EVENT_MAP_VEC: Final = EVENT_MAP[:-1] + ", .embedding}"
# (entities carry one label)
ENTITY_MAP: Final = "n {.id, .name, .aliases, .description, .create_time, label: labels(n)[0]}"
ENTITY_MAP_VEC: Final = ENTITY_MAP[:-1] + ", .embedding}"
# Any of the four labels, never the vector.
NODE_MAP: Final = (
    "n {.id, .name, .aliases, .description, .create_time, .summary, .content, .time, "
    f".create_date, .content_hash, label: {LABEL_OF}, "
    "has_chunks: n:Event AND EXISTS { MATCH (c:EventSource {space: $space, event_id: n.id}) }}"
)
CHUNK_MAP: Final = "c {.event_id, .chunk_index, .start, .end, .text, .text_hash}"
CHUNK_MAP_VEC: Final = CHUNK_MAP[:-1] + ", .embedding}"
META_MAP: Final = "m {.model, .dimensions, .updated_at, .schema_version, .stale}"

# ---------------------------------------------------------------- meta, counts, records

GET_META: Final = f"MATCH (m:MemoryMeta {{space: $space, key: 'embedding'}}) RETURN {META_MAP} AS m"
COUNTS: Final = """
RETURN
  COUNT { MATCH (n:Event) WHERE n.space = $space AND n.id IS NOT NULL } AS events,
  COUNT { MATCH (n:Person) WHERE n.space = $space AND n.id IS NOT NULL } AS persons,
  COUNT { MATCH (n:Concept) WHERE n.space = $space AND n.id IS NOT NULL } AS concepts,
  COUNT { MATCH (n:Location) WHERE n.space = $space AND n.id IS NOT NULL } AS locations,
  COUNT { MATCH (n:EventSource) WHERE n.space = $space AND n.id IS NOT NULL } AS chunks,
  COUNT { MATCH (n:Event)-[r]->() WHERE n.space = $space AND n.id IS NOT NULL }
  + COUNT { MATCH (n:Person)-[r]->() WHERE n.space = $space AND n.id IS NOT NULL }
  + COUNT { MATCH (n:Concept)-[r]->() WHERE n.space = $space AND n.id IS NOT NULL }
  + COUNT { MATCH (n:Location)-[r]->() WHERE n.space = $space AND n.id IS NOT NULL }
    AS relations
"""
GET_RECORD: Final = (
    f"MATCH (r:{RECORD_LABEL} {{space: $space, key: $key}}) RETURN r.result AS result"
)
PUT_RECORD: Final = (
    f"CREATE (:{RECORD_LABEL} {{space: $space, key: $key, result: $result, created_at: $at}})"
)
EVENTS_WITH_HASH: Final = (
    "MATCH (e:Event {space: $space, content_hash: $hash}) "
    "RETURN e.id AS id ORDER BY e.create_time, e.seq"
)

# ---------------------------------------------------------------- writes

# The id high-water marks live on the space node: ``last_<prefix>`` is the highest N ever
# allocated (or restored) for that prefix; the allocator counts on from it, so a forgotten id
# is never handed out again. A space written before marks existed has none: the allocator then
# starts from the highest id present (MAX_NUM). Read (LOCK_SPACE's ``state``) and raised
# (SET_MARKS) under the lock.
MARK_PROPERTY: Final[dict[NodeLabel, str]] = {
    lbl: f"last_{ID_PREFIX[lbl]}" for lbl in NODE_LABELS
}
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
GET_MARKS: Final = (
    f"MATCH (s:{SPACE_LABEL} {{space: $space}}) RETURN "
    + ", ".join(f"s.{prop} AS {ID_PREFIX[lbl]}" for lbl, prop in MARK_PROPERTY.items())
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
SET n.aliases = $aliases, n.norm_names = $norm_names, n.name_keys = """ + _name_keys("$norm_names")

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

# ---------------------------------------------------------------- entity resolution

FIND_ENTITIES: Final[dict[EntityLabel, str]] = {
    lbl: f"MATCH (n:{lbl}) WHERE n.space = $space AND n.id IS NOT NULL "
    f"AND any(k IN n.norm_names WHERE k IN $keys) RETURN {ENTITY_MAP} AS n ORDER BY n.seq"
    for lbl in ENTITY_LABELS
}
RESOLVE_TERM: Final = (
    "MATCH (n:Person|Concept|Location) WHERE n.space = $space AND n.id IS NOT NULL "
    "AND $term IN n.norm_names RETURN n.id AS id"
)
# The same through the name index (``NAME_INDEX``), with ``$keys`` (at most NAME_LOOKUP_BATCH).
_BY_KEY = (
    f"CALL db.index.fulltext.queryNodes('{NAME_INDEX}', {_LUCENE_KEYS}) YIELD node AS n\n"
    "WITH n WHERE n.space = $space AND n.id IS NOT NULL AND {label}"
    "any(k IN n.norm_names WHERE k IN $keys)\n"
)
FIND_ENTITIES_BY_KEY: Final[dict[EntityLabel, str]] = {
    lbl: _BY_KEY.replace("{label}", f"n:{lbl} AND ")
    + f"RETURN n.seq AS seq, {ENTITY_MAP} AS n ORDER BY seq"
    for lbl in ENTITY_LABELS
}
RESOLVE_TERM_BY_KEY: Final = (
    _BY_KEY.replace("{label}", "(n:Person OR n:Concept OR n:Location) AND ") + "RETURN n.id AS id"
)
# Exact scoring; zero vectors (flagged) score 0.5 = raw cosine 0.
_SCORE_ENTITY = (
    "CASE WHEN $qzero OR n.embedding_zero THEN 0.5 "
    "ELSE vector.similarity.cosine(n.embedding, $q) END"
)
ENTITY_TOP: Final[dict[EntityLabel, str]] = {
    lbl: f"""
MATCH (n:{lbl})
WHERE n.space = $space AND n.id IS NOT NULL
  AND n.embedding_dims = $d
WITH n, 2 * ({_SCORE_ENTITY}) - 1 AS s
WHERE $min IS NULL OR s >= $min
ORDER BY s DESC, n.id
LIMIT $k
RETURN {ENTITY_MAP} AS n, s
"""
    for lbl in ENTITY_LABELS
}

# ---------------------------------------------------------------- retrieval routes

_EVENT_FILTERS = f"""
  AND NOT e.id IN $exclude
  AND ($from IS NULL OR e.create_date >= $from)
  AND ($to IS NULL OR e.create_date <= $to)
  AND ALL(g IN $groups WHERE EXISTS {{
        MATCH (e)-[:{_ADJ}]-(x) WHERE x.id IN g }})"""
# All events of the space, or only the restricted ids (expand).
_EVENTS_ALL = "MATCH (e:Event) WHERE e.space = $space AND e.id IS NOT NULL"
_EVENTS_RESTRICT = "UNWIND $restrict AS rid MATCH (e:Event {space: $space, id: rid}) WHERE true"
_SCORE = (
    "CASE WHEN $qzero OR {v}.embedding_zero THEN 0.5 "
    "ELSE vector.similarity.cosine({v}.embedding, $q) END"
)


def _summary_route(head: str) -> str:
    return f"""
{head}
  AND e.embedding_dims = $d{_EVENT_FILTERS}
WITH e, {_SCORE.format(v="e")} AS s
ORDER BY s DESC, e.id
LIMIT $limit
RETURN e.id AS id, 2 * s - 1 AS score
"""


def _chunk_route(head: str) -> str:
    return f"""
{head}{_EVENT_FILTERS}
MATCH (c:EventSource {{space: $space, event_id: e.id}})
WHERE c.embedding_dims = $d
WITH e, c, {_SCORE.format(v="c")} AS s
ORDER BY s DESC, c.chunk_index
WITH e, collect({{i: c.chunk_index, start: c.start, end: c.end, s: s}})[0] AS best
ORDER BY best.s DESC, e.id
LIMIT $limit
RETURN e.id AS id, 2 * best.s - 1 AS score, best.i AS i, best.start AS start, best.end AS end
"""


def _recent(head: str) -> str:
    return f"""
{head}{_EVENT_FILTERS}
RETURN e.id AS id
ORDER BY e.create_time DESC, e.id DESC
LIMIT $limit
"""


ROUTES: Final[dict[tuple[str, bool], str]] = {
    ("summary", False): _summary_route(_EVENTS_ALL),
    ("summary", True): _summary_route(_EVENTS_RESTRICT),
    ("chunk", False): _chunk_route(_EVENTS_ALL),
    ("chunk", True): _chunk_route(_EVENTS_RESTRICT),
    ("recent", False): _recent(_EVENTS_ALL),
    ("recent", True): _recent(_EVENTS_RESTRICT),
}

# Both routes through a vector index ``$index``, for large spaces (``_routes.py``): the space's
# own index, or the database-wide one (which holds every space). The indexes are approximate, so
# fetch ``$fetch`` (a multiple of the limit) nearest nodes, keep this space's events that pass
# the filters, and rescore them exactly -- the scores and the tie order are the exact routes'.
# The store falls back to the exact scan when fewer than the limit survive.
SUMMARY_BY_INDEX: Final = f"""
CALL db.index.vector.queryNodes($index, $fetch, $q) YIELD node AS e
WITH e
WHERE e.space = $space AND e.id IS NOT NULL
  AND e.embedding_dims = $d{_EVENT_FILTERS}
WITH e, {_SCORE.format(v="e")} AS s
ORDER BY s DESC, e.id
LIMIT $limit
RETURN e.id AS id, 2 * s - 1 AS score
"""
# An event's best chunk among the fetched ones (its best chunk overall, unless the index missed
# it and caught a worse one of the same event).
CHUNK_BY_INDEX: Final = f"""
CALL db.index.vector.queryNodes($index, $fetch, $q) YIELD node AS c
WITH c
WHERE c.space = $space AND c.embedding_dims = $d
MATCH (e:Event {{space: $space, id: c.event_id}})
WHERE e.id IS NOT NULL{_EVENT_FILTERS}
WITH e, c, {_SCORE.format(v="c")} AS s
ORDER BY s DESC, c.chunk_index
WITH e, collect({{i: c.chunk_index, start: c.start, end: c.end, s: s}})[0] AS best
ORDER BY best.s DESC, e.id
LIMIT $limit
RETURN e.id AS id, 2 * best.s - 1 AS score, best.i AS i, best.start AS start, best.end AS end
"""
BY_INDEX: Final[dict[str, tuple[str, str]]] = {
    "summary": (VECTOR_INDEXES["Event"], SUMMARY_BY_INDEX),
    "chunk": (CHUNK_VECTOR_INDEX, CHUNK_BY_INDEX),
}


def with_pool(route_query: str) -> str:
    """A route query that also returns what ranking reads of each hit (``Store.route_pool``):
    the event with its vector, its chunks' text hashes and its concepts, for the kept rows."""
    head, _, last = route_query.rstrip().rpartition("\n")
    assert last.startswith("RETURN e.id AS id, "), last
    pool = f"{EVENT_MAP_VEC} AS ev, {_POOL_HASHES} AS hashes, {_POOL_CONCEPTS} AS cs"
    return f"{head}\n{last}, {pool}\n"


_POOL_HASHES = (
    "COLLECT { MATCH (x:EventSource {space: $space, event_id: e.id}) RETURN x.text_hash }"
)
# What the evidence page shows of an event's concepts: the order and cap of neighbours().
_POOL_CONCEPTS = (
    "COLLECT { MATCH (e)-[:MENTIONS]->(m:Concept) WHERE m.space = $space "
    "RETURN [m.id, m.name] ORDER BY m.id LIMIT 50 }"
)


# For the lexical route's queries (``_lexical.py``): the same filters and pool projections.
EVENT_FILTERS: Final = _EVENT_FILTERS
POOL_HASHES: Final = _POOL_HASHES
POOL_CONCEPTS: Final = _POOL_CONCEPTS

POOL_ROUTES: Final = {key: with_pool(query) for key, query in ROUTES.items() if key[0] != "recent"}
POOL_BY_INDEX: Final = {
    route: (index, with_pool(query)) for route, (index, query) in BY_INDEX.items()
}
# Width and state of the two route indexes, and the size of a space (its insertion counter:
# nodes and topics ever created, an upper bound of its events, read by one unique lookup).
# ``$names``: the two database-wide route indexes and the space's own two.
ROUTE_INDEX_STATE: Final = (
    "SHOW VECTOR INDEXES YIELD name, state, options WHERE name IN $names "
    "RETURN name, state, options.indexConfig['vector.dimensions'] AS dims"
)
GLOBAL_ROUTE_INDEXES: Final = (VECTOR_INDEXES["Event"], CHUNK_VECTOR_INDEX)
# ``total``: the events of every space (from the count store), which share the database-wide
# index with this space's ``n`` insertions.
SPACE_SIZE: Final = (
    f"MATCH (s:{SPACE_LABEL} {{space: $space}}) "
    "RETURN s.seq AS n, s.labelled AS labelled, COUNT { MATCH (:Event) } AS total"
)

# ---------------------------------------------------------------- event reads

GET_EVENTS: Final = (
    f"UNWIND $ids AS id MATCH (e:Event {{space: $space, id: id}}) RETURN {EVENT_MAP} AS e"
)
GET_EVENTS_VEC: Final = (
    f"UNWIND $ids AS id MATCH (e:Event {{space: $space, id: id}}) RETURN {EVENT_MAP_VEC} AS e"
)
GET_CHUNKS: Final = (
    "UNWIND $ids AS id MATCH (c:EventSource {space: $space, event_id: id}) "
    f"RETURN {CHUNK_MAP} AS c ORDER BY c.event_id, c.chunk_index"
)
GET_CHUNKS_VEC: Final = (
    "UNWIND $ids AS id MATCH (c:EventSource {space: $space, event_id: id}) "
    f"RETURN {CHUNK_MAP_VEC} AS c ORDER BY c.event_id, c.chunk_index"
)
ID_COUNTS: Final = f"""
UNWIND $ids AS id
RETURN id, COUNT {{ MATCH (n:{ALL_LABELS} {{space: $space, id: id}}) }} AS n
"""
EVENTS_MENTIONING: Final = (
    "MATCH (e:Event)-[:MENTIONS]->(c:Concept {space: $space, id: $id}) "
    "WHERE e.space = $space RETURN e.id AS id"
)
POSITIONAL: Final = (
    "MATCH (e:Event) WHERE e.space = $space AND e.id STARTS WITH $head RETURN e.id AS id"
)

# ---------------------------------------------------------------- graph reads

GET_NODES: Final = (
    f"UNWIND $ids AS id MATCH (n:{ALL_LABELS} {{space: $space, id: id}}) RETURN {NODE_MAP} AS n"
)


def list_count(lbl: NodeLabel, where: str) -> str:
    """``where`` is compiled by the store from allow-listed fields and fixed operators."""
    return (
        f"MATCH (n:{label(lbl)}) WHERE n.space = $space AND n.id IS NOT NULL AND ({where}) "
        "RETURN count(n) AS total"
    )


def list_page(lbl: NodeLabel, where: str, key: str, direction: str, after: bool) -> str:
    """One keyset page ordered by ``key`` then id, both in ``direction``; ``key`` is an
    allow-listed property expression and ``direction`` ASC or DESC."""
    if direction not in ("ASC", "DESC"):
        raise InvalidInput(
            f"sort direction must be ASC or DESC, got {direction!r}",
            zh=f"排序方向须为 ASC 或 DESC（收到 {direction!r}）",
        )
    cmp = ">" if direction == "ASC" else "<"
    keyset = (
        f"AND ({key} {cmp} $after_key OR ({key} = $after_key AND n.id {cmp} $after_id)) "
        if after
        else ""
    )
    return (
        f"MATCH (n:{label(lbl)}) WHERE n.space = $space AND n.id IS NOT NULL AND ({where}) "
        f"{keyset}WITH n, {key} AS k ORDER BY k {direction}, n.id {direction} LIMIT $limit "
        f"RETURN {NODE_MAP} AS n, k"
    )




def _neighbours(keyset: str, order: str) -> str:
    """Both directions in one static query; $out / $in switch the branches off. ``keyset``
    and ``order`` are one of the two fixed pairs below, never caller text."""
    return f"""
UNWIND $ids AS id
MATCH (n:{ALL_LABELS} {{space: $space, id: id}})
CALL (n) {{
  MATCH (n)-[r]->(o:{ALL_LABELS})
  WHERE $out AND ($type IS NULL OR type(r) = $type) AND {keyset}
  RETURN type(r) AS type, n.id AS source, o.id AS target, properties(r) AS props,
         o.id AS other, 'out' AS dir
  UNION ALL
  MATCH (n)<-[r]-(o:{ALL_LABELS})
  WHERE $in AND ($type IS NULL OR type(r) = $type) AND {keyset}
  RETURN type(r) AS type, o.id AS source, n.id AS target, properties(r) AS props,
         o.id AS other, 'in' AS dir
}}
WITH n.id AS id, type, source, target, props, other, dir,
     CASE type WHEN 'HAS_ATTITUDE' THEN coalesce(props.event_id, '') ELSE '' END AS ek
ORDER BY {order}
WITH id, collect({{type: type, source: source, target: target, props: props, other: other,
                  dir: dir}})[..$limit] AS rows
RETURN id, rows
"""


NEIGHBOURS: Final = _neighbours("($after IS NULL OR o.id > $after)", "id, type, other, dir, ek")
# a backward page: the rows just below $before (or the end), nearest first (the store turns
# them round)
NEIGHBOURS_BACKWARD: Final = _neighbours(
    "($before IS NULL OR o.id < $before)", "id, type DESC, other DESC, dir DESC, ek DESC"
)
GRAPH_NODES: Final = f"""
CALL () {{
  MATCH (n:Event) WHERE n.space = $space AND n.id IS NOT NULL
  RETURN n, 0 AS rank ORDER BY n.id LIMIT $cap
  UNION ALL
  MATCH (n:Person) WHERE n.space = $space AND n.id IS NOT NULL
  RETURN n, 1 AS rank ORDER BY n.id LIMIT $cap
  UNION ALL
  MATCH (n:Concept) WHERE n.space = $space AND n.id IS NOT NULL
  RETURN n, 2 AS rank ORDER BY n.id LIMIT $cap
  UNION ALL
  MATCH (n:Location) WHERE n.space = $space AND n.id IS NOT NULL
  RETURN n, 3 AS rank ORDER BY n.id LIMIT $cap
}}
WITH n, rank ORDER BY rank, n.id LIMIT $cap
RETURN {NODE_MAP} AS n
"""
GRAPH_RELATIONS: Final = f"""
UNWIND $ids AS id
MATCH (a:{ALL_LABELS} {{space: $space, id: id}})-[r]->(b)
WHERE b.id IN $ids
WITH type(r) AS type, a.id AS source, b.id AS target, properties(r) AS props
WITH type, source, target, props,
     CASE type WHEN 'HAS_ATTITUDE' THEN coalesce(props.event_id, '') ELSE '' END AS ek
ORDER BY type, source, target, ek
LIMIT $cap
RETURN type, source, target, props
"""

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
EVENT_IDS: Final = (
    "UNWIND $ids AS id MATCH (e:Event {space: $space, id: id}) RETURN e.id AS id"
)
_TOPIC_MAP: Final = "t {.path, .name, .parent, .seq}"
_BINDING_MAP: Final = (
    "{path: t.path, event_id: e.id, timestamp: b.timestamp, activation: b.activation_weight, "
    "diffusion: b.diffusion_weight, independence: b.context_independence_weight, "
    "related: b.related_paths}"
)
TOPIC_ROWS: Final = (
    f"MATCH (t:Topic) WHERE t.space = $space WITH t ORDER BY t.seq RETURN {_TOPIC_MAP} AS t"
)
BINDING_ROWS: Final = (
    "MATCH (t:Topic)-[b:BINDS]->(e:Event) WHERE t.space = $space AND e.space = $space "
    f"WITH t, b, e ORDER BY e.seq, t.seq RETURN {_BINDING_MAP} AS b"
)
EVENT_DATES: Final = (
    "MATCH (e:Event) WHERE e.space = $space AND e.id IS NOT NULL "
    "RETURN e.id AS id, coalesce(e.create_date, '') AS day ORDER BY e.seq"
)
GRAPH_TOPICS: Final = (
    "MATCH (t:Topic) WHERE t.space = $space WITH t ORDER BY t.id LIMIT $cap "
    f"RETURN {_TOPIC_MAP} AS t"
)
GRAPH_BINDS: Final = f"""
UNWIND $ids AS id
MATCH (t:Topic {{space: $space, id: id}})-[b:BINDS]->(e:Event)
WHERE e.space = $space
WITH t, b, e ORDER BY t.id, e.id LIMIT $cap
RETURN {_BINDING_MAP} AS b
"""

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
