"""Input types: filters, sorting and what ``save`` accepts."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any, cast

import strawberry
from strawberry.scalars import JSON
from strawberry.utils.str_converters import to_camel_case

from mnemoql.engine import models as m
from mnemoql.prompts.extraction import ProfileItem


@strawberry.input(description="Conditions on one text field; several set here are ANDed.")
class StringFilter:
    eq: str | None = strawberry.field(default=None, description="Equal to (null: unset).")
    in_: list[str] | None = strawberry.field(
        default=None, name="in", description="Equal to one of these."
    )
    contains: str | None = strawberry.field(default=None, description="Contains this text.")
    starts_with: str | None = strawberry.field(default=None, description="Starts with this.")
    gt: str | None = strawberry.field(default=None, description="Greater than (code points).")
    gte: str | None = strawberry.field(default=None, description="Greater than or equal to.")
    lt: str | None = strawberry.field(default=None, description="Less than (code points).")
    lte: str | None = strawberry.field(default=None, description="Less than or equal to.")


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


def _f(description: str) -> Any:
    return strawberry.field(default=None, description=description)


@strawberry.input(description="Which events a list holds; the fields set here are ANDed.")
class EventWhere:
    id: StringFilter | None = _f("On the event id.")
    summary: StringFilter | None = _f("On the summary.")
    content: StringFilter | None = _f("On the original text.")
    time: StringFilter | None = _f("On the occurrence time as written.")
    create_time: StringFilter | None = _f("On the save time (ISO-8601).")
    create_date: StringFilter | None = _f("On the save day (yyyy-MM-dd).")
    AND: list[EventWhere] | None = _f("Every one of these holds.")
    OR: list[EventWhere] | None = _f("At least one of these holds.")
    NOT: EventWhere | None = _f("This does not hold.")

    def to_domain(self) -> m.Where | None:
        return _where(self, _EVENT_FIELDS)


@strawberry.input(description="Which entities a list holds; the fields set here are ANDed.")
class EntityWhere:
    id: StringFilter | None = _f("On the entity id.")
    name: StringFilter | None = _f("On the canonical name.")
    description: StringFilter | None = _f("On the description.")
    create_time: StringFilter | None = _f("On the first save time (ISO-8601).")
    AND: list[EntityWhere] | None = _f("Every one of these holds.")
    OR: list[EntityWhere] | None = _f("At least one of these holds.")
    NOT: EntityWhere | None = _f("This does not hold.")

    def to_domain(self) -> m.Where | None:
        return _where(self, _ENTITY_FIELDS)


# ---------------------------------------------------------------- fast conversion
#
# Strawberry turns an input value into objects field by field, resolving each field's type again
# for every object: ~0.7 ms per ``where`` condition, on the event loop, so a client sending
# 100-condition trees back to back (the cap) held every other client for ~70 ms a time. These
# filters are plain data (strings, lists of strings, nested filters), so they are built straight
# from the value graphql-core has already coerced and validated, through strawberry's
# ``from_input`` hook for input types.


def _graphql_names(cls: type) -> dict[str, str]:
    """GraphQL field name -> Python attribute of a strawberry input class."""
    fields = cls.__strawberry_definition__.fields  # type: ignore[attr-defined]
    return {f.graphql_name or to_camel_case(f.python_name): f.python_name for f in fields}


def _string_filter_from_input(cls: type, value: Mapping[str, Any], _ctx: Any) -> StringFilter:
    kwargs = {_STRING_FILTER_NAMES[k]: v for k, v in value.items()}
    if kwargs.get("in_") is not None:
        kwargs["in_"] = list(kwargs["in_"])  # graphql-core may share a default list
    return StringFilter(**kwargs)


def _tree_from_input(cls: type, value: Mapping[str, Any], ctx: Any) -> Any:
    names = _TREE_NAMES[cls]
    kwargs: dict[str, Any] = {}
    for key, item in value.items():
        if item is None:
            kwargs[names[key]] = None
        elif key in ("AND", "OR"):
            kwargs[key] = [_tree_from_input(cls, sub, ctx) for sub in item]
        elif key == "NOT":
            kwargs[key] = _tree_from_input(cls, item, ctx)
        else:
            kwargs[names[key]] = _string_filter_from_input(StringFilter, item, ctx)
    return cls(**kwargs)


_STRING_FILTER_NAMES = _graphql_names(StringFilter)
_TREE_NAMES: dict[type, dict[str, str]] = {c: _graphql_names(c) for c in (EventWhere, EntityWhere)}
for _cls, _build in ((StringFilter, _string_filter_from_input), (EventWhere, _tree_from_input),
                     (EntityWhere, _tree_from_input)):  # fmt: skip
    cast(Any, _cls).__strawberry_definition__.from_input = _build


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


@strawberry.enum(description="Sort order; ties are broken by id in the same order.")
class SortDirection(Enum):
    ASC = strawberry.enum_value("ASC", description="Smallest first (code-point order).")
    DESC = strawberry.enum_value("DESC", description="Largest first.")


@strawberry.enum(description="What a list of events can be sorted by.")
class EventSortField(Enum):
    ID = strawberry.enum_value("id", description="The event id.")
    CREATE_TIME = strawberry.enum_value("create_time", description="The save time.")
    CREATE_DATE = strawberry.enum_value("create_date", description="The save day.")
    SUMMARY = strawberry.enum_value("summary", description="The summary text.")
    TIME = strawberry.enum_value("time", description="The occurrence time as written.")


@strawberry.enum(description="What a list of entities can be sorted by.")
class EntitySortField(Enum):
    ID = strawberry.enum_value("id", description="The entity id.")
    NAME = strawberry.enum_value("name", description="The canonical name.")
    CREATE_TIME = strawberry.enum_value("create_time", description="The first save time.")


@strawberry.input(description="How a list of events is ordered (default: newest first).")
class EventSort:
    field: EventSortField = strawberry.field(
        default=EventSortField.CREATE_TIME, description="What to sort by."
    )
    direction: SortDirection = strawberry.field(
        default=SortDirection.DESC, description="Which way."
    )

    def to_domain(self) -> m.SortSpec:
        # enum_value() members hold their plain value at run time (strawberry unwraps them)
        return cast(m.SortSpec, (self.field.value, self.direction.value))


@strawberry.input(description="How a list of entities is ordered (default: by name).")
class EntitySort:
    field: EntitySortField = strawberry.field(
        default=EntitySortField.NAME, description="What to sort by."
    )
    direction: SortDirection = strawberry.field(
        default=SortDirection.ASC, description="Which way."
    )

    def to_domain(self) -> m.SortSpec:
        # enum_value() members hold their plain value at run time (strawberry unwraps them)
        return cast(m.SortSpec, (self.field.value, self.direction.value))


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
