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

This module holds what every statement shares: the labels, the schema (constraints and
indexes, each space's own labels and vector indexes), the entities' name keys and the
projections. The statements are in ``_cypher_read`` (reads), ``_cypher_route`` (retrieval
routes) and ``_cypher_write`` (writes, under the space lock).
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from typing import Final, NamedTuple

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.models import (
    NODE_LABELS,
    TOPIC_LABEL,
    NodeLabel,
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


def name_keys(names: str) -> str:
    """Cypher: the name keys of the list expression ``names``."""
    return f"[k IN {names} | $name_prefix + left(k, {NAME_KEY_CHARS})]"

NAME_LOOKUP_BATCH: Final = 500  # keys per query (Lucene allows 1,024 clauses)
NAME_KEYS_OF_ROW: Final = name_keys("r.norm_names")
# Entities of the space written before the name keys get them once, in batches (open);
# ``named`` on the space node records that every entity has them.
KEY_NAMES: Final = f"""
MATCH (n:Person|Concept|Location)
WHERE n.space = $space AND n.id IS NOT NULL AND n.name_keys IS NULL
WITH n LIMIT $batch
SET n.name_keys = {name_keys("coalesce(n.norm_names, [])")}
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
