"""Input types: filters, sorting and what ``save`` accepts."""

from __future__ import annotations

from enum import Enum
from typing import Any

import strawberry
from strawberry.scalars import JSON

from engine import models as m
from engine.errors import InvalidInput
from prompts.extraction import ProfileItem


@strawberry.input(description="Conditions on one text field; several set here are ANDed.")
class StringFilter:
    eq: str | None = None
    in_: list[str] | None = strawberry.field(default=None, name="in")
    contains: str | None = None
    starts_with: str | None = None
    gt: str | None = None
    gte: str | None = None
    lt: str | None = None
    lte: str | None = None


_OPS: tuple[tuple[str, m.WhereOp], ...] = (
    ("eq", "eq"),
    ("in_", "in"),
    ("contains", "contains"),
    ("starts_with", "starts_with"),
    ("gt", "gt"),
    ("gte", "gte"),
    ("lt", "lt"),
    ("lte", "lte"),
)


def _conds(field: str, f: StringFilter) -> list[m.Where]:
    out: list[m.Where] = []
    for attr, op in _OPS:
        value = getattr(f, attr)
        if value is not None:
            out.append(m.Cond(field, op, tuple(value) if op == "in" else value))
    return out


def _where(obj: Any, fields: dict[str, str]) -> m.Where | None:
    if obj is None:
        return None
    items: list[m.Where] = []
    for attr, column in fields.items():
        f = getattr(obj, attr)
        if f is not None:
            items.extend(_conds(column, f))
    for sub in obj.AND or ():
        if (w := _where(sub, fields)) is not None:
            items.append(w)
    if obj.OR:
        alts = [w for sub in obj.OR if (w := _where(sub, fields)) is not None]
        if alts:
            items.append(m.AnyOf(tuple(alts)))
    if obj.NOT is not None and (w := _where(obj.NOT, fields)) is not None:
        items.append(m.Not(w))
    if not items:
        return None
    return items[0] if len(items) == 1 else m.AllOf(tuple(items))


@strawberry.input
class EventWhere:
    id: StringFilter | None = None
    summary: StringFilter | None = None
    content: StringFilter | None = None
    time: StringFilter | None = None
    create_time: StringFilter | None = None
    create_date: StringFilter | None = None
    AND: list[EventWhere] | None = None
    OR: list[EventWhere] | None = None
    NOT: EventWhere | None = None

    def to_domain(self) -> m.Where | None:
        return _where(self, _EVENT_FIELDS)


@strawberry.input
class EntityWhere:
    id: StringFilter | None = None
    name: StringFilter | None = None
    description: StringFilter | None = None
    create_time: StringFilter | None = None
    AND: list[EntityWhere] | None = None
    OR: list[EntityWhere] | None = None
    NOT: EntityWhere | None = None

    def to_domain(self) -> m.Where | None:
        return _where(self, _ENTITY_FIELDS)


_EVENT_FIELDS = {
    "id": "id",
    "summary": "summary",
    "content": "content",
    "time": "time",
    "create_time": "create_time",
    "create_date": "create_date",
}
_ENTITY_FIELDS = {
    "id": "id",
    "name": "name",
    "description": "description",
    "create_time": "create_time",
}


@strawberry.enum
class SortDirection(Enum):
    ASC = "ASC"
    DESC = "DESC"


@strawberry.enum
class EventSortField(Enum):
    ID = "id"
    CREATE_TIME = "create_time"
    CREATE_DATE = "create_date"
    SUMMARY = "summary"
    TIME = "time"


@strawberry.enum
class EntitySortField(Enum):
    ID = "id"
    NAME = "name"
    CREATE_TIME = "create_time"


@strawberry.input
class EventSort:
    field: EventSortField = EventSortField.CREATE_TIME
    direction: SortDirection = SortDirection.DESC

    def to_domain(self) -> m.SortSpec:
        return (self.field.value, self.direction.value)


@strawberry.input
class EntitySort:
    field: EntitySortField = EntitySortField.NAME
    direction: SortDirection = SortDirection.ASC

    def to_domain(self) -> m.SortSpec:
        return (self.field.value, self.direction.value)


@strawberry.input(
    description="Recall weights of a topic binding, each in [0, 1] (clamped); a missing one "
    "takes its default: activation 0.55, diffusion 0.35, context independence 0.50."
)
class ActivationProfileInput:
    activation_weight: float | None = strawberry.field(
        default=None, description="How readily the memory comes back when its topic is recalled."
    )
    diffusion_weight: float | None = strawberry.field(
        default=None, description="How far recall spreads to its related topics (0: not at all)."
    )
    context_independence_weight: float | None = strawberry.field(
        default=None, description="How well it reads without the conversation around it."
    )

    def to_domain(self) -> ProfileItem:
        return ProfileItem(
            activation_weight=self.activation_weight,
            diffusion_weight=self.diffusion_weight,
            context_independence_weight=self.context_independence_weight,
        )


@strawberry.input(description="One memory to save.")
class SaveInput:
    content: str = strawberry.field(description="The original text, kept verbatim.")
    id: str | None = strawberry.field(
        default=None,
        description="Your own id for the event, e.g. book_ch3_e12 (enables `nearby`).",
    )
    time: str | None = strawberry.field(default=None, description="When it happened, free text.")
    topic_path: str | None = strawberry.field(
        default=None,
        description="The topic to bind the memory to, e.g. work->mnemoql->api (wins over the "
        "extraction model's topic).",
    )
    related_topics: list[str] | None = strawberry.field(
        default=None, description="Related topic paths, recalled alongside (RELATED)."
    )
    activation_profile: ActivationProfileInput | None = strawberry.field(
        default=None, description="Recall weights of the topic binding."
    )
    extraction: JSON | None = strawberry.field(
        default=None,
        description="A ready extraction (SPEC §1.3 JSON shape); skips the extraction model.",
    )
    idempotency_key: str | None = strawberry.field(
        default=None, description="Saving again with the same key returns the first result."
    )
    dedupe_by_hash: bool = strawberry.field(
        default=False, description="Return the existing events when identical content exists."
    )


def decode_after(after: str | None, decode: Any) -> tuple[Any, str] | None:
    if after is None:
        return None
    try:
        decoded = decode(after)
        if not isinstance(decoded, list):  # a 2-character string would unpack too
            raise TypeError("not a [value, id] pair")
        value, node_id = decoded
        return (value, str(node_id))
    except (ValueError, TypeError) as exc:
        raise InvalidInput("after is not a cursor this API issued", argument="after") from exc
