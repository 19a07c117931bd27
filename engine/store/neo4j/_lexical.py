"""The Neo4j store's lexical route: a Lucene full-text index over chunk texts and summaries.

``event_text`` indexes ``EventSource.text``, ``Event.summary`` and the ``space`` of both with
Lucene's ``cjk`` analyser (CJK bigrams, lower-cased words, English stop words: the tokens of
``engine.store.lexical``, which the query is built from). Lucene scores with BM25. The
query names the space as a phrase with no weight, so other spaces hardly crowd the fetch, and
the rows are checked against ``space`` exactly afterwards (a dash splits a space name into
words: ``a-b`` also matches the phrase ``b``). Neo4j keeps the index in step with every
committed write, fills it when it is created over existing nodes, and re-vectorize / restore
rewrite the nodes it reads, so it is derived and never the only copy.

Each route call asks Lucene for ``fetch`` rows, keeps this space's events that pass the
filters, takes each event's best row and returns the top ``limit``; when fewer than ``limit``
survive a full fetch, it asks once more for four times as many.
"""

from __future__ import annotations

from typing import Any, Final

from mnemoql.engine.models import Filters, Hit
from mnemoql.engine.store import lexical
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_route as qroute
from mnemoql.engine.store.neo4j import _records as rec
from mnemoql.engine.store.neo4j._runner import Runner

INDEX: Final = "event_text"
CREATE_INDEX: Final = (
    f"CREATE FULLTEXT INDEX {INDEX} IF NOT EXISTS FOR (n:EventSource|Event) "
    "ON EACH [n.text, n.summary, n.space] "
    "OPTIONS {indexConfig: {`fulltext.analyzer`: 'cjk'}}"
)
FETCH_PER_EVENT = 4
MAX_FETCH = 4_000

_BODY = f"""
CALL db.index.fulltext.queryNodes('{INDEX}', $lucene, {{limit: $fetch}}) YIELD node, score
WITH collect({{n: node, s: score}}) AS found
CALL (found) {{
  UNWIND found AS h
  WITH h.n AS n, h.s AS score
  WHERE n.space = $space AND (n:Event OR n:EventSource)
  WITH n, score, CASE WHEN n:Event THEN n.id ELSE n.event_id END AS eid
  MATCH (e:Event {{space: $space, id: eid}})
  WHERE e.id IS NOT NULL{{restrict}}{qroute.EVENT_FILTERS}
  WITH e, n, score
  ORDER BY score DESC, CASE WHEN n:EventSource THEN 0 ELSE 1 END, n.chunk_index
  WITH e, collect({{s: score, i: n.chunk_index, start: n.start, end: n.end}})[0] AS best
  ORDER BY best.s DESC, e.id
  LIMIT $limit
  RETURN collect({{id: e.id, score: best.s, i: best.i, start: best.start, end: best.end{{pool}}}})
    AS hits
}}
RETURN size(found) AS fetched, hits
"""
_POOL = f", ev: {q.EVENT_MAP_VEC}, hashes: {qroute.POOL_HASHES}, cs: {qroute.POOL_CONCEPTS}"
_RESTRICT = " AND e.id IN $restrict"
QUERIES: Final[dict[tuple[bool, bool], str]] = {
    (restricted, pool): _BODY.replace("{restrict}", _RESTRICT if restricted else "").replace(
        "{pool}", _POOL if pool else ""
    )
    for restricted in (False, True)
    for pool in (False, True)
}


def lucene(terms: list[str], space: str) -> str:
    """Any of the terms in a text or summary, within the space (a phrase of weight 0)."""
    space_clause = '"' + space.replace("\\", "\\\\").replace('"', '\\"') + '"'
    body = lexical.lucene_query(terms, ("text", "summary"))
    return f"space:{space_clause}^0 AND ({body})"


async def rows(
    runner: Runner,
    text: str,
    filters: Filters,
    exclude: frozenset[str],
    limit: int,
    restrict: frozenset[str] | None,
    pool: bool,
) -> list[dict[str, Any]]:
    """The route's hits as maps (``id, score, i, start, end`` and, with ``pool``, ``ev``,
    ``hashes``, ``cs`` as the vector routes' pool rows)."""
    terms = lexical.query_terms(text)
    if not terms or limit <= 0 or (restrict is not None and not restrict):
        return []
    params = {
        **rec.filter_params(filters, exclude, restrict),
        "lucene": lucene(terms, runner.space),
        "limit": int(limit),
    }
    fetch = min(MAX_FETCH, limit * FETCH_PER_EVENT + 3 * len(exclude))
    query = QUERIES[(restrict is not None, pool)]
    while True:
        found = await runner.run(query, {**params, "fetch": fetch})
        hits: list[dict[str, Any]] = found[0]["hits"] if found else []
        fetched = int(found[0]["fetched"]) if found else 0
        if len(hits) >= limit or fetched < fetch or fetch >= MAX_FETCH:
            return hits
        fetch = min(MAX_FETCH, fetch * 4)


def hit(r: dict[str, Any]) -> Hit:
    if r.get("i") is None:
        return Hit(r["id"], float(r["score"]))
    return Hit(r["id"], float(r["score"]), int(r["i"]), int(r["start"]), int(r["end"]))
