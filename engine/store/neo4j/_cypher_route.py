"""Cypher of the Neo4j store's retrieval routes: the exact summary, chunk and recent routes,
the same through a vector index for large spaces, and their ``route_pool`` forms.

Static text with ``$parameters``, like all the store's Cypher (``_cypher``: labels, schema,
projections). Kept apart from the other reads (``_cypher_read``): the routes are what the
search path runs (``_routes``, ``_lexical``), with their own filters and pool projections,
and they change with ranking, not with the graph's shape.
"""

from __future__ import annotations

from typing import Final

from mnemoql.engine.models import (
    ADJACENCY,
)
from mnemoql.engine.store.neo4j._cypher import (
    CHUNK_VECTOR_INDEX,
    EVENT_MAP_VEC,
    SPACE_LABEL,
    VECTOR_INDEXES,
)

# ---------------------------------------------------------------- retrieval routes

_ADJ: Final = "|".join(ADJACENCY)
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
