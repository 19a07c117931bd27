"""Neo4j's side of following another process's topic and date changes (``engine.topics.changes``;
issue 30, "Other writers cost what they write").

The change clock is the space's ``writes`` counter (``_cypher_write.LOCK_SPACE``: every write
transaction bumps it under the space's lock). What a catch-up reads since a mark, each by an
index:

- BINDS written or refreshed: each carries ``space`` and ``stamp`` (the ``writes`` value of
  the transaction that last wrote it; ``binds_stamp``);
- removals: a forget leaves one :data:`REMOVAL_LABEL` node per event (its bound paths, its day,
  the transaction's stamp; ``topic_removal_stamp``), kept for a horizon of ``keep`` records
  (pruned once there are a quarter more, by the forget that crosses it);
- new topics and events by ``seq`` (one counter for both, never reused: ``s.seq`` is the mark).

A reader whose mark is below the space's ``topics_reload`` (raised when removals are pruned and
when an import fills the space) gets None and reloads in full. Neo4j reads are read-committed,
not snapshots: the mark is read first and the rows after it without an upper bound, so a row
committed in between is read now and again next time, which changes nothing
(``engine.topics.changes``: a mark may lag behind the index, never run ahead of it).
"""

from __future__ import annotations

from typing import Any, Final

from neo4j import AsyncManagedTransaction

from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_write as qwrite
from mnemoql.engine.store.neo4j import _records as rec
from mnemoql.engine.topics.changes import Removed, TopicChanges, TopicMark

REMOVAL_LABEL: Final = qwrite.REMOVAL_LABEL
KEEP = 50_000  # removal records kept per space (at most a quarter more)

INDEXES: Final[dict[str, str]] = {
    "binds_stamp": "CREATE INDEX binds_stamp IF NOT EXISTS "
    "FOR ()-[b:BINDS]-() ON (b.space, b.stamp)",
    "event_seq": "CREATE INDEX event_seq IF NOT EXISTS FOR (n:Event) ON (n.space, n.seq)",
    "topic_seq": "CREATE INDEX topic_seq IF NOT EXISTS FOR (n:Topic) ON (n.space, n.seq)",
    "topic_removal_stamp": f"CREATE INDEX topic_removal_stamp IF NOT EXISTS "
    f"FOR (n:{REMOVAL_LABEL}) ON (n.space, n.stamp)",
    "topic_removal_n": f"CREATE INDEX topic_removal_n IF NOT EXISTS "
    f"FOR (n:{REMOVAL_LABEL}) ON (n.space, n.n)",
}

MARK: Final = f"""
MATCH (s:{q.SPACE_LABEL} {{space: $space}})
RETURN coalesce(s.writes, 0) AS clock, coalesce(s.seq, 0) AS seq,
       coalesce(s.topics_reload, 0) AS reload
"""
# Inside the forget's transaction, after LOCK_SPACE and before the event is deleted. ``$n`` and
# ``$stamp`` come from LOCK_SPACE's row: the space node takes values here, never an expression
# that reads it again (that deadlocks against the writers queued on the lock; LOCK_SPACE).
LOG_REMOVAL: Final = f"""
MATCH (s:{q.SPACE_LABEL} {{space: $space}})
MATCH (e:Event {{space: $space, id: $id}})
OPTIONAL MATCH (t:Topic)-[:BINDS]->(e)
WITH s, e, [p IN collect(t.path) WHERE p IS NOT NULL] AS paths
SET s.removals = $n
CREATE (:{REMOVAL_LABEL} {{space: $space, n: $n, stamp: $stamp, event_id: e.id,
                          paths: paths, day: coalesce(e.create_date, '')}})
"""
# Drops the records up to ``$horizon`` and raises ``topics_reload`` (``$reload``, the space's
# value) to the newest of them: a reader whose mark is older reloads in full.
PRUNE_REMOVALS: Final = f"""
MATCH (s:{q.SPACE_LABEL} {{space: $space}})
OPTIONAL MATCH (r:{REMOVAL_LABEL}) WHERE r.space = $space AND r.n <= $horizon
WITH s, max(r.stamp) AS newest, collect(r) AS gone
SET s.removals_floor = $horizon,
    s.topics_reload = CASE WHEN newest > $reload THEN newest ELSE $reload END
FOREACH (r IN gone | DELETE r)
RETURN size(gone) AS pruned
"""
REMOVALS_SINCE: Final = f"""
MATCH (r:{REMOVAL_LABEL}) WHERE r.space = $space AND r.stamp > $since
RETURN r.event_id AS event_id, r.paths AS paths, r.day AS day ORDER BY r.n
"""
TOPICS_SINCE: Final = (
    "MATCH (t:Topic) WHERE t.space = $space AND t.seq > $seq "
    "WITH t ORDER BY t.seq RETURN t {.path, .name, .parent, .seq} AS t"
)
BINDINGS_SINCE: Final = """
MATCH (t:Topic)-[b:BINDS]->(e:Event) WHERE b.space = $space AND b.stamp > $since
WITH t, b, e ORDER BY b.stamp, e.seq
RETURN {path: t.path, event_id: e.id, timestamp: b.timestamp, activation: b.activation_weight,
        diffusion: b.diffusion_weight, independence: b.context_independence_weight,
        related: b.related_paths} AS b
"""
DATED_SINCE: Final = (
    "MATCH (e:Event) WHERE e.space = $space AND e.seq > $seq AND e.id IS NOT NULL "
    "RETURN e.id AS id, coalesce(e.create_date, '') AS day ORDER BY e.seq"
)


