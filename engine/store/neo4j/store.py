"""The Neo4j store: ``engine.store.base.Store`` over the official async driver (Neo4j 5.26).

Layout
    SPEC §1.2's labels, relationship types and properties, plus a ``space`` property on every
    node so one database holds many memory spaces: uniqueness is on ``(space, id)`` per label
    (composite uniqueness constraints exist in Community Edition) and every query is scoped
    by space. Vectors are LIST<FLOAT> properties, L2-normalised on write like the embedded
    store. The four vector indexes of SPEC §1.2 are database-wide (one per label/property);
    retrieval never uses them -- it scores exactly with ``vector.similarity.cosine`` and
    converts its (1+cos)/2 back to raw cosine.

Transactions
    Each write is one managed transaction (``execute_write`` retries transient failures, so
    the transaction functions have no side effects outside the database). A write first
    MERGEs the space's ``MnemoSpace`` node and bumps its counter: that write lock serialises
    saves of one space across processes, which keeps ``1 + max N`` id allocation safe. Schema
    statements run in their own auto-commit transactions (Neo4j refuses schema and data
    changes in one transaction).

All Cypher text is static (see ``_cypher.py``); labels and relationship types reach it only
through allow-lists.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import numpy as np

from engine.errors import (
    Conflict,
    InvalidId,
    InvalidInput,
    NotFound,
    StoreUnavailable,
)
from engine.models import (
    CALLER_ID,
    ENTITY_LABELS,
    ID_PREFIX,
    NODE_LABELS,
    QUERYABLE_FIELDS,
    AllOf,
    AnyOf,
    Chunk,
    Cond,
    Counts,
    Direction,
    Entity,
    EntityDraft,
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
    Not,
    Page,
    Relation,
    RelType,
    RouteName,
    SavePlan,
    SaveResult,
    SortSpec,
    Vector,
    VectorSet,
    Where,
    label_of,
)
from engine.store.neo4j import _cypher as q
from engine.text import normalise_name

try:  # the driver is a dependency, but keep the import error readable
    from neo4j import AsyncDriver, AsyncGraphDatabase, AsyncManagedTransaction, RoutingControl
    from neo4j.exceptions import (
        AuthError,
        ClientError,
        ServiceUnavailable,
        SessionExpired,
    )
except ImportError as exc:  # pragma: no cover
    raise ImportError("the Neo4j store needs the `neo4j` driver: pip install neo4j") from exc

__all__ = ["Neo4jStore"]

log = logging.getLogger(__name__)

T = TypeVar("T")
TxFn = Callable[[AsyncManagedTransaction], Awaitable[T]]

SPACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_ALLOCATED = re.compile(r"^(" + "|".join(ID_PREFIX.values()) + r")_([0-9]+)$")
_BATCH = 500  # UNWIND rows per statement (vectors make rows large)
_NULLABLE = frozenset({"time", "description"})
_COMPARE = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_MAX_DEPTH = 32
_MIN_EPS = 1e-6  # Neo4j scores in float32 via (1+cos)/2; keep boundary cosines in
_LABEL_RANK = {lbl: i for i, lbl in enumerate(NODE_LABELS)}
_SCHEMA_RACE = (
    "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
    "Neo.ClientError.Schema.ConstraintAlreadyExists",
    "Neo.ClientError.Schema.IndexAlreadyExists",
)


# ---------------------------------------------------------------- value conversions


def _vec_param(vector: Any) -> tuple[list[float] | None, bool | None]:
    """(unit-length list, zero flag) as stored; (None, None) for no vector.

    Like the embedded store: float32, scaled to unit length; a vector without direction
    (zero, or not finite) is kept as is and flagged, since Neo4j's cosine rejects it.
    """
    if vector is None:
        return None, None
    v = np.array(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(v))
    if norm > 0.0 and math.isfinite(norm):
        v /= norm
        return v.astype(np.float64).tolist(), None
    return v.astype(np.float64).tolist(), True


def _vec(value: Any) -> Vector | None:
    return None if value is None else np.asarray(value, dtype=np.float32)


def _query_param(vector: Vector) -> tuple[list[float], bool]:
    values, zero = _vec_param(vector)
    assert values is not None
    return values, bool(zero)


def _score(s: Any) -> float:
    return min(1.0, max(-1.0, float(s)))


def _event(m: dict[str, Any], with_vectors: bool = False) -> Event:
    return Event(
        id=m["id"],
        summary=m.get("summary") or "",
        content=m.get("content") or "",
        time=m.get("time"),
        create_time=m.get("create_time") or "",
        create_date=m.get("create_date") or "",
        content_hash=m.get("content_hash") or "",
        embedding=_vec(m.get("embedding")) if with_vectors else None,
        has_chunks=bool(m.get("has_chunks")),
    )


def _entity(m: dict[str, Any], with_vectors: bool = False) -> Entity:
    return Entity(
        label=q.entity_label(m["label"]),
        id=m["id"],
        name=m.get("name") or "",
        aliases=list(m.get("aliases") or []),
        description=m.get("description"),
        create_time=m.get("create_time") or "",
        embedding=_vec(m.get("embedding")) if with_vectors else None,
    )


def _node(m: dict[str, Any]) -> Node:
    return _event(m) if m["label"] == "Event" else _entity(m)


def _chunk(m: dict[str, Any], with_vectors: bool) -> Chunk:
    return Chunk(
        event_id=m["event_id"],
        chunk_index=int(m["chunk_index"]),
        start=int(m["start"]),
        end=int(m["end"]),
        text=m.get("text") or "",
        text_hash=m.get("text_hash") or "",
        embedding=_vec(m.get("embedding")) if with_vectors else None,
    )


def _meta(m: dict[str, Any] | None) -> MemoryMeta | None:
    if m is None:
        return None
    return MemoryMeta(
        model=m["model"],
        dimensions=int(m["dimensions"]),
        updated_at=m["updated_at"],
        schema_version=int(m.get("schema_version") or 1),
    )


def _relation(kind: str, source: str, target: str, props: dict[str, Any]) -> Relation:
    return Relation(q.rel_type(kind), source, target, tuple(sorted(props.items())))


def _result_json(result: SaveResult) -> str:
    return json.dumps(
        {
            "event_ids": result.event_ids,
            "created": result.created,
            "merged": [[i, a] for i, a in result.merged],
            "refs": result.refs,
        },
        ensure_ascii=False,
    )


def _json_result(text: str) -> SaveResult:
    d = json.loads(text)
    return SaveResult(
        event_ids=list(d["event_ids"]),
        created={k: list(v) for k, v in d["created"].items()},
        merged=[(i, list(a)) for i, a in d["merged"]],
        refs=dict(d["refs"]),
        replayed=True,
    )


def _num(node_id: str) -> int | None:
    m = _ALLOCATED.match(node_id)
    return int(m.group(2)) if m else None


def _batches(rows: list[dict[str, Any]], size: int = _BATCH) -> Iterator[list[dict[str, Any]]]:
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


def _clean_aliases(name: str, aliases: Iterable[str], taken: set[str]) -> list[str]:
    """Aliases whose normalised form is new (not the name, not taken, not repeated)."""
    keep = []
    taken.add(normalise_name(name))
    for alias in aliases:
        key = normalise_name(alias)
        if key and key not in taken:
            taken.add(key)
            keep.append(alias)
    return keep


def _norm_names(names: Iterable[str]) -> list[str]:
    return sorted({k for k in (normalise_name(n) for n in names) if k})


# ---------------------------------------------------------------- where / sort compilation


def _field(label: NodeLabel, field: object) -> str:
    if not isinstance(field, str) or field not in QUERYABLE_FIELDS.get(label, ()):
        allowed = ", ".join(QUERYABLE_FIELDS.get(label, ()))
        raise InvalidInput(
            f"unknown field {field!r} for {label}; use one of: {allowed}",
            zh=f"未知字段：{field!r}",
            field=str(field),
        )
    return field


def _text(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"field {field!r} compares with strings, got {type(value).__name__}")
    return value


class _WhereCompiler:
    """Compiles a ``where`` tree to Cypher over ``n``: allow-listed property names and fixed
    operators in the text, every value a ``$w<N>`` parameter."""

    def __init__(self, label: NodeLabel) -> None:
        self.label = label
        self.params: dict[str, Any] = {}

    def _param(self, value: Any) -> str:
        name = f"w{len(self.params)}"
        self.params[name] = value
        return f"${name}"

    def compile(self, where: Where | None, depth: int = 0) -> str:
        if where is None:
            return "true"
        if depth > _MAX_DEPTH:
            raise InvalidInput(f"where is nested deeper than {_MAX_DEPTH} levels")
        if isinstance(where, Cond):
            return self._cond(where)
        if isinstance(where, AllOf | AnyOf):
            if not where.items:
                return "true" if isinstance(where, AllOf) else "false"
            joiner = " AND " if isinstance(where, AllOf) else " OR "
            return joiner.join(f"({self.compile(item, depth + 1)})" for item in where.items)
        if isinstance(where, Not):
            return f"NOT ({self.compile(where.item, depth + 1)})"
        raise InvalidInput(f"unsupported where node: {type(where).__name__}")

    def _cond(self, cond: Cond) -> str:
        prop = f"n.{_field(self.label, cond.field)}"
        op, value = cond.op, cond.value
        if op == "eq":
            if value is None:
                return f"{prop} IS NULL"
            return f"{prop} = {self._param(_text(value, cond.field))}"
        if op == "in":
            if not isinstance(value, list | tuple | set | frozenset):
                raise InvalidInput(f"'in' on {cond.field!r} needs a list of strings")
            items = sorted(_text(v, cond.field) for v in value)
            return f"{prop} IN {self._param(items)}"
        if op == "contains":
            return f"{prop} CONTAINS {self._param(_text(value, cond.field))}"
        if op == "starts_with":
            return f"{prop} STARTS WITH {self._param(_text(value, cond.field))}"
        if op in _COMPARE:
            return f"{prop} {_COMPARE[op]} {self._param(_text(value, cond.field))}"
        raise InvalidInput(
            f"unknown operator {op!r}; use one of: eq, in, contains, starts_with, gt, gte, lt, lte"
        )


def _sort_key(label: NodeLabel, sort: SortSpec) -> tuple[str, str]:
    """(Cypher expression, direction); nullable fields sort as ''."""
    if not isinstance(sort, tuple) or len(sort) != 2:
        raise InvalidInput("sort must be (field, 'ASC'|'DESC')")
    field, direction = sort
    name = _field(label, field)
    if direction not in ("ASC", "DESC"):
        raise InvalidInput(f"sort direction must be ASC or DESC, got {direction!r}")
    return (f"coalesce(n.{name}, '')" if name in _NULLABLE else f"n.{name}"), direction


def _check_page(page: Page) -> None:
    if not isinstance(page.first, int) or page.first < 0:
        raise InvalidInput(f"first must be a non-negative integer (got {page.first!r})")
    after = page.after
    if after is not None and not (
        isinstance(after, tuple) and len(after) == 2 and all(isinstance(x, str) for x in after)
    ):
        raise InvalidInput("after must be a (sort value, id) pair of strings")


def _filter_params(
    filters: Filters, exclude: frozenset[str], restrict: frozenset[str] | None
) -> dict[str, Any]:
    return {
        "exclude": sorted(exclude),
        "from": filters.date_from,
        "to": filters.date_to,
        "groups": [sorted(g) for g in filters.groups],
        "restrict": sorted(restrict) if restrict is not None else None,
    }


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
    ) -> None:
        if not SPACE_NAME.match(space):
            raise InvalidInput(
                f"space {space!r} is not allowed: use 1-64 letters, digits, '_' or '-'",
                zh=f"空间名不合法：{space}",
            )
        self.uri = uri
        self.user = user
        self._password = password
        self.database = database
        self.space = space
        self._timeout = connection_timeout
        self._driver: AsyncDriver | None = None
        self._vector_indexes = False

    def __repr__(self) -> str:
        return f"Neo4jStore({self.uri!r}, database={self.database!r}, space={self.space!r})"

    # ------------------------------------------------------------ plumbing

    @property
    def driver(self) -> AsyncDriver:
        if self._driver is None:
            raise StoreUnavailable(
                "the Neo4j store is not open; call open() first", zh="存储未打开"
            )
        return self._driver

    def _unavailable(self, exc: Exception) -> StoreUnavailable:
        if isinstance(exc, AuthError):
            return StoreUnavailable(
                f"Neo4j at {self.uri} rejected the credentials of user {self.user!r}; "
                "check the configured user and password",
                zh="Neo4j 认证失败",
            )
        return StoreUnavailable(
            f"Neo4j at {self.uri} is unavailable ({type(exc).__name__}); check that it runs "
            "and is reachable",
            zh="Neo4j 不可用",
        )

    async def _run(
        self, query: str, params: dict[str, Any] | None = None, *, write: bool = False
    ) -> list[dict[str, Any]]:
        """One statement in its own managed transaction (retried on transient errors)."""
        try:
            result = await self.driver.execute_query(
                query,
                {"space": self.space, **(params or {})},
                routing_=RoutingControl.WRITE if write else RoutingControl.READ,
                database_=self.database,
            )
        except (ServiceUnavailable, SessionExpired, AuthError) as exc:
            raise self._unavailable(exc) from exc
        return [r.data() for r in result.records]

    async def _write(self, fn: TxFn[T]) -> T:
        """``fn`` as one write transaction; any exception rolls everything back."""
        try:
            async with self.driver.session(database=self.database) as session:
                return await session.execute_write(fn)
        except (ServiceUnavailable, SessionExpired, AuthError) as exc:
            raise self._unavailable(exc) from exc

    async def _read(self, fn: TxFn[T]) -> T:
        try:
            async with self.driver.session(database=self.database) as session:
                return await session.execute_read(fn)
        except (ServiceUnavailable, SessionExpired, AuthError) as exc:
            raise self._unavailable(exc) from exc

    async def _schema(self, statement: str, params: dict[str, Any] | None = None) -> None:
        """A schema statement in its own auto-commit transaction."""
        try:
            async with self.driver.session(database=self.database) as session:
                result = await session.run(statement, params or {})
                await result.consume()
        except ClientError as exc:
            if exc.code not in _SCHEMA_RACE:  # a concurrent open() created it first
                raise
        except (ServiceUnavailable, SessionExpired, AuthError) as exc:
            raise self._unavailable(exc) from exc

    async def _tx(
        self, tx: AsyncManagedTransaction, query: str, **params: Any
    ) -> list[dict[str, Any]]:
        result = await tx.run(query, {"space": self.space, **params})
        return [r.data() async for r in result]

    # ------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        """Connect, then create the constraints and indexes of SPEC §1.2 that are missing."""
        if self._driver is not None:
            return
        self._driver = AsyncGraphDatabase.driver(
            self.uri,
            auth=(self.user, self._password),
            connection_timeout=self._timeout,
            connection_acquisition_timeout=self._timeout * 6,
            max_transaction_retry_time=30.0,
            notifications_min_severity="WARNING",
        )
        try:
            await self._ensure_schema()
        except BaseException:
            await self.close()
            raise

    async def _ensure_schema(self) -> None:
        # Constraints own an index of the same name, so one SHOW INDEXES sees both.
        existing = {r["name"] for r in await self._run(q.SHOW_INDEXES)}
        for name, statement in {**q.CONSTRAINTS, **q.INDEXES}.items():
            if name not in existing:
                await self._schema(statement)
        self._vector_indexes = all(n in existing for n in q.VECTOR_INDEXES.values())
        if not self._vector_indexes:
            meta = await self.get_meta()
            if meta is not None:
                await self._create_vector_indexes(meta.dimensions)

    async def _create_vector_indexes(self, dims: int) -> None:
        for statement in q.CREATE_VECTOR_INDEX.values():
            await self._schema(statement, {"dims": dims})
        self._vector_indexes = True

    async def close(self) -> None:
        driver, self._driver = self._driver, None
        if driver is not None:
            await driver.close()

    async def ping(self, timeout: float = 2.0) -> bool:
        driver = self._driver
        if driver is None:
            return False
        try:
            await asyncio.wait_for(driver.verify_connectivity(), timeout)
        except Exception:
            return False
        return True

    async def drop_space(self) -> int:
        """Delete every node of this space (tests, admin); returns how many were deleted."""
        total = 0
        while True:
            rows = await self._run(q.DROP_SPACE, {"batch": 10_000}, write=True)
            deleted = int(rows[0]["deleted"]) if rows else 0
            total += deleted
            if deleted < 10_000:
                return total

    # ------------------------------------------------------------ meta

    async def get_meta(self) -> MemoryMeta | None:
        rows = await self._run(q.GET_META)
        return _meta(rows[0]["m"]) if rows else None

    async def counts(self) -> Counts:
        rows = await self._run(q.COUNTS)
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
        _check_plan(plan)

        async def work(tx: AsyncManagedTransaction) -> SaveResult:
            return await _SaveTx(self, tx, plan).run()

        result = await self._write(work)
        if not self._vector_indexes and not result.replayed:
            await self._create_vector_indexes(plan.meta.dimensions)
        return result

    async def replay(self, idempotency_key: str) -> SaveResult | None:
        rows = await self._run(q.GET_RECORD, {"key": idempotency_key})
        return _json_result(rows[0]["result"]) if rows else None

    async def events_with_hash(self, content_hash: str) -> list[str]:
        rows = await self._run(q.EVENTS_WITH_HASH, {"hash": content_hash})
        return [r["id"] for r in rows]

    async def replace_vectors(self, vectors: VectorSet) -> None:
        async def work(tx: AsyncManagedTransaction) -> None:
            await self._tx(tx, q.LOCK_SPACE, n=0)
            for statement in q.CLEAR_VECTORS.values():
                await self._tx(tx, statement)
            labels = await self._labels_of(tx, list(vectors.entities))
            by_label: dict[NodeLabel, list[dict[str, Any]]] = {lbl: [] for lbl in NODE_LABELS}
            for node_id, v in vectors.events.items():
                values, zero = _vec_param(v)
                by_label["Event"].append({"id": node_id, "embedding": values, "zero": zero})
            for node_id, v in vectors.entities.items():
                lbl = labels.get(node_id)
                if lbl is not None and lbl != "Event":
                    values, zero = _vec_param(v)
                    by_label[lbl].append({"id": node_id, "embedding": values, "zero": zero})
            for lbl, rows in by_label.items():
                for batch in _batches(rows):
                    await self._tx(tx, q.SET_VECTORS[lbl], rows=batch)
            await self._tx(tx, q.DELETE_CHUNKS)
            await self._create_chunks(tx, [(c.event_id, c) for c in vectors.chunks])
            m = vectors.meta
            await self._tx(
                tx, q.SET_META, model=m.model, dims=m.dimensions, at=m.updated_at,
                v=m.schema_version,
            )  # fmt: skip

        await self._write(work)
        # SPEC §1.12.5: rebuild the four vector indexes at the new width, outside the data
        # transaction. Retrieval scores exactly, so a failure here only loses the ANN indexes.
        try:
            for statement in q.DROP_VECTOR_INDEX.values():
                await self._schema(statement)
            await self._create_vector_indexes(vectors.meta.dimensions)
        except ClientError as exc:
            self._vector_indexes = False
            log.warning("rebuilding the Neo4j vector indexes failed: %s", exc.message)

    async def _create_chunks(
        self, tx: AsyncManagedTransaction, chunks: Sequence[tuple[str, Chunk]]
    ) -> None:
        rows = []
        for event_id, c in chunks:
            values, zero = _vec_param(c.embedding)
            rows.append({
                "event_id": event_id, "chunk_index": c.chunk_index, "start": c.start,
                "end": c.end, "text": c.text, "text_hash": c.text_hash,
                "embedding": values, "zero": zero,
            })  # fmt: skip
        for batch in _batches(rows):
            await self._tx(tx, q.CREATE_CHUNKS, rows=batch)

    async def _labels_of(
        self, tx: AsyncManagedTransaction, ids: Sequence[str]
    ) -> dict[str, NodeLabel]:
        if not ids:
            return {}
        rows = await self._tx(tx, q.LABELS_OF, ids=list(dict.fromkeys(ids)))
        return {r["id"]: q.label(r["label"]) for r in rows}

    async def all_for_revectorize(self) -> tuple[list[Event], list[Entity]]:
        async def work(tx: AsyncManagedTransaction) -> tuple[list[Event], list[Entity]]:
            events = [_event(r["e"]) for r in await self._tx(tx, q.ALL_EVENTS)]
            entities = [_entity(r["n"]) for r in await self._tx(tx, q.ALL_ENTITIES)]
            return events, entities

        return await self._read(work)

    # ------------------------------------------------------------ entity resolution

    async def find_entities(
        self, label: EntityLabel, normalised_names: Iterable[str]
    ) -> list[Entity]:
        lbl = q.entity_label(label)
        keys = sorted({normalise_name(n) for n in normalised_names})
        if not keys:
            return []
        rows = await self._run(q.FIND_ENTITIES[lbl], {"keys": keys})
        return [_entity(r["n"]) for r in rows]

    async def resolve_terms(self, normalised_term: str) -> frozenset[str]:
        rows = await self._run(q.RESOLVE_TERM, {"term": normalise_name(normalised_term)})
        return frozenset(r["id"] for r in rows)

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
        values, zero = _query_param(vector)
        rows = await self._run(
            q.ENTITY_TOP[lbl],
            {
                "q": values, "qzero": zero, "d": len(values), "k": int(k),
                "min": None if min_cosine is None else float(min_cosine) - _MIN_EPS,
            },
        )  # fmt: skip
        return [(_entity(r["n"]), _score(r["s"])) for r in rows]

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
            raise InvalidInput(f"unknown route {route!r}; use summary or chunk")
        if limit <= 0 or (restrict is not None and not restrict):
            return []
        values, zero = _query_param(query)
        params = {
            **_filter_params(filters, exclude, restrict),
            "q": values, "qzero": zero, "d": len(values), "limit": int(limit),
        }  # fmt: skip
        rows = await self._run(q.ROUTES[(route, restrict is not None)], params)
        if route == "summary":
            return [Hit(r["id"], _score(r["score"])) for r in rows]
        return [
            Hit(r["id"], _score(r["score"]), int(r["i"]), int(r["start"]), int(r["end"]))
            for r in rows
        ]

    async def recent_events(
        self,
        filters: Filters,
        exclude: frozenset[str],
        limit: int,
        restrict: frozenset[str] | None = None,
    ) -> list[str]:
        if limit <= 0 or (restrict is not None and not restrict):
            return []
        params = {**_filter_params(filters, exclude, restrict), "limit": int(limit)}
        rows = await self._run(q.ROUTES[("recent", restrict is not None)], params)
        return [r["id"] for r in rows]

    async def get_events(self, ids: Sequence[str], *, with_vectors: bool = False) -> list[Event]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        rows = await self._run(q.GET_EVENTS_VEC if with_vectors else q.GET_EVENTS, {"ids": wanted})
        found = {r["e"]["id"]: _event(r["e"], with_vectors) for r in rows}
        return [found[i] for i in ids if i in found]

    async def get_chunks(
        self, event_ids: Sequence[str], *, with_vectors: bool = False
    ) -> dict[str, list[Chunk]]:
        out: dict[str, list[Chunk]] = {i: [] for i in event_ids}
        if not out:
            return out
        rows = await self._run(
            q.GET_CHUNKS_VEC if with_vectors else q.GET_CHUNKS, {"ids": list(out)}
        )
        for r in rows:
            c = _chunk(r["c"], with_vectors)
            out[c.event_id].append(c)
        return out

    async def id_counts(self, ids: Sequence[str]) -> dict[str, int]:
        out = dict.fromkeys(ids, 0)
        if out:
            rows = await self._run(q.ID_COUNTS, {"ids": list(out)})
            out.update({r["id"]: int(r["n"]) for r in rows})
        return out

    async def events_mentioning(self, concept_id: str) -> frozenset[str]:
        rows = await self._run(q.EVENTS_MENTIONING, {"id": concept_id})
        return frozenset(r["id"] for r in rows)

    async def positional_events(self, prefix: str, chapter: str) -> list[str]:
        head = f"{prefix}_ch{chapter}_e"
        rows = await self._run(q.POSITIONAL, {"head": head})
        tail = re.compile(r"[0-9]+")
        found = [r["id"] for r in rows if tail.fullmatch(r["id"][len(head) :])]
        return sorted(found, key=lambda i: (int(i[len(head) :]), i))

    # ------------------------------------------------------------ graph reads

    async def get_nodes(self, ids: Sequence[str]) -> list[Node | None]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        rows = await self._run(q.GET_NODES, {"ids": wanted})
        found = {r["n"]["id"]: _node(r["n"]) for r in rows}
        return [found.get(i) for i in ids]

    async def list_nodes(
        self, label: NodeLabel, where: Where | None, sort: SortSpec, page: Page
    ) -> NodePage:
        lbl = q.label(label)
        key, direction = _sort_key(lbl, sort)
        compiler = _WhereCompiler(lbl)
        cond = compiler.compile(where)
        _check_page(page)
        params: dict[str, Any] = {**compiler.params, "limit": page.first + 1}
        if page.after is not None:
            params["after_key"], params["after_id"] = page.after

        async def work(tx: AsyncManagedTransaction) -> tuple[int, list[dict[str, Any]]]:
            total = await self._tx(tx, q.list_count(lbl, cond), **compiler.params)
            rows = await self._tx(
                tx, q.list_page(lbl, cond, key, direction, page.after is not None), **params
            )
            return int(total[0]["total"]), rows

        total, rows = await self._read(work)
        rows, has_next = rows[: page.first], len(rows) > page.first
        return NodePage(
            nodes=[_node(r["n"]) for r in rows],
            has_next=has_next,
            positions=[(r["k"], r["n"]["id"]) for r in rows],
            total=total,
        )

    async def neighbours(
        self,
        node_ids: Sequence[str],
        rel_type: RelType | None,
        direction: Direction,
        limit_per_node: int,
        after: str | None = None,
    ) -> dict[str, list[Neighbour]]:
        kind = None if rel_type is None else q.rel_type(rel_type)
        if direction not in ("out", "in", "both"):
            raise InvalidInput(f"direction must be out, in or both (got {direction!r})")
        if limit_per_node < 0:
            raise InvalidInput("limit_per_node must not be negative")
        unique = list(dict.fromkeys(node_ids))
        out: dict[str, list[Neighbour]] = {i: [] for i in unique}
        if not unique or limit_per_node == 0:
            return out
        rows = await self._run(
            q.NEIGHBOURS,
            {
                "ids": unique, "type": kind, "after": after, "limit": int(limit_per_node),
                "out": direction != "in", "in": direction != "out",
            },
        )  # fmt: skip
        for r in rows:
            node_id = r["id"]
            for e in r["rows"]:
                rel = _relation(e["type"], e["source"], e["target"], e["props"] or {})
                out[node_id].append(Neighbour(node_id, rel, e["other"], e["dir"]))
        return out

    async def graph(self, max_nodes: int, max_relations: int) -> GraphSnapshot:
        if max_nodes < 0 or max_relations < 0:
            raise InvalidInput("graph caps must not be negative")

        async def work(tx: AsyncManagedTransaction) -> GraphSnapshot:
            rows = await self._tx(tx, q.GRAPH_NODES, cap=max_nodes + 1)
            truncated_nodes = len(rows) > max_nodes
            nodes = [_node(r["n"]) for r in rows[:max_nodes]]
            rels = await self._tx(
                tx, q.GRAPH_RELATIONS, ids=[n.id for n in nodes], cap=max_relations + 1
            )
            return GraphSnapshot(
                nodes=nodes,
                relations=[
                    _relation(r["type"], r["source"], r["target"], r["props"] or {})
                    for r in rels[:max_relations]
                ],
                truncated_nodes=truncated_nodes,
                truncated_relations=len(rels) > max_relations,
            )

        return await self._read(work)

    # ------------------------------------------------------------ deletion

    async def forget(self, event_id: str) -> list[str]:
        async def work(tx: AsyncManagedTransaction) -> list[str]:
            await self._tx(tx, q.LOCK_SPACE, n=0)
            rows = await self._tx(tx, q.FORGET_TOUCHED, id=event_id)
            if not rows:
                raise NotFound(
                    f"no event with id {event_id!r}", zh=f"事件不存在：{event_id}", id=event_id
                )
            touched = list(dict.fromkeys([*rows[0]["adjacent"], *rows[0]["attitude_ends"]]))
            for statement in q.FORGET_DELETE:
                await self._tx(tx, statement, id=event_id)
            pruned = await self._tx(tx, q.FORGET_PRUNE, ids=touched)
            order = sorted((_LABEL_RANK[q.label(r["label"])], r["id"]) for r in pruned)
            return [event_id, *(i for _, i in order)]

        return await self._write(work)


# ---------------------------------------------------------------- apply_save


def _check_plan(plan: SavePlan) -> None:
    seen: set[str] = set()
    for ref in [e.ref for e in plan.events] + [e.ref for e in plan.entities]:
        if ref in seen:
            raise InvalidInput(f"ref {ref!r} appears twice in one save plan")
        seen.add(ref)
    given = [e.given_id for e in plan.events if e.given_id is not None]
    if len(set(given)) != len(given):
        raise Conflict("the same event id is given twice in one save", zh="事件 ID 重复")
    for gid in given:
        if not CALLER_ID.match(gid) or label_of(gid) is not None:
            raise InvalidId(
                f"event id {gid!r} is not allowed: use letters, digits and _.:- (at most 128), "
                "and not the allocator's own form like event_12",
                zh=f"事件 ID 不合法：{gid}",
            )
    for ent in plan.entities:
        q.entity_label(ent.label)
    for r in plan.relations:
        q.rel_type(r.type)


class _SaveTx:
    """One apply_save inside one managed transaction (re-run from scratch on a retry)."""

    def __init__(self, store: Neo4jStore, tx: AsyncManagedTransaction, plan: SavePlan) -> None:
        self.store = store
        self.tx = tx
        self.plan = plan
        self.result = SaveResult(event_ids=[], created={}, merged=[], refs={})
        self.labels: dict[str, NodeLabel] = {}
        self._next: dict[NodeLabel, int] = {}
        self._seq = 0

    async def _q(self, query: str, **params: Any) -> list[dict[str, Any]]:
        return await self.store._tx(self.tx, query, **params)

    async def run(self) -> SaveResult:
        plan = self.plan
        new_nodes = len(plan.events) + sum(1 for e in plan.entities if e.merge_into is None)
        lock = await self._q(q.LOCK_SPACE, n=new_nodes)
        self._seq = int(lock[0]["first"])
        if plan.idempotency_key is not None:
            rows = await self._q(q.GET_RECORD, key=plan.idempotency_key)
            if rows:
                return _json_result(rows[0]["result"])
        m = plan.meta
        await self._q(
            q.ENSURE_META, model=m.model, dims=m.dimensions, at=m.updated_at, v=m.schema_version
        )
        await self._events()
        await self._entities()
        await self._relations()
        if plan.idempotency_key is not None:
            await self._q(
                q.PUT_RECORD,
                key=plan.idempotency_key,
                result=_result_json(self.result),
                at=datetime.now(UTC).isoformat(),
            )
        return self.result

    async def _take(self, label: NodeLabel) -> tuple[str, int]:
        if label not in self._next:
            rows = await self._q(q.MAX_NUM[label])
            self._next[label] = int(rows[0]["m"] or 0) + 1
        n = self._next[label]
        self._next[label] = n + 1
        return f"{ID_PREFIX[label]}_{n}", n

    def _take_seq(self) -> int:
        self._seq += 1
        return self._seq - 1

    async def _events(self) -> None:
        plan = self.plan
        given = [e.given_id for e in plan.events if e.given_id is not None]
        taken = await self.store._labels_of(self.tx, given)
        for gid in given:
            if gid in taken:
                raise Conflict(
                    f"an event with id {gid!r} already exists; choose another id",
                    zh=f"事件 ID 已存在：{gid}",
                    id=gid,
                )
        rows: list[dict[str, Any]] = []
        chunks: list[tuple[str, Chunk]] = []
        for ev in plan.events:
            if ev.given_id is not None:
                node_id, num = ev.given_id, _num(ev.given_id)
            else:
                node_id, num = await self._take("Event")
            values, zero = _vec_param(ev.embedding)
            rows.append({
                "id": node_id, "num": num, "seq": self._take_seq(), "summary": ev.summary,
                "content": ev.content, "time": ev.time, "content_hash": ev.content_hash,
                "embedding": values, "zero": zero,
            })  # fmt: skip
            chunks += [(node_id, c) for c in ev.chunks]
            self.result.event_ids.append(node_id)
            self.result.refs[ev.ref] = node_id
            self.labels[node_id] = "Event"
        for batch in _batches(rows):
            await self._q(
                q.CREATE_EVENTS, rows=batch, create_time=plan.create_time,
                create_date=plan.create_date,
            )  # fmt: skip
        await self.store._create_chunks(self.tx, chunks)

    async def _entities(self) -> None:
        rows: dict[EntityLabel, list[dict[str, Any]]] = {lbl: [] for lbl in ENTITY_LABELS}
        merged: dict[str, list[str]] = {}
        for ent in self.plan.entities:
            if ent.merge_into is not None:
                node_id = await self._merge(ent, merged)
            else:
                node_id, num = await self._take(ent.label)
                aliases = _clean_aliases(ent.name, ent.aliases, set())
                values, zero = _vec_param(ent.embedding)
                rows[ent.label].append({
                    "id": node_id, "num": num, "seq": self._take_seq(), "name": ent.name,
                    "aliases": aliases, "norm_names": _norm_names([ent.name, *aliases]),
                    "description": ent.description, "embedding": values, "zero": zero,
                })  # fmt: skip
                self.result.created.setdefault(ent.label, []).append(node_id)
            self.result.refs[ent.ref] = node_id
            self.labels[node_id] = ent.label
        self.result.merged = list(merged.items())
        for lbl, label_rows in rows.items():
            for batch in _batches(label_rows):
                await self._q(q.CREATE_ENTITIES[lbl], rows=batch, create_time=self.plan.create_time)

    async def _merge(self, ent: EntityDraft, merged: dict[str, list[str]]) -> str:
        node_id = ent.merge_into
        assert node_id is not None
        rows = await self._q(q.GET_FOR_MERGE, id=node_id)
        if not rows:
            raise NotFound(
                f"cannot merge into {node_id!r}: no such node", zh=f"节点不存在：{node_id}"
            )
        row = rows[0]
        if row["label"] != ent.label:
            raise InvalidInput(f"cannot merge a {ent.label} into {node_id!r}, a {row['label']}")
        aliases: list[str] = list(row["aliases"] or [])
        taken = {normalise_name(row["name"] or "")} | {normalise_name(a) for a in aliases}
        added = _clean_aliases("", [ent.name, *ent.aliases], taken)
        if added:
            aliases += added
            await self._q(
                q.UPDATE_MERGED,
                id=node_id,
                aliases=aliases,
                norm_names=_norm_names([row["name"] or "", *aliases]),
            )
        values, zero = _vec_param(ent.embedding)
        if row["no_vector"] and values is not None:  # merged nodes keep their vector
            await self._q(q.FILL_VECTOR, id=node_id, embedding=values, zero=zero)
        merged.setdefault(node_id, []).extend(added)
        return node_id

    async def _relations(self) -> None:
        refs = self.result.refs
        resolved = [(r, refs.get(r.source, r.source), refs.get(r.target, r.target))
                    for r in self.plan.relations]  # fmt: skip
        unknown = [i for _, s, t in resolved for i in (s, t) if i not in self.labels]
        self.labels.update(await self.store._labels_of(self.tx, unknown))
        groups: dict[tuple[NodeLabel, RelType, NodeLabel], list[dict[str, Any]]] = {}
        seen: set[tuple[str, str, str, str]] = set()
        for r, src, dst in resolved:
            kind = q.rel_type(r.type)
            for end, node_id in ((r.source, src), (r.target, dst)):
                if node_id not in self.labels:
                    raise NotFound(
                        f"relation {kind} points to {end!r}, which is neither a ref of this "
                        "save nor an existing node",
                        zh=f"关系端点不存在：{end}",
                    )
            a, b = self.labels[src], self.labels[dst]
            srcs, dsts = q.REL_ENDS[kind]
            if a not in srcs or b not in dsts:
                raise InvalidInput(f"{kind} cannot connect a {a} to a {b}")
            props = {k: v for k, v in r.props.items() if v is not None}
            ek = ""
            if kind == "HAS_ATTITUDE":
                if r.event_ref is not None:
                    props["event_id"] = refs.get(r.event_ref, r.event_ref)
                elif "event_id" in props:
                    props["event_id"] = refs.get(str(props["event_id"]), str(props["event_id"]))
                ek = str(props.get("event_id", ""))
            key = (kind, src, dst, ek)
            if key in seen:  # the first of duplicate edges wins, as in the embedded store
                continue
            seen.add(key)
            groups.setdefault((a, kind, b), []).append(
                {"s": src, "t": dst, "props": props, "ek": ek}
            )
        for shape, rows in groups.items():
            for batch in _batches(rows):
                await self._q(q.MERGE_REL[shape], rows=batch)
