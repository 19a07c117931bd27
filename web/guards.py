"""Request guards at the edge: a body size limit and per-operation time limits.

- ``BodyLimit`` (ASGI middleware): a body over ``max_body_bytes`` -- announced by
  ``Content-Length`` or found while streaming -- is an HTTP 413 with a GraphQL-shaped
  ``PAYLOAD_TOO_LARGE`` error; the app never sees the rest of it.
- ``within_deadline`` runs one GraphQL operation under ``query_timeout_s``; ``MutationDeadline``
  (a schema extension) moves the deadline to ``mutation_timeout_s`` once the operation turns out
  to be a mutation. Running out gives a ``TIMEOUT`` error. Subscriptions are not limited.
- ``InputGuard`` (a schema extension) refuses, before graphql-core coerces the variables and
  strawberry converts the arguments, variables holding lone surrogates (``INVALID_TEXT``) and
  ``where`` trees past ``max_where_conditions`` / ``max_where_depth`` (``LIMIT_EXCEEDED``).
  Converting arguments is Python work on the event loop (~0.7 ms per ``where`` condition
  measured here: a 2.5 MB ``OR`` held every client for 36 s), so the size is counted first,
  on the raw JSON, without recursion.
- ``collector_paused``, ``ParseBudget`` and ``freeze_heap`` keep large bodies, and the cyclic
  garbage collector walking what start-up loaded, from holding the event loop for everyone;
  ``RefusalPause`` keeps a client repeating a refused request from doing the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from graphql import ArgumentNode, GraphQLError, Visitor, value_from_ast_untyped, visit
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

from mnemoql.engine import checks
from mnemoql.engine.config import Limits
from mnemoql.engine.errors import MnemoError

log = logging.getLogger("mnemoql.guards")


def _graphql_error_body(message: str, code: str) -> bytes:
    payload = {"data": None, "errors": [{"message": message, "extensions": {"code": code}}]}
    return json.dumps(payload).encode("utf-8")


class _TooLarge(Exception):
    pass


class BodyLimit:
    """ASGI middleware: refuse HTTP bodies larger than ``max_bytes`` with a 413."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = self._declared_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(send)
            return
        seen = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, watched_send)
        except _TooLarge:
            if not started:
                await self._refuse(send)

    @staticmethod
    def _declared_length(scope: Scope) -> int | None:
        for key, value in scope.get("headers", []):
            if key == b"content-length":
                try:
                    return int(value)
                except ValueError:
                    return None
        return None

    async def _refuse(self, send: Send) -> None:
        body = _graphql_error_body(
            f"the request body is larger than {self.max_bytes} bytes "
            "(MNEMOQL_LIMITS__MAX_BODY_BYTES); send less, or split a saveMany",
            "PAYLOAD_TOO_LARGE",
        )
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


# ---------------------------------------------------------------- deadlines


@dataclass(slots=True)
class _Deadline:
    timeout: asyncio.Timeout
    query_s: float
    mutation_s: float
    mutation: bool = False

    @property
    def seconds(self) -> float:
        return self.mutation_s if self.mutation else self.query_s


_CURRENT: ContextVar[_Deadline | None] = ContextVar("mnemoql_deadline", default=None)


class MutationDeadline(SchemaExtension):
    """Gives a mutation the longer ``mutation_timeout_s`` once its type is known."""

    def on_execute(self) -> Iterator[None]:
        deadline = _CURRENT.get()
        if deadline is not None and (
            self.execution_context.operation_type is OperationType.MUTATION
        ):
            deadline.mutation = True
            loop = asyncio.get_running_loop()
            deadline.timeout.reschedule(loop.time() + deadline.mutation_s)
        yield


def timeout_message(seconds: float) -> str:
    """What a caller is told when an operation ran out of time (GraphQL and MCP alike)."""
    return (
        f"the request took longer than {seconds:g} s and was stopped "
        "(MNEMOQL_LIMITS__QUERY_TIMEOUT_S / __MUTATION_TIMEOUT_S); ask for less, or retry "
        "a save with the same idempotencyKey"
    )


def timeout_result(seconds: float) -> ExecutionResult:
    error = GraphQLError(timeout_message(seconds), extensions={"code": "TIMEOUT", "zh": "请求超时"})
    return ExecutionResult(data=None, errors=[error])


async def within_deadline(
    run: Callable[[], Awaitable[ExecutionResult]], query_s: float, mutation_s: float
) -> ExecutionResult:
    """``run()`` under the query deadline (a mutation's is moved by ``MutationDeadline``)."""
    timeout = asyncio.timeout(query_s)
    deadline = _Deadline(timeout, query_s, mutation_s)
    token = _CURRENT.set(deadline)
    try:
        async with timeout:
            return await run()
    except TimeoutError:
        if not timeout.expired():
            raise
        kind = "mutation" if deadline.mutation else "query"
        log.warning("a GraphQL %s ran out of time (%g s) and was cancelled", kind, deadline.seconds)
        return timeout_result(deadline.seconds)
    finally:
        _CURRENT.reset(token)


# ---------------------------------------------------------------- inputs

_TREE_KEYS = frozenset({"AND", "OR", "NOT"})


