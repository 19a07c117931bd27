"""Conversions between Neo4j rows and domain records, and the ``where``/sort compiler.

Vectors are stored like the embedded store keeps them: float32 values scaled to unit length
(sent as float64 lists, which hold float32 values exactly). A vector without direction (zero
or not finite) is kept as is and flagged ``embedding_zero``: ``vector.similarity.cosine``
rejects such vectors, and they score raw cosine 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.models import (
    AllOf,
    AnyOf,
    Binding,
    Chunk,
    Cond,
    Entity,
    Event,
    Filters,
    MemoryMeta,
    Node,
    NodeLabel,
    Not,
    Page,
    Relation,
    SortSpec,
    Topic,
    Vector,
    Where,
)
from mnemoql.engine.store import rules
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.text import normalise_name

BATCH = 500  # UNWIND rows per statement (vectors make rows large)
_NULLABLE = frozenset({"time", "description"})
_COMPARE = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_MAX_DEPTH = 32


class QuietList(list[Any]):
    """A list parameter whose repr is short. The driver formats every RUN message for its
    debug log eagerly (``" ".join(map(repr, fields))``, logging enabled or not), which
    spells out every float of every vector: 250 ms for one 500-row UNWIND of 384-d vectors,
    against 33 ms with this repr (measured; docs/DECISIONS.md). Packed like any list."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<list of {len(self)}>"


