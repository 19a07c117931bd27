"""What both store adapters hold to, written once: the checks of a save plan, the allow-lists of
labels and relationship types, allocated ids, alias cleaning and the replay record codec.

These are the rules behind the contract suite (``tests/store/``) that do not depend on the
database: an adapter calls them where it would otherwise restate them, so the two stores refuse
the same plans with the same errors and read each other's records alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Final, TypeVar

from mnemoql.engine.drafts import SavePlan, SaveResult
from mnemoql.engine.errors import Conflict, InvalidId, InvalidInput
from mnemoql.engine.models import (
    CALLER_ID,
    ENTITY_LABELS,
    ID_PREFIX,
    NODE_LABELS,
    QUERYABLE_FIELDS,
    REL_TYPES,
    EntityLabel,
    NodeLabel,
    RelType,
    label_of,
)
from mnemoql.engine.text import normalise_name

T = TypeVar("T", bound=str)

ALLOCATED: Final = re.compile(r"^(" + "|".join(ID_PREFIX.values()) + r")_([0-9]+)$")


# ---------------------------------------------------------------- allow-lists


def label(value: object) -> NodeLabel:
    """``value`` if it is one of NODE_LABELS, else InvalidInput (the Cypher allow-list)."""
    return _one_of(value, NODE_LABELS, "label", "标签")


def entity_label(value: object) -> EntityLabel:
    return _one_of(value, ENTITY_LABELS, "entity label", "实体标签")


def rel_type(value: object) -> RelType:
    return _one_of(value, REL_TYPES, "relationship type", "关系类型")


def _one_of(value: object, known: tuple[T, ...], what: str, zh: str) -> T:
    for k in known:
        if value == k:
            return k
    raise InvalidInput(
        f"unknown {what} {value!r}; use one of {', '.join(map(str, known))}",
        zh=f"未知{zh}：{value!r}",
    )


def queryable_field(label: NodeLabel, field: object) -> str:
    """``field`` if a ``where`` or sort may name it on ``label`` (``QUERYABLE_FIELDS``)."""
    if not isinstance(field, str) or field not in QUERYABLE_FIELDS.get(label, ()):
        allowed = ", ".join(QUERYABLE_FIELDS.get(label, ()))
        raise InvalidInput(
            f"unknown field {field!r} for {label}; use one of: {allowed}",
            zh=f"未知字段：{field!r}",
            field=str(field),
        )
    return field


def text_value(value: object, field: str) -> str:
    """A ``where`` value, which is always compared as a string."""
    if not isinstance(value, str):
        raise InvalidInput(
            f"field {field!r} compares with strings, got {type(value).__name__}",
            zh=f"字段 {field!r} 只能与字符串比较（收到 {type(value).__name__}）",
        )
    return value


def sort_spec(sort: object, field_of: Callable[[object], str]) -> tuple[str, str]:
    """``(the adapter's name of the field, 'ASC'|'DESC')`` of a caller's ``SortSpec``;
    ``field_of`` checks the field against ``QUERYABLE_FIELDS``."""
    if not isinstance(sort, tuple) or len(sort) != 2:
        raise InvalidInput(
            "sort must be (field, 'ASC'|'DESC')", zh="sort 须为 (字段, 'ASC'|'DESC')"
        )
    field, direction = sort
    name = field_of(field)
    if direction not in ("ASC", "DESC"):
        raise InvalidInput(
            f"sort direction must be ASC or DESC, got {direction!r}",
            zh=f"排序方向须为 ASC 或 DESC（收到 {direction!r}）",
        )
    return name, direction


# ---------------------------------------------------------------- save plans


def check_plan(plan: SavePlan) -> None:
    """What a store refuses before touching the database: a ref used twice, an event id given
    twice or in the allocator's own form, an unknown label or relationship type, a bad topic."""
    seen: set[str] = set()
    for ref in [e.ref for e in plan.events] + [e.ref for e in plan.entities]:
        if ref in seen:
            raise InvalidInput(
                f"ref {ref!r} appears twice in one save plan",
                zh=f"ref {ref!r} 在同一保存计划中出现两次",
            )
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
        entity_label(ent.label)
    for r in plan.relations:
        rel_type(r.type)
    if plan.topic is not None:
        plan.topic.check()


def allocation_key(node_id: str) -> tuple[str | None, int | None]:
    """``("event", 12)`` for ``event_12``; ``(None, None)`` for ids the allocator ignores."""
    m = ALLOCATED.match(node_id)
    return (m.group(1), int(m.group(2))) if m else (None, None)


def clean_aliases(name: str, aliases: Iterable[str], taken: set[str]) -> list[str]:
    """Aliases whose normalised form is new (not the name, not taken, not repeated)."""
    keep = []
    taken.add(normalise_name(name))
    for alias in aliases:
        key = normalise_name(alias)
        if key and key not in taken:
            taken.add(key)
            keep.append(alias)
    return keep


# ---------------------------------------------------------------- replay records


def result_json(result: SaveResult) -> str:
    """The record an idempotency key replays (and a dump carries as ``save_record``)."""
    return json.dumps(
        {
            "event_ids": result.event_ids,
            "created": result.created,
            "merged": [[i, a] for i, a in result.merged],
            "refs": result.refs,
        },
        ensure_ascii=False,
    )


def json_result(text: str) -> SaveResult:
    d = json.loads(text)
    return SaveResult(
        event_ids=list(d["event_ids"]),
        created={k: list(v) for k, v in d["created"].items()},
        merged=[(i, list(a)) for i, a in d["merged"]],
        refs=dict(d["refs"]),
        replayed=True,
    )
