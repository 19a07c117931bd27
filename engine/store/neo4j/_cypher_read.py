"""Cypher of the Neo4j store's reads: meta and counts, entity lookups, events and chunks,
nodes and their neighbours, the graph view and the topic tree.

Static text with ``$parameters``, like all the store's Cypher; the labels, schema and
projections these reads share with the writes are in ``_cypher``. Kept apart from the writes
(``_cypher_write``: what runs under the space lock) and from the retrieval routes
(``_cypher_route``): a read takes no lock and ranks nothing.
"""

from __future__ import annotations

from typing import Final

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.models import (
    ENTITY_LABELS,
    EntityLabel,
    NodeLabel,
)
from mnemoql.engine.store.neo4j._cypher import (
    ALL_LABELS,
    CHUNK_MAP,
    CHUNK_MAP_VEC,
    ENTITY_MAP,
    EVENT_MAP,
    EVENT_MAP_VEC,
    META_MAP,
    NAME_INDEX,
    NAME_KEY_CHARS,
    NODE_MAP,
    RECORD_LABEL,
)
from mnemoql.engine.store.rules import label

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
EVENTS_WITH_HASH: Final = (
    "MATCH (e:Event {space: $space, content_hash: $hash}) "
    "RETURN e.id AS id ORDER BY e.create_time, e.seq"
)

# ---------------------------------------------------------------- entity resolution

# The Lucene query of the keys of ``$keys``: each key as a quoted term (backslash and quote
# escaped), any of them; built in Cypher so the keys are cut exactly as the writes cut them.
_LUCENE_KEYS: Final = (
    r"""reduce(s = '', k IN $keys | s + ' name_keys:"' + replace(replace("""
    rf"""$name_prefix + left(k, {NAME_KEY_CHARS}), '\\', '\\\\'), '"', '\\"') + '"')"""
)
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

# ---------------------------------------------------------------- topic reads

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
