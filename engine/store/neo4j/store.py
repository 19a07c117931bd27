"""The Neo4j store: ``engine.store.base.Store`` over the official async driver (Neo4j 5.26).

Layout
    SPEC §1.2's labels, relationship types and properties, plus a ``space`` property on every
    node so one database holds many memory spaces: uniqueness is on ``(space, id)`` per label
    (composite uniqueness constraints exist in Community Edition) and every query is scoped
    by space. Vectors are LIST<FLOAT> properties, L2-normalised on write like the embedded
    store. Retrieval scores exactly with ``vector.similarity.cosine`` and converts its
    (1+cos)/2 back to raw cosine. The four vector indexes of SPEC §1.2 exist (created at the
    first save, rebuilt by re-vectorize); they are database-wide, so with spaces of different
    widths the last re-vectorize sets their width. A fifth one, on chunks, exists only for
    stores with ``space_indexes`` off (the chunk route of a large space reads its own).
    Events and chunks also carry a label of their space, and a space past
    ``index_min_events`` gets its own two vector indexes on those labels (created after the
    save, restore or open that finds it that large, rebuilt by re-vectorize, dropped with the
    space). The routes of a large space (``_routes.py``) over-fetch candidates from its own
    index (else the shared one), filter them and rescore them exactly, and fall back to the
    exact scan whenever that cannot fill the page (docs/DECISIONS.md, "Neo4j routes").

Transactions
    Each write is one managed transaction (``execute_write`` retries transient failures, so
    the transaction functions have no side effects outside the database). A write first
    MERGEs the space's ``MnemoSpace`` node and bumps its counter: that write lock serialises
    saves of one space across processes, which keeps id allocation (from the high-water marks
    on that node) safe. Schema statements run in their own auto-commit transactions (Neo4j
    refuses schema and data changes in one transaction).

All Cypher text is static (see ``_cypher.py``); labels and relationship types reach it only
through allow-lists.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

from neo4j import AsyncDriver, AsyncManagedTransaction
from neo4j.exceptions import ClientError

from mnemoql.engine.errors import InvalidInput, StoreUnavailable
from mnemoql.engine.models import (
    Binding,
    Chunk,
    Counts,
    Direction,
    Entity,
    EntityLabel,
    Event,
    Filters,
    GraphSnapshot,
    Hit,
    MemoryMeta,
    Neighbour,
    Node,
    NodeLabel,
    NodePage,
    Page,
    RelType,
    RouteName,
    RoutePool,
    SavePlan,
    SaveResult,
    SortSpec,
    Topic,
    TopicDraft,
    Vector,
    VectorSet,
    Where,
)
from mnemoql.engine.redact import mask_url
from mnemoql.engine.store import rules
from mnemoql.engine.store.neo4j import _changes as changes
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_read as qread
from mnemoql.engine.store.neo4j import _cypher_route as qroute
from mnemoql.engine.store.neo4j import _cypher_write as qwrite
from mnemoql.engine.store.neo4j import _dump as dump
from mnemoql.engine.store.neo4j import _lexical as lexical
from mnemoql.engine.store.neo4j import _records as rec
from mnemoql.engine.store.neo4j import _routes as routes
from mnemoql.engine.store.neo4j import _write as write
from mnemoql.engine.store.neo4j._runner import UNREACHABLE, Runner, T, TxFn
from mnemoql.engine.store.neo4j._schema import Schema
from mnemoql.engine.store.neo4j._sessions import DROP_ALL as DROP_STATE
from mnemoql.engine.store.neo4j._sessions import Neo4jState
from mnemoql.engine.store.window import window_route_by_parts
from mnemoql.engine.text import normalise_name
from mnemoql.engine.topics.changes import TopicChanges, TopicMark

__all__ = ["Neo4jStore"]

log = logging.getLogger(__name__)

SPACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_MIN_EPS = 1e-6  # Neo4j scores in float32 through (1+cos)/2: keep boundary cosines in


# ---------------------------------------------------------------- the store


class Neo4jStore:
    """Neo4j implementation of ``engine.store.base.Store`` for one memory space.

    Args:
        uri: Bolt URI, e.g. ``bolt://127.0.0.1:7687`` or ``neo4j+s://xxx.databases.neo4j.io``.
        user: user name (``neo4j`` for a managed server).
        password: the password (never logged).
        database: database name; None uses the server's default database.
        space: the memory space all reads and writes are scoped to.
        connection_timeout: seconds to wait for a connection before StoreUnavailable.
        index_min_events: spaces this large (by insertion count) search through the vector
            indexes (plus exact rescoring); None scans exactly at every size.
        index_overfetch: how many candidates per wanted event a route asks its index for.
        space_indexes: give spaces past ``index_min_events`` their own vector indexes (the
            database-wide ones are shared by every space; docs/DECISIONS.md).
    """

    def __init__(
        self,
        uri: str,
        user: str,
        password: str,
        database: str | None = None,
        space: str = "default",
        *,
        connection_timeout: float = 5.0,
        index_min_events: int | None = routes.INDEX_MIN_EVENTS,
        index_overfetch: int = routes.INDEX_OVERFETCH,
        space_indexes: bool = True,
    ) -> None:
        if not SPACE_NAME.match(space):
            raise InvalidInput(
                f"space {space!r} is not allowed: use 1-64 letters, digits, '_' or '-'",
                zh=f"空间名不合法：{space}",
            )
        self.uri = uri
        self.user = user
        self.database = database
        self.space = space
        self.runner = Runner(uri, user, password, database, space, connection_timeout)
        self._writes: int | None = None  # committed writes of the space as this store counts
        self._sessions: Neo4jState | None = None
        self.index_min_events = index_min_events
        self.index_overfetch = index_overfetch
        self.space_indexes = space_indexes
        # the shared index's fetch grows with its crowding; off only to measure the old route
        self.share_fetch = True
        self.space_names = q.space_schema(space)
        self.index = routes.IndexState(self.runner, self.space_names, self)
        self.schema = Schema(self.runner, self, changed=self.index.invalidate)
        # entity lookups by name go through the name index once it is ONLINE and the space's
        # entities all carry their keys (``_cypher.NAME_INDEX``); the scan answers before
        self._names_keyed = False
        self._names_seen = -routes.INDEX_STATE_TTL  # monotonic time of the index state read
        self._names_online = False

    def __repr__(self) -> str:
        return f"Neo4jStore({self.uri!r}, database={self.database!r}, space={self.space!r})"

    # ------------------------------------------------------------ plumbing

    @property
    def driver(self) -> AsyncDriver:
        return self.runner.driver

    async def _run(
        self, query: str, params: dict[str, Any] | None = None, *, writable: bool = False
    ) -> list[dict[str, Any]]:
        """One statement in its own managed transaction (``Runner.run``)."""
        return await self.runner.run(query, params, writable=writable)

    async def _write(self, fn: TxFn[T]) -> T:
        """``fn`` as one write transaction; any exception rolls everything back."""
        return await self.runner.write(fn)

    async def _read(self, fn: TxFn[T]) -> T:
        return await self.runner.read(fn)

    # ------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """Connect, refuse a server without vector support, then create the constraints and
        indexes of SPEC §1.2 that are missing."""
        if self.runner.connected:
            return
        try:
            await self.runner.connect()
            await self.runner.check_version()
            await self.schema.ensure()
            await self._key_names()
            await self.changed_elsewhere()  # the baseline of the writes counter
        except (*UNREACHABLE, OSError) as exc:
            await self.close()
            raise self.runner.unavailable(exc) from exc
        except ClientError as exc:
            await self.close()
            if exc.code == "Neo.ClientError.Database.DatabaseNotFound":
                raise StoreUnavailable(
                    f"Neo4j at {mask_url(self.uri)} has no database {self.database!r}; create it "
                    "or leave the database unset to use the server's default",
                    zh="Neo4j 数据库不存在",
                ) from exc
            raise
        except BaseException:
            await self.close()
            raise

    async def _key_names(self) -> None:
        """Give the space's entities written before the name keys theirs (in batches), then
        mark the space named; a space without its node yet is new (named when created)."""
        rows = await self._run(q.SPACE_NAMED)
        if rows and not rows[0]["named"]:
            while True:
                done = await self._run(q.KEY_NAMES, {"batch": 10_000, **self._name_params()},
                                       writable=True)  # fmt: skip
                if not done or int(done[0]["n"]) < 10_000:
                    break
            await self._run(q.MARK_NAMED, writable=True)
            log.info("keyed the entity names of space %r", self.space)
        self._names_keyed = True

    def _name_params(self) -> dict[str, str]:
        return {"name_prefix": q.name_prefix(self.space)}

    async def _names_usable(self) -> bool:
        """Whether entity lookups by name can read the name index: the space's entities are
        keyed and the index is ONLINE (read again at most every INDEX_STATE_TTL seconds until
        it is; a populating index answers nothing, so the scan answers meanwhile)."""
        if not self._names_keyed:
            return False
        aged = time.monotonic() - self._names_seen >= routes.INDEX_STATE_TTL
        if not self._names_online and aged:
            rows = await self._run(q.NAME_INDEX_STATE, {"name": q.NAME_INDEX})
            self._names_online = bool(rows) and rows[0]["state"] == "ONLINE"
            self._names_seen = time.monotonic()
        return self._names_online

    def session_state(self, budget: int) -> Neo4jState:
        """The space's evidence sessions and cursors as nodes every replica shares
        (``_sessions``), with the bookmarks that make a follow-up read its session's writes."""
        if self._sessions is None:
            self._sessions = Neo4jState(self.runner, budget)
        return self._sessions

    async def close(self) -> None:
        await self.index.close()
        await self.runner.close()

    async def ping(self, timeout: float = 2.0) -> bool:
        return await self.runner.ping(timeout)

    async def drop_space(self) -> int:
        """Delete every node of this space (tests, admin); returns how many were deleted."""
        deleted = await self.schema.drop_space()
        rows = await self.runner.run(DROP_STATE, writable=True)  # its sessions and cursors
        return deleted + int(rows[0]["n"])

    # ------------------------------------------------------------ meta

    async def get_meta(self) -> MemoryMeta | None:
        rows = await self._run(qread.GET_META)
        return rec.meta(rows[0]["m"]) if rows else None

    async def counts(self) -> Counts:
        rows = await self._run(qread.COUNTS)
        r = rows[0]
        return Counts(
            events=r["events"],
            persons=r["persons"],
            concepts=r["concepts"],
            locations=r["locations"],
            chunks=r["chunks"],
            relations=r["relations"],
        )

    # ------------------------------------------------------------ writes

    async def apply_save(self, plan: SavePlan) -> SaveResult:
        rules.check_plan(plan)

        size = 0
        names_indexed = await self._names_usable()

        async def work(tx: AsyncManagedTransaction) -> SaveResult:
            nonlocal size
            save = write.SaveTx(tx, self.space, plan, names_indexed=names_indexed)
            result = await save.run()
            size = save.space_size
            return result

        result = await self._write(work)
        self._wrote()
        if not self.schema.vector_indexes and not result.replayed:
            await self.schema.create_vector_indexes(plan.meta.dimensions)
        if (
            not self.schema.space_indexed
            and self.index_min_events is not None
            and size >= self.index_min_events
        ):
            await self.schema.ensure_space_indexes(plan.meta.dimensions)
        return result

    async def replay(self, idempotency_key: str) -> SaveResult | None:
        rows = await self._run(qread.GET_RECORD, {"key": idempotency_key})
        return rules.json_result(rows[0]["result"]) if rows else None

    async def events_with_hash(self, content_hash: str) -> list[str]:
        rows = await self._run(qread.EVENTS_WITH_HASH, {"hash": content_hash})
        return [r["id"] for r in rows]

    async def replace_vectors(self, vectors: VectorSet) -> None:
        async def work(tx: AsyncManagedTransaction) -> None:
            await write.replace_vectors(tx, self.space, vectors)

        await self._write(work)
        self._wrote()
        # The routes fall back to exact scans without the indexes: a failure only costs speed.
        await self.schema.rebuild_vector_indexes(vectors.meta.dimensions)

    async def all_for_revectorize(self) -> tuple[list[Event], list[Entity]]:
        async def work(tx: AsyncManagedTransaction) -> tuple[list[Event], list[Entity]]:
            events = [rec.event(r["e"]) for r in await write.run(tx, self.space, qwrite.ALL_EVENTS)]
            entities = [
                rec.entity(r["n"]) for r in await write.run(tx, self.space, qwrite.ALL_ENTITIES)
            ]
            return events, entities

        return await self._read(work)

    # ------------------------------------------------------------ entity resolution

    async def find_entities(
        self, label: EntityLabel, normalised_names: Iterable[str]
    ) -> list[Entity]:
        lbl = q.entity_label(label)
        keys = sorted({normalise_name(n) for n in normalised_names} - {""})
        if not keys:
            return []
        if await self._names_usable():
            rows = await self._by_key(qread.FIND_ENTITIES_BY_KEY[lbl], keys)
            if rows is not None:
                return [rec.entity(n) for n in write.oldest_first(rows)]
        rows = await self._run(qread.FIND_ENTITIES[lbl], {"keys": keys})
        return [rec.entity(r["n"]) for r in rows]

    async def resolve_terms(self, normalised_term: str) -> frozenset[str]:
        term = normalise_name(normalised_term)
        if term and await self._names_usable():
            rows = await self._by_key(qread.RESOLVE_TERM_BY_KEY, [term])
            if rows is not None:
                return frozenset(r["id"] for r in rows)
        rows = await self._run(qread.RESOLVE_TERM, {"term": term})
        return frozenset(r["id"] for r in rows)

    async def _by_key(self, query: str, keys: list[str]) -> list[dict[str, Any]] | None:
        """A lookup through the name index, in batches of keys; None (the scan answers) when
        the index fails (dropped, or not ONLINE after all)."""
        out: list[dict[str, Any]] = []
        try:
            for i in range(0, len(keys), q.NAME_LOOKUP_BATCH):
                batch = keys[i : i + q.NAME_LOOKUP_BATCH]
                out += await self._run(query, {"keys": batch, **self._name_params()})
        except ClientError as exc:
            log.info("the name index is unavailable, scanning: %s", exc.code)
            self._names_online = False
            self._names_seen = time.monotonic()
            return None
        return out

    async def similar_entities(
        self, label: EntityLabel, vector: Vector, k: int, min_cosine: float
    ) -> list[tuple[Entity, float]]:
        return await self._entity_top(label, vector, k, min_cosine)

    async def entity_vector_top(
        self, label: EntityLabel, query: Vector, k: int
    ) -> list[tuple[Entity, float]]:
        return await self._entity_top(label, query, k, None)

    async def _entity_top(
        self, label: EntityLabel, vector: Vector, k: int, min_cosine: float | None
    ) -> list[tuple[Entity, float]]:
        lbl = q.entity_label(label)
        if k <= 0:
            return []
        values, zero = rec.query_param(vector)
        rows = await self._run(
            qread.ENTITY_TOP[lbl],
            {
                "q": values, "qzero": zero, "d": len(values), "k": int(k),
                "min": None if min_cosine is None else float(min_cosine) - _MIN_EPS,
            },
        )  # fmt: skip
        return [(rec.entity(r["n"]), rec.raw_cosine(r["s"])) for r in rows]

    # ------------------------------------------------------------ retrieval routes

    async def route(
        self,
        route: RouteName,
        query: Vector,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
    ) -> list[Hit]:
        if route not in ("summary", "chunk"):
            raise InvalidInput(
                f"unknown route {route!r}; use summary or chunk",
                zh=f"未知检索路线 {route!r}，可用 summary 或 chunk",
            )
        rows = await routes.rows(self.index, route, query, filters, exclude, limit, restrict, False)
        return [routes.hit(route, r) for r in rows]

    async def lexical_route(
        self,
        text: str,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
    ) -> list[Hit]:
        rows = await lexical.rows(self.runner, text, filters, exclude, limit, restrict, False)
        return [lexical.hit(r) for r in rows]

    async def route_pool(
        self,
        query: Vector,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
        text: str | None = None,
    ) -> RoutePool:
        """The routes side by side, each query returning its events with their vectors and
        chunk hashes: one round trip of two (three with ``text``) concurrent queries."""
        summary, chunk, lex = await asyncio.gather(
            routes.rows(self.index, "summary", query, filters, exclude, limit, restrict, True),
            routes.rows(self.index, "chunk", query, filters, exclude, limit, restrict, True),
            _none()
            if text is None
            else lexical.rows(self.runner, text, filters, exclude, limit, restrict, True),
        )
        return routes.pool(summary, chunk, lex)

    async def _index_usable(self, index: str, dims: int) -> bool:
        return await routes.index_usable(self.index, index, dims)

    async def window_route(
        self,
        query: Vector,
        seeds: Sequence[str],
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
        *,
        span: int = 1,
        alpha: float = 0.5,
    ) -> list[Hit]:
        return await window_route_by_parts(
            self, query, seeds, filters, exclude, limit, restrict, span=span, alpha=alpha
        )

    async def recent_events(
        self,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
    ) -> list[str]:
        if limit <= 0 or (restrict is not None and not restrict):
            return []
        params = {**rec.filter_params(filters, exclude, restrict), "limit": int(limit)}
        rows = await self._run(qroute.ROUTES[("recent", restrict is not None)], params)
        return [r["id"] for r in rows]

    async def get_events(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Event]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        rows = await self._run(
            qread.GET_EVENTS_VEC if with_vectors else qread.GET_EVENTS, {"ids": wanted}
        )
        found = {r["e"]["id"]: rec.event(r["e"], with_vectors) for r in rows}
        return [found[i] for i in ids if i in found]

    async def get_chunks(
        self, event_ids: Sequence[str], *, with_vectors: bool = False
    ) -> dict[str, list[Chunk]]:
        out: dict[str, list[Chunk]] = {i: [] for i in event_ids}
        if not out:
            return out
        rows = await self._run(
            qread.GET_CHUNKS_VEC if with_vectors else qread.GET_CHUNKS, {"ids": list(out)}
        )
        for r in rows:
            c = rec.chunk(r["c"], with_vectors)
            out[c.event_id].append(c)
        return out

    async def id_counts(self, ids: Sequence[str]) -> dict[str, int]:
        out = dict.fromkeys(ids, 0)
        if out:
            rows = await self._run(qread.ID_COUNTS, {"ids": list(out)})
            out.update({r["id"]: int(r["n"]) for r in rows})
        return out

    async def events_mentioning(self, concept_id: str) -> frozenset[str]:
        rows = await self._run(qread.EVENTS_MENTIONING, {"id": concept_id})
        return frozenset(r["id"] for r in rows)

    async def positional_events(self, prefix: str, chapter: str) -> list[str]:
        head = f"{prefix}_ch{chapter}_e"
        rows = await self._run(qread.POSITIONAL, {"head": head})
        tail = re.compile(r"[0-9]+")
        found = [r["id"] for r in rows if tail.fullmatch(r["id"][len(head) :])]
        return sorted(found, key=lambda i: (int(i[len(head) :]), i))

    # ------------------------------------------------------------ graph reads

    async def get_nodes(self, ids: Sequence[str]) -> list[Node | None]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        rows = await self._run(qread.GET_NODES, {"ids": wanted})
        found = {r["n"]["id"]: rec.node(r["n"]) for r in rows}
        return [found.get(i) for i in ids]

    async def list_nodes(
        self, label: NodeLabel, where: Where | None, sort: SortSpec, page: Page
    ) -> NodePage:
        lbl = q.label(label)
        key, direction = rec.sort_key(lbl, sort)
        compiler = rec.WhereCompiler(lbl)
        cond = compiler.compile(where)
        rec.check_page(page)
        params: dict[str, Any] = {**compiler.params, "limit": page.size + 1}
        if page.position is not None:
            params["after_key"], params["after_id"] = page.position
        # a backward page walks the sort the other way from its position, then is reversed
        order = ("DESC" if direction == "ASC" else "ASC") if page.backward else direction

        async def work(tx: AsyncManagedTransaction) -> tuple[int, list[dict[str, Any]]]:
            paged = qread.list_page(lbl, cond, key, order, page.position is not None)
            total = await write.run(tx, self.space, qread.list_count(lbl, cond), **compiler.params)
            rows = await write.run(tx, self.space, paged, **params)
            return int(total[0]["total"]), rows

        total, rows = await self._read(work)
        rows, more = rows[: page.size], len(rows) > page.size
        if page.backward:
            rows.reverse()
        return NodePage(
            nodes=[rec.node(r["n"]) for r in rows],
            has_next=more and not page.backward,
            positions=[(r["k"], r["n"]["id"]) for r in rows],
            total=total,
            has_previous=more and page.backward,
        )

    async def neighbours(
        self,
        node_ids: Sequence[str],
        rel_type: RelType | None,
        direction: Direction,
        limit_per_node: int,
        after: str | None = None,
        before: str | None = None,
        *,
        backward: bool = False,
    ) -> dict[str, list[Neighbour]]:
        kind = None if rel_type is None else q.rel_type(rel_type)
        backward = backward or before is not None
        if after is not None and before is not None:
            raise InvalidInput(
                "neighbours pages forward (after) or backward (before), not both",
                zh="neighbours 只能向前（after）或向后（before）翻页，不能同时两者",
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
        unique = list(dict.fromkeys(node_ids))
        out: dict[str, list[Neighbour]] = {i: [] for i in unique}
        if not unique or limit_per_node == 0:
            return out
        rows = await self._run(
            qread.NEIGHBOURS_BACKWARD if backward else qread.NEIGHBOURS,
            {
                "ids": unique, "type": kind, "after": after, "before": before,
                "limit": int(limit_per_node), "out": direction != "in", "in": direction != "out",
            },
        )  # fmt: skip
        for r in rows:
            node_id = r["id"]
            for e in r["rows"]:
                rel = rec.relation(e["type"], e["source"], e["target"], e["props"] or {})
                out[node_id].append(Neighbour(node_id, rel, e["other"], e["dir"]))
            if backward:
                out[node_id].reverse()  # walked backward from `before` (or the end)
        return out

    async def graph(
        self, max_nodes: int, max_relations: int, *, topics: bool = False
    ) -> GraphSnapshot:
        if max_nodes < 0 or max_relations < 0:
            raise InvalidInput("graph caps must not be negative", zh="图的上限不能为负数")

        async def work(tx: AsyncManagedTransaction) -> GraphSnapshot:
            rows = await write.run(tx, self.space, qread.GRAPH_NODES, cap=max_nodes + 1)
            truncated_nodes = len(rows) > max_nodes
            nodes = [rec.node(r["n"]) for r in rows[:max_nodes]]
            rels = await write.run(
                tx,
                self.space,
                qread.GRAPH_RELATIONS,
                ids=[n.id for n in nodes],
                cap=max_relations + 1,
            )
            snapshot = GraphSnapshot(
                nodes=nodes,
                relations=[
                    rec.relation(r["type"], r["source"], r["target"], r["props"] or {})
                    for r in rels
                ],
                truncated_nodes=truncated_nodes,
                truncated_relations=len(rels) > max_relations,
            )
            if topics and not truncated_nodes:
                await self._add_topics(tx, snapshot, max_nodes - len(nodes), max_relations)
            snapshot.relations = snapshot.relations[:max_relations]
            return snapshot

        return await self._read(work)

    async def _add_topics(
        self, tx: AsyncManagedTransaction, snapshot: GraphSnapshot, room: int, max_relations: int
    ) -> None:
        """Topic nodes by id into the ``room`` left, with their SUBTOPIC and BINDS links."""
        found = await write.run(tx, self.space, qread.GRAPH_TOPICS, cap=room + 1)
        kept = [rec.topic(r["t"]) for r in found[:room]]
        snapshot.topics = kept
        snapshot.truncated_nodes = len(found) > room
        binds = await write.run(
            tx, self.space, qread.GRAPH_BINDS, ids=[t.id for t in kept], cap=max_relations + 1
        )
        paths = {t.path for t in kept}
        links = [
            link for t in kept if t.parent in paths and (link := t.subtopic_relation()) is not None
        ]
        merged = sorted(
            [*snapshot.relations, *(rec.binding(r["b"]).relation() for r in binds), *links],
            key=lambda r: (r.type, r.source, r.target),
        )
        snapshot.relations = merged
        snapshot.truncated_relations = len(merged) > max_relations

    # ------------------------------------------------------------ topics

    async def topic_rows(self) -> tuple[list[Topic], list[Binding]]:
        async def work(tx: AsyncManagedTransaction) -> tuple[list[Topic], list[Binding]]:
            topics = await write.run(tx, self.space, qread.TOPIC_ROWS)
            bindings = await write.run(tx, self.space, qread.BINDING_ROWS)
            return [rec.topic(r["t"]) for r in topics], [rec.binding(r["b"]) for r in bindings]

        return await self._read(work)

    async def event_dates(self) -> list[tuple[str, str]]:
        rows = await self._run(qread.EVENT_DATES)
        return [(r["id"], r["day"]) for r in rows]

    async def topic_changes(self, since: TopicMark | None) -> TopicChanges | None:
        """What another process changed in the topic and date data since ``since`` (None:
        reload in full; ``_changes``)."""
        return await self._read(lambda tx: changes.topic_changes(tx, self.space, since))

    def last_write_marks(self) -> tuple[TopicMark, TopicMark] | None:
        """None: this process's own writes are read again by the next catch-up (a few rows;
        Neo4j has no snapshot to read the marks around a write in)."""
        return None

    async def bind_topic(self, draft: TopicDraft, event_ids: Sequence[str], timestamp: int) -> None:
        draft.check()

        async def work(tx: AsyncManagedTransaction) -> None:
            await write.bind_topic(tx, self.space, draft, event_ids, timestamp)

        await self._write(work)
        self._wrote()

    # ------------------------------------------------------------ deletion

    async def forget(self, event_id: str) -> list[str]:
        async def work(tx: AsyncManagedTransaction) -> list[str]:
            return await write.forget(tx, self.space, event_id)

        deleted = await self._write(work)
        self._wrote()
        return deleted

    # ------------------------------------------------------------ whole-memory dump

    async def export_records(self, *, vectors: bool = False) -> AsyncIterator[dict[str, Any]]:
        async for record in dump.export_records(self.runner, vectors):
            yield record

    async def import_records(self, records: Iterable[dict[str, Any]]) -> dict[str, int]:
        """Batches of one transaction each into an empty space, undone on failure (see
        ``_dump.py``)."""
        counts = await dump.Importer(self.runner, self.schema).run(records)
        self._wrote()
        await self.schema.ensure_space_indexes()
        return counts

    # ------------------------------------------------------------ other writers

    def _wrote(self) -> None:
        """One more committed write of this process (each bumps the space's ``writes``)."""
        if self._writes is not None:
            self._writes += 1

    async def changed_elsewhere(self) -> bool:
        """True when another process committed a write to this space since the last call
        (the space's ``writes`` counter ran ahead of this store's own count)."""
        rows = await self._run(qwrite.GET_WRITES)
        current = int(rows[0]["n"] or 0) if rows else 0
        changed = self._writes is not None and current != self._writes
        self._writes = current
        return changed


async def _none() -> list[dict[str, Any]]:
    return []
