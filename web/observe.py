"""One HTTP request as operators see it: its request id, what it ran, how it ended, how long.

``Observe`` is the outermost middleware. For every HTTP request it

- picks the request id: the client's ``X-Request-Id`` when it is sane (1-128 characters of
  letters, digits and ``-_.:@/+=``; a proxy's or a client's own id then joins the logs of both),
  else a fresh one; it answers with it in ``X-Request-Id`` and every log line written while the
  request runs carries it (``web.logs``);
- opens the request's span when tracing is on (``web.tracing``);
- records the request in the Prometheus metrics (``web.metrics``): by route, method and status,
  and, for GraphQL, by operation and error code (``Observation``, filled in by the GraphQL view).

Websockets get a request id for their log lines too; they are not timed (a subscription lasts
as long as the client wants). ``mnemoql serve`` puts one more ``Observe`` around the app while it
starts (``web.starting``), so that its 503s have an id too; the inner one then stands aside.
An exception that escapes the app is logged here, with the request id, and answered 500.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from graphql import FieldNode, get_operation_ast
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from strawberry.extensions import SchemaExtension

from mnemoql.web import metrics, tracing

log = logging.getLogger("mnemoql")

REQUEST_ID_HEADER = "x-request-id"
_SANE_ID = re.compile(r"[A-Za-z0-9\-_.:@/+=]{1,128}")


@dataclass(slots=True)
class Observation:
    """What one request did, filled in as it runs (child tasks share the object)."""

    request_id: str
    operation: str | None = None  # e.g. "query search" (GraphQL)
    codes: list[str] = field(default_factory=list)  # error codes, in order


_current: contextvars.ContextVar[Observation | None] = contextvars.ContextVar(
    "mnemoql_observation", default=None
)


def current() -> Observation | None:
    """The observation of the request running now, if any."""
    return _current.get()


def request_id() -> str | None:
    observation = _current.get()
    return observation.request_id if observation is not None else None


def pick_request_id(given: str | None) -> str:
    """The client's id when sane, else a new one (32 hex digits)."""
    if given is not None and _SANE_ID.fullmatch(given):
        return given
    return uuid.uuid4().hex


def _given_id(scope: Scope) -> str | None:
    for key, value in scope.get("headers", []):
        if key == b"x-request-id":
            return bytes(value).decode("latin-1")
    return None


NOT_RUN = "(not run)"  # a GraphQL request refused before its operation ran


class OperationLabel(SchemaExtension):
    """Names the running GraphQL operation for the metrics: its type and first root field
    (``query search``). Only once the document has validated, so the label comes from the
    schema's own fields, never from whatever a client made up."""

    def on_execute(self) -> Iterator[None]:
        observation = current()
        context = self.execution_context
        document = context.graphql_document
        if observation is not None and observation.operation is None and document is not None:
            operation = get_operation_ast(document, context.operation_name)
            if operation is not None:
                first = next(
                    (s for s in operation.selection_set.selections if isinstance(s, FieldNode)),
                    None,
                )
                root = first.name.value if first is not None else "(fragment)"
                observation.operation = f"{operation.operation.value} {root}"
        yield


def route_of(path: str) -> str:
    """The route label of a path: one of the service's routes, else ``other`` (a bounded set,
    whatever paths clients try)."""
    if path in metrics.ROUTES:
        return path
    return "/static" if path.startswith("/static/") else "other"


async def _internal_error(send: Send) -> None:
    error = {"message": "Internal server error", "extensions": {"code": "INTERNAL_SERVER_ERROR"}}
    body = json.dumps({"errors": [error]}).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 500, "headers": head})
    await send({"type": "http.response.body", "body": body})


class Observe:
    """ASGI middleware: request id, span and metrics for each request (see the module doc)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or _current.get() is not None:
            await self.app(scope, receive, send)  # not a request, or observed further out
            return
        observation = Observation(pick_request_id(_given_id(scope)))
        token = _current.set(observation)
        try:
            if scope["type"] == "websocket":
                await self.app(scope, receive, send)
            else:
                await self._http(scope, receive, send, observation)
        finally:
            _current.reset(token)

    async def _http(
        self, scope: Scope, receive: Receive, send: Send, observation: Observation
    ) -> None:
        route = route_of(scope.get("path", ""))
        method = scope.get("method", "GET")
        status: int | None = None  # until the answer starts
        began = time.perf_counter()

        async def answer(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                MutableHeaders(scope=message)[REQUEST_ID_HEADER] = observation.request_id
            await send(message)

        with tracing.request_span(scope, route, observation.request_id) as span:
            try:
                await self.app(scope, receive, answer)
            except Exception:
                # logged here, with the request id, and answered here (with it too)
                log.exception("%s %s failed", method, route)
                if status is None:
                    await _internal_error(answer)
            finally:
                seconds = time.perf_counter() - began
                code = status or 500
                metrics.http_request(route, method, code, seconds)
                if route == "/graphql" and (observation.operation or observation.codes):
                    first = observation.codes[0] if observation.codes else "OK"
                    name = observation.operation or NOT_RUN
                    metrics.operation("graphql", name, first, seconds)
                tracing.finish_request(span, code, observation.operation, observation.codes)
