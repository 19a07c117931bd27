"""Checks on what clients send, run before any work starts; each failure is a coded error.

Text must be valid Unicode (a lone surrogate, which JSON's ``\\ud800`` escape can smuggle into
a Python string, cannot be stored, embedded or logged) and content must hold something
visible. Sizes have caps where the cost of a request grows with its size and the service would
otherwise spend seconds on one client: the search query (the embedding model reads a bounded
window), ``where`` trees (conditions and nesting) and client extractions (events, entities).
Messages that echo caller input clip it (``clip``), so neither the error nor a log line carries
a 100,000-character argument.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from datetime import date, datetime
from typing import Any

from mnemoql.engine.errors import InvalidInput, InvalidText, OutOfRange, limit_exceeded
from mnemoql.engine.models import CALLER_ID, AllOf, AnyOf, Cond, Not, Where
from mnemoql.engine.service_settings import Limits
from mnemoql.prompts.extraction import Extraction, ProfileItem

# A UTF-16 surrogate code point on its own: JSON decodes a valid pair into one astral
# character, so any surrogate left in a str is lone.
_SURROGATE = re.compile("[\ud800-\udfff]")
# Anything but whitespace, controls and invisible format characters (BOM, zero-width
# space/joiners, word joiner, bidi marks and isolates, soft hyphen, tags).
_VISIBLE = re.compile(
    "[^\\s\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)
CLIP_CHARS = 80


def clip(text: str, limit: int = CLIP_CHARS) -> str:
    """``text`` for an error message or a log line: at most ``limit`` characters, with the
    size of what was cut, and lone surrogates shown as ``\\udXXX`` so it can be encoded."""
    cut = text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", cut)


def text(value: str, argument: str) -> str:
    """``value`` unless it holds a lone surrogate (INVALID_TEXT, naming ``argument``)."""
    if (m := _SURROGATE.search(value)) is not None:
        raise InvalidText(
            f"{argument} holds a lone UTF-16 surrogate (\\u{ord(m.group()):04x} at position "
            f"{m.start()}), which is not valid Unicode text; send the character itself or a "
            "complete surrogate pair",
            zh=f"{argument} 含有无效的 Unicode 代理字符",
            argument=argument,
        )
    return value


def texts(values: Iterable[tuple[str, str]]) -> None:
    """``text`` for each ``(argument, value)``."""
    for argument, value in values:
        text(value, argument)


def visible(value: str, argument: str) -> None:
    """INVALID_TEXT when ``value`` has nothing visible: only whitespace, controls, a byte
    order mark or zero-width characters."""
    if _VISIBLE.search(value) is None:
        raise InvalidText(
            f"{argument} has no visible characters (only whitespace, a byte order mark or "
            "zero-width characters); there is nothing to remember",
            zh=f"{argument} 不能为空",
            argument=argument,
        )


def strings(data: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string inside JSON-like ``data`` (dict keys included), with a readable path."""
    stack: list[tuple[Any, str]] = [(data, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            for key, value in item.items():
                if isinstance(key, str):
                    yield f"{where} key", key
                stack.append((value, f"{where}.{key}"))
        elif isinstance(item, list | tuple):
            stack.extend((value, f"{where}[{i}]") for i, value in enumerate(item))


def size(argument: str, got: int, limit: int, what: str, setting: str | None = None) -> None:
    """LIMIT_EXCEEDED when ``got`` is over ``limit``."""
    if got > limit:
        raise limit_exceeded(argument, what, got, limit, setting)


def where_conditions(where: Where | None) -> int:
    """How many conditions a ``where`` tree holds: each comparison, and each value of an
    ``in`` list, counts one."""
    count = 0
    stack: list[Where] = [] if where is None else [where]
    while stack:
        node = stack.pop()
        if isinstance(node, Cond):
            count += len(node.value) if isinstance(node.value, tuple | list) else 1
        elif isinstance(node, AllOf | AnyOf):
            stack.extend(node.items)
        elif isinstance(node, Not):
            stack.append(node.item)
    return count


def where_strings(where: Where | None) -> Iterator[tuple[str, str]]:
    """Every string a ``where`` tree compares with, as ``("where.<field>", value)``."""
    stack: list[Where] = [] if where is None else [where]
    while stack:
        node = stack.pop()
        if isinstance(node, Cond):
            yield from strings(node.value, f"where.{node.field}")
        elif isinstance(node, AllOf | AnyOf):
            stack.extend(node.items)
        elif isinstance(node, Not):
            stack.append(node.item)


def where(tree: Where | None, max_conditions: int) -> None:
    """LIMIT_EXCEEDED when a ``where`` tree holds more conditions than ``max_conditions``
    (its nesting is bounded by the store, and at the GraphQL edge by ``max_where_depth``)."""
    size("where", where_conditions(tree), max_conditions, "conditions", "max_where_conditions")


def position(sort_field: str, after: tuple[object, str] | None, argument: str = "after") -> None:
    """A keyset position (``after`` / ``before``) must look like one the API issued for this
    sort: a ``(sort value, node id)`` pair whose value has the sort field's form (a write time,
    a date, the id itself). Anything else would silently page from the start."""
    if after is None:
        return
    value, node_id = after
    ok = isinstance(value, str) and isinstance(node_id, str) and bool(CALLER_ID.match(node_id))
    if ok and sort_field == "id":
        ok = value == node_id
    elif ok and sort_field in ("create_time", "create_date"):
        ok = _iso(value, sort_field == "create_date")
    if not ok:
        raise InvalidInput(
            f"{argument} is not a cursor this API issued for this sort; use an edge's cursor "
            "or pageInfo's endCursor / startCursor from the same query",
            zh=f"{argument} 不是本接口为该排序签发的游标",
            argument=argument,
        )


def _iso(value: object, date_only: bool) -> bool:
    try:
        if date_only:
            date.fromisoformat(str(value))
        else:
            datetime.fromisoformat(str(value))
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- save inputs


def extraction(ex: Extraction, limits: Limits) -> None:
    """A client's ready extraction: bounded (its size drives embedding and merging work) and
    valid text throughout."""
    size("extraction.events", len(ex.events), limits.max_extraction_events, "events",
         "max_extraction_events")  # fmt: skip
    entities = len(ex.persons) + len(ex.concepts) + len(ex.locations)
    size("extraction", entities, limits.max_extraction_entities,
         "persons, concepts and locations", "max_extraction_entities")  # fmt: skip
    size("extraction.attitudes", len(ex.attitudes), limits.max_extraction_entities,
         "attitudes", "max_extraction_entities")  # fmt: skip
    texts(strings(ex.model_dump(exclude_none=True), "extraction"))


def profile(profile: ProfileItem | None) -> None:
    """OUT_OF_RANGE for a weight that is NaN or infinite (no clamp makes it a weight)."""
    if profile is None:
        return
    for name, value in (
        ("activationWeight", profile.activation_weight),
        ("diffusionWeight", profile.diffusion_weight),
        ("contextIndependenceWeight", profile.context_independence_weight),
    ):
        if value is not None and not math.isfinite(value):
            raise OutOfRange(
                f"activationProfile.{name} must be a number (got {value}); weights are "
                "clamped to [0, 1]",
                zh=f"activationProfile.{name} 必须是有限数值",
                argument=f"activationProfile.{name}",
            )


# The fields a client's extraction may carry (``prompts.extraction``), per level. A model's
# reply may hold more (it is ignored); a client's may not: a misspelt or invented field
# ("relations", "participant") would otherwise drop the relations it meant, silently.
_FIELDS: dict[str, frozenset[str]] = {
    "extraction": frozenset({"events", "persons", "concepts", "locations", "attitudes", "topic"}),
    "events": frozenset({"ref", "summary", "time", "participants", "locations", "concepts"}),
    "participants": frozenset({"person", "role"}),
    "entities": frozenset({"ref", "name", "aliases", "description"}),
    "attitudes": frozenset({"person", "target", "attitude", "event"}),
}


def unknown_extraction_fields(data: Any) -> list[str]:
    """Paths of the fields of a client extraction that no part of the shape has."""
    if not isinstance(data, dict):
        return []
    found = [k for k in data if k not in _FIELDS["extraction"]]
    for list_name, shape in (("events", "events"), ("persons", "entities"),
                             ("concepts", "entities"), ("locations", "entities"),
                             ("attitudes", "attitudes")):  # fmt: skip
        items = data.get(list_name)
        for i, item in enumerate(items if isinstance(items, list) else []):
            if not isinstance(item, dict):
                continue
            found += [f"{list_name}[{i}].{k}" for k in item if k not in _FIELDS[shape]]
            for j, p in enumerate(item.get("participants") or [] if shape == "events" else []):
                if isinstance(p, dict):
                    found += [f"{list_name}[{i}].participants[{j}].{k}" for k in p
                              if k not in _FIELDS["participants"]]  # fmt: skip
    return found
