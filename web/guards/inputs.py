"""What a request's variables and arguments may hold, checked before graphql-core coerces the
variables and strawberry converts the arguments (``InputGuard``, a schema extension):

- no lone surrogates in a variable's strings (``INVALID_TEXT``);
- ``where`` trees within ``max_where_conditions`` / ``max_where_depth`` and client extractions
  within their caps (``LIMIT_EXCEEDED``).

Converting arguments is Python work on the event loop (~0.7 ms per ``where`` condition
measured here: a 2.5 MB ``OR`` held every client for 36 s), so the size is counted first, on the
raw JSON, without recursion. ``note_body`` tells the guard whether the raw body can hold a lone
surrogate at all, so the walk over every string is skipped when it cannot.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from graphql import (
    ArgumentNode,
    DocumentNode,
    GraphQLError,
    Visitor,
    value_from_ast_untyped,
    visit,
)
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

from mnemoql.engine import checks
from mnemoql.engine.errors import MnemoError
from mnemoql.engine.service_settings import Limits

_TREE_KEYS = frozenset({"AND", "OR", "NOT"})


def where_size(value: object, stop: tuple[int, int] | None = None) -> tuple[int, int]:
    """``(conditions, depth)`` of a ``where`` value as JSON: each operator of a field filter
    counts one condition (each value of an ``in`` list one), AND / OR / NOT add a level, and a
    list of more branches than the cap is over it.
    With ``stop`` (the caps), counting ends as soon as one is passed: refusing a 2.5 MB tree
    must not cost more than accepting one at the cap."""
    max_conditions, max_depth = stop if stop is not None else (float("inf"), float("inf"))
    conditions, depth = 0, 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack and conditions <= max_conditions and depth <= max_depth:
        node, level = stack.pop()
        if isinstance(node, list):
            if stop is not None and len(node) > max_conditions:
                return len(node), depth  # every branch is worth a condition at least
            stack.extend((item, level) for item in node)
            continue
        if not isinstance(node, dict):
            continue
        depth = max(depth, level)
        for key, item in node.items():
            if key in _TREE_KEYS:
                stack.append((item, level + 1))
            elif isinstance(item, dict):
                conditions += sum(len(v) if isinstance(v, list) else 1 for v in item.values())
            else:
                conditions += 1
    return conditions, depth


# Whether the raw request body may hold a lone surrogate: a JSON escape of a high surrogate
# without a low one right after it, or a low one without a high one right before it. None of
# those means none can be in the variables, and the walk over every string (~0.6 s for a
# 2.5 MB body) is skipped. An escaped backslash before "ud800" only costs that walk.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_BODY_MAY_HOLD_SURROGATES: ContextVar[bool | None] = ContextVar("mnemoql_surrogates", default=None)


def may_hold_lone_surrogates(raw: bytes) -> bool:
    """True when ``raw`` (JSON text) has a surrogate escape that is not half of a pair."""
    pending = -1  # end offset of a high surrogate escape waiting for its low half
    for m in _SURROGATE_ESCAPE.finditer(raw):
        high = m.group()[3:4].lower() in b"89ab"
        if pending >= 0 and (high or m.start() != pending):
            return True  # the high half waiting before this one was alone
        if high:
            pending = m.end()
        elif pending < 0:
            return True  # a low half with no high half right before it
        else:
            pending = -1
    return pending >= 0


def note_body(data: str | bytes) -> None:
    """Called with the raw body of an HTTP request before it is parsed (``parse_json``)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    _BODY_MAY_HOLD_SURROGATES.set(may_hold_lone_surrogates(raw))


def _extractions(value: Any) -> list[Any]:
    """The ``extraction`` objects of a save input variable or a list of them (saveMany)."""
    items = value if isinstance(value, list) else [value]
    return [i["extraction"] for i in items if isinstance(i, dict) and isinstance(
        i.get("extraction"), dict)]  # fmt: skip


class _WhereArguments(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[ArgumentNode] = []

    def enter_argument(self, node: ArgumentNode, *_: Any) -> None:
        if node.name.value == "where":
            self.found.append(node)


def check_inputs(
    document: DocumentNode | None, variables: dict[str, Any] | None, limits: Limits
) -> None:
    """Lone surrogates in the variables, and the size of every ``where`` argument (literal or
    variable), before any of it is converted.

    Raises:
        InvalidText: a variable's string is not valid Unicode.
        LimitExceeded: a ``where`` tree past the caps.
    """
    if _BODY_MAY_HOLD_SURROGATES.get() is not False:  # unknown (a websocket) or maybe
        for name, value in (variables or {}).items():
            checks.texts(checks.strings(value, f"${name}"))
    for value in (variables or {}).values():
        for ex in _extractions(value):
            entities = sum(len(ex.get(k) or []) for k in ("persons", "concepts", "locations")
                           if isinstance(ex.get(k), list))  # fmt: skip
            checks.size("extraction", entities, limits.max_extraction_entities,
                        "persons, concepts and locations", "max_extraction_entities")  # fmt: skip
            events = ex.get("events")
            count = len(events) if isinstance(events, list) else 0
            checks.size("extraction.events", count, limits.max_extraction_events, "events",
                        "max_extraction_events")  # fmt: skip
    if document is None:
        return
    finder = _WhereArguments()
    visit(document, finder)
    stop = (limits.max_where_conditions, limits.max_where_depth)
    for arg in finder.found:
        value = value_from_ast_untyped(arg.value, variables)
        conditions, depth = where_size(value, stop)
        checks.size("where", conditions, limits.max_where_conditions, "conditions",
                    "max_where_conditions")  # fmt: skip
        checks.size("where", depth, limits.max_where_depth, "levels of AND / OR / NOT",
                    "max_where_depth")  # fmt: skip


def input_guard(limits: Limits) -> type[SchemaExtension]:
    """The ``InputGuard`` extension for these limits."""

    class InputGuard(SchemaExtension):
        """Refuses bad variables and oversized ``where`` trees before execution starts."""

        def on_execute(self) -> Iterator[None]:
            ctx = self.execution_context
            if ctx.result is None:  # not refused already (ScopeGuard)
                try:
                    check_inputs(ctx.graphql_document, ctx.variables, limits)
                except MnemoError as exc:
                    if ctx.operation_type is OperationType.SUBSCRIPTION:
                        raise  # the streaming path reports errors raised here
                    # Without its traceback: the frames in it hold the variables (a 2.5 MB
                    # tree is ~65k dicts), and the error, kept in ctx.result, would close a
                    # cycle through this frame, so they would wait for a full collection
                    error = GraphQLError(exc.message, original_error=exc.with_traceback(None))
                    ctx.result = ExecutionResult(data=None, errors=[error])
            yield

    return InputGuard
