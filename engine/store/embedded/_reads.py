"""The reads of committed rows: meta, counts, entities, events, graph, topics.

``Database`` (``_db``) is these reads plus what keeps the vector mirrors in step with the
database: its open and close, the catch-up of other processes' commits and the writes. These
reads need nothing of that but the connection (no mirror, no ANN index), so they are kept
apart. The evidence path runs them on a compute thread's read-only connection instead
(``Threads.read_committed``), where no save's transaction holds them up; the
reads a client can make costly run on the reader's connection (``_reader``).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from mnemoql.engine.drafts import SaveResult
from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.models import (
    REL_TYPES,
    Binding,
    Chunk,
    Counts,
    Direction,
    Entity,
    EntityLabel,
    Event,
    Filters,
    GraphSnapshot,
    MemoryMeta,
    Neighbour,
    Node,
    NodeLabel,
    NodePage,
    Page,
    Relation,
    RelType,
    SortSpec,
    Topic,
    Where,
)
from mnemoql.engine.store.embedded._query import (
    IN_SET,
    event_filter_sql,
    json_set,
)
from mnemoql.engine.store.embedded._reader import OwnThread, list_nodes
from mnemoql.engine.store.embedded._recall import topic_changes
from mnemoql.engine.store.embedded._schema import (
    BINDING_COLS,
    CHUNK_COLS,
    ENTITY_COLS,
    EVENT_COLS,
    META_SQL,
    NODE_COLS,
    TOPIC_COLS,
    relation,
    row_binding,
    row_chunk,
    row_entity,
    row_event,
    row_meta,
    row_node,
    row_topic,
)
from mnemoql.engine.store.rules import json_result
from mnemoql.engine.text import normalise_name
from mnemoql.engine.topics.changes import TopicChanges, TopicMark


class Reads(OwnThread):
    """The SQL reads of ``Database``; ``conn`` is its connection, open between ``open`` and
    ``close`` (``_db``), or the one it was made with (``Reads(conn)``: a compute thread's own,
    ``Threads.read_committed``)."""

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("the embedded store is not open")
        return self._conn

    # ------------------------------------------------------------ meta, counts, idempotency

    def get_meta(self) -> MemoryMeta | None:
        return row_meta(self.conn.execute(META_SQL).fetchone())

    def counts(self) -> Counts:
        row = self.conn.execute(
            "SELECT (SELECT COUNT(*) FROM nodes WHERE label = 'Event'), "
            "(SELECT COUNT(*) FROM nodes WHERE label = 'Person'), "
            "(SELECT COUNT(*) FROM nodes WHERE label = 'Concept'), "
            "(SELECT COUNT(*) FROM nodes WHERE label = 'Location'), "
            "(SELECT COUNT(*) FROM chunks), (SELECT COUNT(*) FROM relations)"
        ).fetchone()
        return Counts(*row)

    def replay(self, key: str) -> SaveResult | None:
        row = self.conn.execute("SELECT result FROM idempotency WHERE key = ?", (key,)).fetchone()
        return None if row is None else json_result(row[0])

    def events_with_hash(self, content_hash: str) -> list[str]:
        rows = self.conn.execute(
            "SELECT id FROM nodes WHERE content_hash = ? AND +label = 'Event' "
            "ORDER BY create_time, seq",
            (content_hash,),
        )
        return [r[0] for r in rows]

    def all_for_revectorize(self) -> tuple[list[Event], list[Entity]]:
        events = self.conn.execute(
            f"SELECT {EVENT_COLS} FROM nodes WHERE label = 'Event' ORDER BY seq"
        )
        entities = self.conn.execute(
            f"SELECT {ENTITY_COLS} FROM nodes WHERE label <> 'Event' ORDER BY seq"
        )
        return [row_event(r, False) for r in events], [row_entity(r) for r in entities]

    # ------------------------------------------------------------ entities

    def find_entities(self, label: EntityLabel, names: Iterable[str]) -> list[Entity]:
        keys = {normalise_name(n) for n in names}
        rows = self.conn.execute(
            f"SELECT {ENTITY_COLS} FROM nodes WHERE id IN (SELECT node_id FROM names "
            f"WHERE label = ? AND norm IN {IN_SET}) ORDER BY seq",
            (label, json_set(keys)),
        )
        return [row_entity(r) for r in rows]

    def resolve_terms(self, term: str) -> frozenset[str]:
        rows = self.conn.execute(
            "SELECT node_id FROM names WHERE norm = ?", (normalise_name(term),)
        )
        return frozenset(r[0] for r in rows)

    def entities_by_ids(self, ids: Sequence[str]) -> dict[str, Entity]:
        rows = self.conn.execute(
            f"SELECT {ENTITY_COLS} FROM nodes WHERE label <> 'Event' AND id IN {IN_SET}",
            (json_set(ids),),
        )
        return {r[1]: row_entity(r) for r in rows}

    # ------------------------------------------------------------ events

    def events_in_groups(self, filters: Filters) -> frozenset[str]:
        where, params = event_filter_sql(Filters(groups=filters.groups), frozenset(), None)
        rows = self.conn.execute(f"SELECT id FROM nodes WHERE {where}", params)
        return frozenset(r[0] for r in rows)

    def recent_events(
        self, filters: Filters, exclude: frozenset[str], limit: int, restrict: frozenset[str] | None
    ) -> list[str]:
        where, params = event_filter_sql(filters, exclude, restrict)
        rows = self.conn.execute(
            f"SELECT id FROM nodes WHERE {where} ORDER BY create_time DESC, id DESC LIMIT ?",
            [*params, max(0, limit)],
        )
        return [r[0] for r in rows]

    def get_events(self, ids: Sequence[str], with_vectors: bool) -> list[Event]:
        rows = self.conn.execute(
            f"SELECT {EVENT_COLS} FROM nodes WHERE +label = 'Event' AND id IN {IN_SET}",
            (json_set(ids),),
        )
        found = {r[0]: row_event(r, with_vectors) for r in rows}
        return [found[i] for i in ids if i in found]

    def get_chunks(self, event_ids: Sequence[str], with_vectors: bool) -> dict[str, list[Chunk]]:
        out: dict[str, list[Chunk]] = {i: [] for i in event_ids}
        rows = self.conn.execute(
            f"SELECT {CHUNK_COLS} FROM chunks WHERE event_id IN {IN_SET} "
            "ORDER BY event_id, chunk_index",
            (json_set(event_ids),),
        )
        for r in rows:
            out[r[0]].append(row_chunk(r, with_vectors))
        return out

    def id_counts(self, ids: Sequence[str]) -> dict[str, int]:
        out = dict.fromkeys(ids, 0)
        rows = self.conn.execute(
            f"SELECT id, COUNT(*) FROM nodes WHERE id IN {IN_SET} GROUP BY id", (json_set(ids),)
        )
        out.update({r[0]: r[1] for r in rows})
        return out

    def events_mentioning(self, concept_id: str) -> frozenset[str]:
        rows = self.conn.execute(
            "SELECT source FROM relations WHERE target = ? AND type = 'MENTIONS'", (concept_id,)
        )
        return frozenset(r[0] for r in rows)

    def positional_events(self, prefix: str, chapter: str) -> list[str]:
        head = f"{prefix}_ch{chapter}_e"
        tail = re.compile(r"[0-9]+")
        rows = self.conn.execute(
            "SELECT id FROM nodes WHERE id >= ? AND id < ? AND +label = 'Event'",
            (head, head[:-1] + "f"),
        )
        found = [r[0] for r in rows if r[0].startswith(head) and tail.fullmatch(r[0][len(head) :])]
        return sorted(found, key=lambda i: (int(i[len(head) :]), i))

    # ------------------------------------------------------------ graph reads

    def get_nodes(self, ids: Sequence[str]) -> list[Node | None]:
        rows = self.conn.execute(
            f"SELECT {NODE_COLS} FROM nodes WHERE id IN {IN_SET}", (json_set(ids),)
        )
        found = {r[1]: row_node(r) for r in rows}
        return [found.get(i) for i in ids]

    def list_nodes(
        self, label: NodeLabel, where: Where | None, sort: SortSpec, page: Page
    ) -> NodePage:
        return list_nodes(self.conn, label, where, sort, page)

    def neighbours(
        self,
        node_ids: Sequence[str],
        rel_type: RelType | None,
        direction: Direction,
        limit_per_node: int,
        after: str | None,
        before: str | None = None,
        backward: bool = False,
    ) -> dict[str, list[Neighbour]]:
        if rel_type is not None and rel_type not in REL_TYPES:
            raise InvalidInput(
                f"unknown relationship type {rel_type!r}", zh=f"未知关系类型 {rel_type!r}"
            )
        if direction not in ("out", "in", "both"):
            raise InvalidInput(
                f"direction must be out, in or both (got {direction!r})",
                zh=f"direction 须为 out、in 或 both（收到 {direction!r}）",
            )
        if limit_per_node < 0:
            raise InvalidInput(
                "limit_per_node must not be negative", zh="limit_per_node 不能为负数"
            )
        branch = (
            "SELECT q.value AS node, r.type, r.source, r.target, r.props, r.event_key, "
            "r.{other} AS other, '{dir}' AS dir FROM json_each(?1) q "
            "JOIN relations r ON r.{end} = q.value WHERE (?2 IS NULL OR r.type = ?2)"
        )
        parts = []
        if direction in ("out", "both"):
            parts.append(branch.format(other="target", dir="out", end="source"))
        if direction in ("in", "both"):
            parts.append(branch.format(other="source", dir="in", end="target"))
        if after is not None and before is not None:
            raise InvalidInput(
                "neighbours pages forward (after) or backward (before), not both",
                zh="neighbours 只能向前（after）或向后（before）翻页，不能同时两者",
            )
        backward = backward or before is not None
        # backward: the rows just before `before` (or the end), walked in reverse and turned
        # round below
        order, cmp, bound = (
            ("type DESC, other DESC, dir DESC, event_key DESC", "<", before)
            if backward
            else ("type, other, dir, event_key", ">", after)
        )
        sql = (
            "SELECT node, type, source, target, props, other, dir FROM (SELECT *, ROW_NUMBER() "
            f"OVER (PARTITION BY node ORDER BY {order}) AS rn FROM ("
            + " UNION ALL ".join(parts)
            + f") WHERE (?3 IS NULL OR other {cmp} ?3)) WHERE rn <= ?4 ORDER BY node, rn"
        )
        unique = list(dict.fromkeys(node_ids))
        out: dict[str, list[Neighbour]] = {i: [] for i in unique}
        for node, kind, src, dst, props, other, way in self.conn.execute(
            sql, (json_set(unique), rel_type, bound, limit_per_node)
        ):
            out[node].append(Neighbour(node, relation(kind, src, dst, props), other, way))
        if backward:
            for rows in out.values():
                rows.reverse()
        return out

    def graph(self, max_nodes: int, max_relations: int, topics: bool = False) -> GraphSnapshot:
        if max_nodes < 0 or max_relations < 0:
            raise InvalidInput("graph caps must not be negative", zh="图的上限不能为负数")
        rows = self.conn.execute(
            f"SELECT {NODE_COLS} FROM nodes ORDER BY lrank, id LIMIT ?", (max_nodes + 1,)
        ).fetchall()
        truncated_nodes = len(rows) > max_nodes
        rows = rows[:max_nodes]
        rel_sql = "SELECT type, source, target, props FROM relations"
        args: list[Any] = []
        if truncated_nodes:
            sel = "(SELECT id FROM nodes ORDER BY lrank, id LIMIT ?)"
            rel_sql += f" WHERE source IN {sel} AND target IN {sel}"
            args += [max_nodes, max_nodes]
        rel_sql += " ORDER BY type, source, target, event_key LIMIT ?"
        rels = [relation(*r) for r in self.conn.execute(rel_sql, [*args, max_relations + 1])]
        snapshot = GraphSnapshot(
            nodes=[row_node(r) for r in rows],
            relations=rels[:max_relations],
            truncated_nodes=truncated_nodes,
            truncated_relations=len(rels) > max_relations,
        )
        if topics and not truncated_nodes:
            self._add_topics(snapshot, max_nodes - len(rows), rels, max_relations)
        return snapshot

    def _add_topics(
        self, snapshot: GraphSnapshot, room: int, rels: list[Relation], max_relations: int
    ) -> None:
        """Topic nodes by id into the ``room`` left, with their SUBTOPIC and BINDS links."""
        found = self.conn.execute(
            f"SELECT {TOPIC_COLS} FROM topics ORDER BY path LIMIT ?", (room + 1,)
        ).fetchall()
        kept = [row_topic(r) for r in found[:room]]
        snapshot.topics = kept
        snapshot.truncated_nodes = len(found) > room
        sql = f"SELECT {BINDING_COLS} FROM topic_bindings b"
        args: list[Any] = []
        if snapshot.truncated_nodes:
            sql += f" WHERE b.path IN {IN_SET}"
            args.append(json_set(t.path for t in kept))
        sql += " ORDER BY b.path, b.event_id LIMIT ?"
        binds = [
            row_binding(r).relation() for r in self.conn.execute(sql, [*args, max_relations + 1])
        ]
        paths = {t.path for t in kept}
        links = [
            link for t in kept if t.parent in paths and (link := t.subtopic_relation()) is not None
        ]
        merged = sorted([*rels, *binds, *links], key=lambda r: (r.type, r.source, r.target))
        snapshot.relations = merged[:max_relations]
        snapshot.truncated_relations = len(merged) > max_relations

    # ------------------------------------------------------------ topics

    def topic_rows(self) -> tuple[list[Topic], list[Binding]]:
        topics = self.conn.execute(f"SELECT {TOPIC_COLS} FROM topics ORDER BY seq")
        bindings = self.conn.execute(
            f"SELECT {BINDING_COLS} FROM topic_bindings b JOIN nodes e ON e.id = b.event_id "
            "JOIN topics t ON t.path = b.path ORDER BY e.seq, t.seq"
        )
        return [row_topic(r) for r in topics], [row_binding(r) for r in bindings]

    def topic_changes(self, since: TopicMark | None) -> TopicChanges | None:
        return topic_changes(self.conn, since)

    def event_dates(self) -> list[tuple[str, str]]:
        rows: list[tuple[str, str]] = self.conn.execute(
            "SELECT id, COALESCE(create_date, '') FROM nodes WHERE label = 'Event' ORDER BY seq"
        ).fetchall()
        return rows