def where_size(value: Any, stop: tuple[int, int] | None = None) -> tuple[int, int]:
    """``(conditions, depth)`` of a ``where`` value as JSON: each operator of a field filter
    counts one condition (each value of an ``in`` list one), AND / OR / NOT add a level, and a
    list of more branches than the cap is over it.
    With ``stop`` (the caps), counting ends as soon as one is passed: refusing a 2.5 MB tree
    must not cost more than accepting one at the cap."""
    max_conditions, max_depth = stop if stop is not None else (float("inf"), float("inf"))
    conditions, depth = 0, 0
    stack: list[tuple[Any, int]] = [(value, 0)]
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


# A body this large is parsed with the cyclic garbage collector kept out of it. Parsing JSON
# makes nothing but new, acyclic containers, which the collector can never free (reference
# counting frees them with the request), yet a 2.5 MB ``where`` tree (~65k tracked dicts) set
# off enough collections to triple the parse, each young collection promoting part of the tree
# towards the oldest generation and so bringing the next full collection closer. Paused, the
# tree costs one young collection after the parse (~20 ms here), and dies with its request.
# (The parse's objects are not promoted with ``gc.freeze()`` + ``gc.unfreeze()`` any more: the
# unfreeze would also give back everything ``freeze_heap`` froze.)
GC_FREE_PARSE_BYTES = 64 * 1024


@contextlib.contextmanager
def collector_paused(size: int) -> Iterator[None]:
    """Keeps the garbage collector out of the parse of a body of ``size`` bytes, if large."""
    if size < GC_FREE_PARSE_BYTES or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def freeze_heap() -> None:
    """Moves every object alive now (the embedding model, jieba's dictionary, the schema: the
    service's long-lived heap) out of the cyclic collector's sight, after collecting once.

    A full collection walks every tracked object, and one came every few seconds under load
    (requests leave small reference cycles behind): each held the event loop 130-350 ms here,
    most of it walking what start-up loaded and no collection can free. Frozen, it is skipped;
    what requests make is collected as before. ``thaw_heap`` undoes it on shutdown.
    """
    gc.collect()
    gc.freeze()


def thaw_heap() -> None:
    """Gives the frozen objects back to the collector (the service is shutting down)."""
    gc.unfreeze()


class ParseBudget:
    """A share of the event loop's time for parsing large bodies, so a client sending them
    back to back cannot hold everyone else.

    Parsing JSON holds the interpreter (~30 ms per MB here even with the collector kept out),
    and no thread can take it elsewhere. So each parse of a body over ``min_bytes`` books its
    time divided by ``share`` of wall time: the next large body, from anyone, waits (without
    blocking the loop) until that booking has passed. At ``share`` 0.05 large bodies get at
    most a twentieth of the loop, so few other requests ever arrive during one; small requests
    never wait. One 2.5 MB body costs a lone client nothing; ten in a row are spaced ~1 s
    apart quiet (a parse of ~50 ms), longer on a loaded machine, and far quicker than the
    embedder saves that much text (bench/results/hostile.md).
    """

    def __init__(self, share: float = 0.05, min_bytes: int = 1024 * 1024) -> None:
        self.share = share
        self.min_bytes = min_bytes
        self._free_at = 0.0  # loop time when the next large parse may start
        self.waited = 0  # large parses that had to wait their turn

    async def turn(self, size: int) -> None:
        """Wait until a body of ``size`` bytes may be parsed."""
        if size < self.min_bytes:
            return
        loop = asyncio.get_running_loop()
        while (wait := self._free_at - loop.time()) > 0:
            self.waited += 1
            await asyncio.sleep(wait)
        self._free_at = loop.time()

    def spent(self, size: int, seconds: float) -> None:
        """Book ``seconds`` of parsing a body of ``size`` bytes."""
        if size >= self.min_bytes:
            self._free_at = max(self._free_at, asyncio.get_running_loop().time()) + (
                seconds / self.share
            )


class RefusalPause:
    """Answers a request refused for its size (``LIMIT_EXCEEDED``) only after a pause of
    ``factor`` times what it cost (at most ``max_s``), without blocking the loop.

    Refusing is cheap but not free (a 5,000-person extraction: its JSON parse, the GraphQL
    parse and validation, ~20-40 ms of event loop here), and a client repeating it back to
    back, one at a time, would hold the loop as much as every other client together. Paused,
    such a client gets at most ``1 / (1 + factor)`` of the loop; a client that hits a cap by
    mistake waits a little longer for its error.
    """

    def __init__(self, factor: float = 3.0, max_s: float = 1.0) -> None:
        self.factor = factor
        self.max_s = max_s
        self.paused_s = 0.0  # the sum of the pauses so far

    async def after(self, codes: set[Any], started: float) -> None:
        """Pause if ``codes`` (the errors' codes) say the request was refused for its size;
        ``started`` is its ``time.perf_counter()`` at arrival."""
        if "LIMIT_EXCEEDED" not in codes:
            return
        pause = min(self.max_s, self.factor * (time.perf_counter() - started))
        self.paused_s += pause
        await asyncio.sleep(pause)


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


def check_inputs(document: Any, variables: dict[str, Any] | None, limits: Limits) -> None:
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