def quiet(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with every list value a ``QuietList`` (see there)."""
    return {k: QuietList(v) if isinstance(v, list) else v for k, v in params.items()}


def vec_param(vector: Any) -> tuple[list[float] | None, bool | None]:
    """(unit-length float list, zero flag) as stored; (None, None) for no vector."""
    if vector is None:
        return None, None
    v = np.array(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(v))
    if norm > 0.0 and math.isfinite(norm):
        v /= norm
        return v.astype(np.float64).tolist(), None
    return v.astype(np.float64).tolist(), True


def vector_fields(vector: Any) -> dict[str, Any]:
    """The row fields a stored vector is written from: embedding, zero flag, dims."""
    values, zero = vec_param(vector)
    return {"embedding": values, "zero": zero, "dims": None if values is None else len(values)}


def to_vector(value: Any) -> Vector | None:
    return None if value is None else np.asarray(value, dtype=np.float32)


def query_param(vector: Vector) -> tuple[list[float], bool]:
    values, zero = vec_param(vector)
    assert values is not None
    return values, bool(zero)


def raw_cosine(s: Any) -> float:
    """A raw cosine the store computed as 2 * (1+cos)/2 - 1, clipped to [-1, 1]."""
    return min(1.0, max(-1.0, float(s)))


def event(m: dict[str, Any], with_vectors: bool = False) -> Event:
    return Event(
        id=m["id"],
        summary=m.get("summary") or "",
        content=m.get("content") or "",
        time=m.get("time"),
        create_time=m.get("create_time") or "",
        create_date=m.get("create_date") or "",
        content_hash=m.get("content_hash") or "",
        embedding=to_vector(m.get("embedding")) if with_vectors else None,
        has_chunks=bool(m.get("has_chunks")),
    )


def entity(m: dict[str, Any], with_vectors: bool = False) -> Entity:
    return Entity(
        label=q.entity_label(m["label"]),
        id=m["id"],
        name=m.get("name") or "",
        aliases=list(m.get("aliases") or []),
        description=m.get("description"),
        create_time=m.get("create_time") or "",
        embedding=to_vector(m.get("embedding")) if with_vectors else None,
    )


def node(m: dict[str, Any]) -> Node:
    return event(m) if m["label"] == "Event" else entity(m)


def chunk(m: dict[str, Any], with_vectors: bool) -> Chunk:
    return Chunk(
        event_id=m["event_id"],
        chunk_index=int(m["chunk_index"]),
        start=int(m["start"]),
        end=int(m["end"]),
        text=m.get("text") or "",
        text_hash=m.get("text_hash") or "",
        embedding=to_vector(m.get("embedding")) if with_vectors else None,
    )


def meta(m: dict[str, Any] | None) -> MemoryMeta | None:
    if m is None:
        return None
    return MemoryMeta(
        model=m["model"],
        dimensions=int(m["dimensions"]),
        updated_at=m["updated_at"],
        schema_version=int(m.get("schema_version") or 1),
        stale=bool(m.get("stale")),
    )


def topic(t: dict[str, Any]) -> Topic:
    return Topic(path=t["path"], name=t["name"], parent=t.get("parent"), seq=int(t["seq"]))


def binding(b: dict[str, Any]) -> Binding:
    return Binding(
        path=b["path"],
        event_id=b["event_id"],
        timestamp=int(b["timestamp"]),
        activation=float(b["activation"]),
        diffusion=float(b["diffusion"]),
        context_independence=float(b["independence"]),
        related=tuple(b.get("related") or ()),
    )


def relation(kind: str, source: str, target: str, props: dict[str, Any]) -> Relation:
    return Relation(q.rel_type(kind), source, target, tuple(sorted(props.items())))


def allocation_number(node_id: str) -> int | None:
    return rules.allocation_key(node_id)[1]


def batches(rows: list[dict[str, Any]], size: int = BATCH) -> Iterator[list[dict[str, Any]]]:
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


def norm_names(names: Iterable[str]) -> list[str]:
    return sorted({k for k in (normalise_name(n) for n in names) if k})


# ---------------------------------------------------------------- where / sort compilation


class WhereCompiler:
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
            raise InvalidInput(
                f"where is nested deeper than {_MAX_DEPTH} levels",
                zh=f"where 嵌套超过 {_MAX_DEPTH} 层",
            )
        if isinstance(where, Cond):
            return self._cond(where)
        if isinstance(where, AllOf | AnyOf):
            if not where.items:
                return "true" if isinstance(where, AllOf) else "false"
            joiner = " AND " if isinstance(where, AllOf) else " OR "
            return joiner.join(f"({self.compile(item, depth + 1)})" for item in where.items)
        if isinstance(where, Not):
            return f"NOT ({self.compile(where.item, depth + 1)})"
        raise InvalidInput(
            f"unsupported where node: {type(where).__name__}",
            zh=f"不支持的 where 节点：{type(where).__name__}",
        )

    def _cond(self, cond: Cond) -> str:
        prop = f"n.{rules.queryable_field(self.label, cond.field)}"
        op, value = cond.op, cond.value
        if op == "eq":
            if value is None:
                return f"{prop} IS NULL"
            return f"{prop} = {self._param(rules.text_value(value, cond.field))}"
        if op == "in":
            if not isinstance(value, list | tuple | set | frozenset):
                raise InvalidInput(
                    f"'in' on {cond.field!r} needs a list of strings",
                    zh=f"{cond.field!r} 上的 'in' 需要字符串列表",
                )
            items = sorted(rules.text_value(v, cond.field) for v in value)
            return f"{prop} IN {self._param(items)}"
        if op == "contains":
            return f"{prop} CONTAINS {self._param(rules.text_value(value, cond.field))}"
        if op == "starts_with":
            return f"{prop} STARTS WITH {self._param(rules.text_value(value, cond.field))}"
        if op in _COMPARE:
            return f"{prop} {_COMPARE[op]} {self._param(rules.text_value(value, cond.field))}"
        raise InvalidInput(
            f"unknown operator {op!r}; use one of: eq, in, contains, starts_with, gt, gte, lt, lte",
            zh=f"未知运算符 {op!r}，可用：eq、in、contains、starts_with、gt、gte、lt、lte",
        )


def sort_key(label: NodeLabel, sort: SortSpec) -> tuple[str, str]:
    """(Cypher expression, direction); nullable fields sort as ''."""
    name, direction = rules.sort_spec(sort, lambda field: rules.queryable_field(label, field))
    return (f"coalesce(n.{name}, '')" if name in _NULLABLE else f"n.{name}"), direction


def check_page(page: Page) -> None:
    page.check()


def filter_params(
    filters: Filters, exclude: frozenset[str], restrict: frozenset[str] | None
) -> dict[str, Any]:
    return {
        "exclude": sorted(exclude),
        "from": filters.date_from,
        "to": filters.date_to,
        "groups": [sorted(g) for g in filters.groups],
        "restrict": sorted(restrict) if restrict is not None else None,
    }
