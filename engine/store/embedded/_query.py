"""SQL text for the embedded store's dynamic reads: ``where`` trees, keyset sorts, event filters.

Only allow-listed column names and fixed operators are ever written into SQL; every value a
caller supplies travels as a ``?`` parameter (sets as one JSON array through ``json_each``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.models import (
    ADJACENCY,
    AllOf,
    AnyOf,
    Cond,
    Filters,
    NodeLabel,
    Not,
    Page,
    SortSpec,
    Where,
)
from mnemoql.engine.store.rules import queryable_field, sort_spec, text_value

# field -> column; the values are our own constants, never caller text
_COLUMNS: dict[str, str] = {
    "id": "id",
    "summary": "summary",
    "content": "content",
    "time": "time",
    "create_time": "create_time",
    "create_date": "create_date",
    "name": "name",
    "description": "description",
}
_NULLABLE = frozenset({"time", "description"})
_COMPARE = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_MAX_DEPTH = 32
_ADJ = ", ".join(f"'{t}'" for t in ADJACENCY)

IN_SET = "(SELECT value FROM json_each(?))"


def json_set(values: Iterable[str]) -> str:
    return json.dumps(sorted(values), ensure_ascii=False)


def column(label: NodeLabel, field: object) -> str:
    return _COLUMNS[queryable_field(label, field)]


def compile_where(label: NodeLabel, where: Where | None, depth: int = 0) -> tuple[str, list[Any]]:
    """``(sql, params)`` for a ``where`` tree; ``("1", [])`` for no filter."""
    if where is None:
        return "1", []
    if depth > _MAX_DEPTH:
        raise InvalidInput(
            f"where is nested deeper than {_MAX_DEPTH} levels", zh=f"where 嵌套超过 {_MAX_DEPTH} 层"
        )
    if isinstance(where, Cond):
        return _compile_cond(label, where)
    if isinstance(where, AllOf | AnyOf):
        if not where.items:
            return ("1" if isinstance(where, AllOf) else "0"), []
        joiner = " AND " if isinstance(where, AllOf) else " OR "
        parts, params = [], []
        for item in where.items:
            sql, p = compile_where(label, item, depth + 1)
            parts.append(f"({sql})")
            params.extend(p)
        return joiner.join(parts), params
    if isinstance(where, Not):
        sql, p = compile_where(label, where.item, depth + 1)
        return f"NOT ({sql})", p
    raise InvalidInput(
        f"unsupported where node: {type(where).__name__}",
        zh=f"不支持的 where 节点：{type(where).__name__}",
    )


def _compile_cond(label: NodeLabel, cond: Cond) -> tuple[str, list[Any]]:
    col = column(label, cond.field)
    op, value = cond.op, cond.value
    if op == "eq":
        if value is None:
            return f"{col} IS NULL", []
        return f"{col} = ?", [text_value(value, col)]
    if op == "in":
        if not isinstance(value, list | tuple | set | frozenset):
            raise InvalidInput(
                f"'in' on {col!r} needs a list of strings", zh=f"{col!r} 上的 'in' 需要字符串列表"
            )
        return f"{col} IN {IN_SET}", [json_set(text_value(v, col) for v in value)]
    if op == "contains":
        return f"instr({col}, ?) > 0", [text_value(value, col)]
    if op == "starts_with":
        text = text_value(value, col)
        return f"substr({col}, 1, ?) = ?", [len(text), text]
    if op in _COMPARE:
        return f"{col} {_COMPARE[op]} ?", [text_value(value, col)]
    raise InvalidInput(
        f"unknown operator {op!r}; use one of: eq, in, contains, starts_with, gt, gte, lt, lte",
        zh=f"未知运算符 {op!r}，可用：eq、in、contains、starts_with、gt、gte、lt、lte",
    )


def sort_key(label: NodeLabel, sort: SortSpec) -> tuple[str, str]:
    """``(sql expression, 'ASC'|'DESC')``; nullable fields sort as ''."""
    col, direction = sort_spec(sort, lambda field: column(label, field))
    return (f"COALESCE({col}, '')" if col in _NULLABLE else col), direction


def check_page(page: Page) -> None:
    page.check()


def flip(direction: str) -> str:
    """The other sort direction (a backward page walks the sort the other way)."""
    return "DESC" if direction == "ASC" else "ASC"


def group_clause(column_name: str = "id") -> str:
    """Events adjacent (PARTICIPATED_IN / OCCURRED_AT / MENTIONS) to any id of one group;
    takes the group's JSON array twice."""
    return (
        f"{column_name} IN (SELECT r.target FROM relations r WHERE r.source IN {IN_SET} "
        f"AND r.type IN ({_ADJ}) UNION SELECT r.source FROM relations r "
        f"WHERE r.target IN {IN_SET} AND r.type IN ({_ADJ}))"
    )


def event_filter_sql(
    filters: Filters, exclude: frozenset[str], restrict: frozenset[str] | None
) -> tuple[str, list[Any]]:
    """The WHERE clause (over ``nodes``) of SPEC §1.4's event filters."""
    parts, params = ["label = 'Event'"], []
    for group in filters.groups:
        g = json_set(group)
        parts.append(group_clause())
        params += [g, g]
    if filters.date_from is not None:
        parts.append("create_date >= ?")
        params.append(filters.date_from)
    if filters.date_to is not None:
        parts.append("create_date <= ?")
        params.append(filters.date_to)
    if exclude:
        parts.append(f"id NOT IN {IN_SET}")
        params.append(json_set(exclude))
    if restrict is not None:
        parts.append(f"id IN {IN_SET}")
        params.append(json_set(restrict))
    return " AND ".join(parts), params