async def run(
    tx: AsyncManagedTransaction, space: str, query: str, **params: Any
) -> list[dict[str, Any]]:
    """``_write.run`` (which imports this module for the forget's log)."""
    result = await tx.run(query, rec.quiet({"space": space, **q.space_params(space), **params}))
    return [dict(zip(r.keys(), r, strict=True)) async for r in result]


async def log_removal(
    tx: AsyncManagedTransaction,
    space: str,
    event_id: str,
    keep: int,
    stamp: int,
    state: dict[str, Any],
) -> None:
    """Record the event's removal (and its bindings'), then prune the log past its horizon
    once it holds a quarter more than ``keep``. ``stamp`` and ``state`` are LOCK_SPACE's."""
    n = int(state.get("removals") or 0) + 1
    await run(tx, space, LOG_REMOVAL, id=event_id, n=n, stamp=stamp)
    keep = max(keep, 1)
    if n - int(state.get("removals_floor") or 0) > keep + keep // 4:
        reload = int(state.get("topics_reload") or 0)
        await run(tx, space, PRUNE_REMOVALS, horizon=n - keep, reload=reload)


async def _mark(tx: AsyncManagedTransaction, space: str) -> tuple[TopicMark, int]:
    rows = await run(tx, space, MARK)
    if not rows:
        return TopicMark(0, 0, 0), 0
    r = rows[0]
    seq = int(r["seq"])
    return TopicMark(int(r["clock"]), seq, seq), int(r["reload"])


async def topic_changes(
    tx: AsyncManagedTransaction, space: str, since: TopicMark | None
) -> TopicChanges | None:
    """What changed since ``since`` (the current mark alone when None); None when the space
    went back behind the mark (dropped and written again) or ``topics_reload`` passed it."""
    mark, reload = await _mark(tx, space)
    if since is None:
        return TopicChanges(mark)
    if mark.clock < since.clock or mark.seq < since.seq or since.clock < reload:
        return None
    removed: list[Removed] = []
    for r in await run(tx, space, REMOVALS_SINCE, since=since.clock):
        removed += [Removed(r["event_id"], path) for path in r["paths"] or []]
        removed.append(Removed(r["event_id"], None, r["day"] or ""))
    topics = [rec.topic(r["t"]) for r in await run(tx, space, TOPICS_SINCE, seq=since.topic_seq)]
    bindings = [
        rec.binding(r["b"]) for r in await run(tx, space, BINDINGS_SINCE, since=since.clock)
    ]
    dated: list[tuple[str, str]] = [
        (r["id"], r["day"]) for r in await run(tx, space, DATED_SINCE, seq=since.seq)
    ]
    return TopicChanges(mark, removed, topics, bindings, dated)
