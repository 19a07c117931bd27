"""GraphQL over HTTP (the GraphQL-over-HTTP spec): media types, status codes, JSON errors.

- ``Accept`` picks the response type: ``application/graphql-response+json`` when the client
  lists it (at least as high as ``application/json``), else ``application/json`` -- also for
  ``*/*`` or no ``Accept`` at all. Both are sent with ``charset=utf-8``.
- With ``application/graphql-response+json`` a *request error* -- the document does not parse
  or validate, a variable does not fit its type, an unknown ``operationName``, a refused token
  -- is a 4xx (401 / 403 / 400) whose body has ``errors`` and no ``data``. With
  ``application/json`` it stays a 200 with ``"data": null``, as legacy clients expect.
  Execution errors (a field failed; ``data`` is there) are a 200 either way.
- A mutation over GET is a 405 with ``Allow: POST``; a subscription over HTTP is the request
  error ``WEBSOCKET_REQUIRED`` (subscriptions run over the websocket at the same path).
- A persisted query (Apollo's APQ, ``web.persisted``) the process does not know is the request
  error ``PERSISTED_QUERY_NOT_FOUND`` (a 400 with ``application/graphql-response+json``);
  Apollo's link then sends the query text with its hash.
- Every error the transport itself raises (bad JSON, a wrong method or content type) has a
  JSON body ``{"errors": [{"message", "extensions": {"code"}}]}``, never plain text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from cross_web import HTTPException
from graphql import GraphQLError
from starlette.responses import Response
from strawberry.http import GraphQLHTTPResponse
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType

from mnemoql.engine.messages import CATALOGUE, Locale, message
from mnemoql.schema.errors import BAD_REQUEST, PARSE_FAILED, VALIDATION_FAILED, request_error

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"
WEBSOCKET_REQUIRED = "WEBSOCKET_REQUIRED"
METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"

# A response without data whose every error is one of these is a request error.
REQUEST_ERROR_STATUS: Mapping[str, int] = {
    PARSE_FAILED: 400,
    VALIDATION_FAILED: 400,
    "BAD_USER_INPUT": 400,
    BAD_REQUEST: 400,
    WEBSOCKET_REQUIRED: 400,
    "UNAUTHENTICATED": 401,
    "FORBIDDEN": 403,
    "STORE_UNAVAILABLE": 503,
    "PERSISTED_QUERY_NOT_FOUND": 400,  # web.persisted: Apollo's link then sends the query
}
_TRANSPORT_CODES = {400: BAD_REQUEST, 404: "NOT_FOUND", 405: METHOD_NOT_ALLOWED, 415: BAD_REQUEST}


class MethodRefused(HTTPException):
    """A 405 that names the methods the operation may use (``Allow``)."""

    def __init__(self, reason: str, allow: str) -> None:
        super().__init__(405, reason)
        self.allow = allow


def _media_ranges(accept: str) -> Iterable[tuple[str, float]]:
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if media:
            yield media.lower(), q


def negotiate(accept: str | None) -> str:
    """The response media type for an ``Accept`` header (see the module docstring)."""
    best: dict[str, float] = {GRAPHQL_RESPONSE: 0.0, JSON: 0.0}
    for media, q in _media_ranges(accept or ""):
        if media == GRAPHQL_RESPONSE:
            best[GRAPHQL_RESPONSE] = max(best[GRAPHQL_RESPONSE], q)
        elif media in (JSON, "application/*", "*/*"):
            best[JSON] = max(best[JSON], q)
    if best[GRAPHQL_RESPONSE] > 0 and best[GRAPHQL_RESPONSE] >= best[JSON]:
        return GRAPHQL_RESPONSE
    return JSON


def content_type(media: str) -> str:
    return f"{media}; charset=utf-8"


def request_error_status(body: Mapping[str, Any]) -> int | None:
    """The status of a request error, or None when the body is an execution result."""
    errors = body.get("errors") or []
    if body.get("data") is not None or not errors:
        return None
    if any(e.get("path") for e in errors):
        return None
    codes = [(e.get("extensions") or {}).get("code") for e in errors]
    statuses = [REQUEST_ERROR_STATUS.get(c) for c in codes if isinstance(c, str)]
    if len(statuses) != len(errors) or None in statuses:
        return None
    return max(s for s in statuses if s is not None)


def shape(body: GraphQLHTTPResponse, media: str) -> int:
    """The status for ``body`` in ``media``; drops ``data`` from a request error's body when
    answering ``application/graphql-response+json``."""
    status = request_error_status(body)
    if status is None or media != GRAPHQL_RESPONSE:
        return 200
    body.pop("data", None)
    return status


# the catalogue key of a refusal's English reason (``http.*``): its Chinese wording
_REASONS = {t["en"]: k for k, t in CATALOGUE.items() if k.startswith("http.") and k != "http.other"}


def reason_zh(reason: str) -> str:
    """The Chinese wording of an HTTP refusal's English ``reason`` (a reason we do not know,
    from a library, is led by a Chinese sentence and kept as it is)."""
    key = _REASONS.get(reason)
    return message(key, "zh") if key else message("http.other", "zh", detail=reason)


def error_response(
    status: int,
    reason: str,
    media: str,
    *,
    code: str | None = None,
    allow: str | None = None,
    locale: Locale = "en",
) -> Response:
    """A transport-level refusal as a GraphQL-shaped JSON body: the message in ``locale``,
    both languages in ``extensions.en`` / ``extensions.zh``."""
    code = code or _TRANSPORT_CODES.get(status, BAD_REQUEST)
    zh = reason_zh(reason)
    extensions = {"code": code, "en": reason, "zh": zh}
    body = {"errors": [{"message": zh if locale == "zh" else reason, "extensions": extensions}]}
    headers = {"Allow": allow} if allow else None
    return Response(
        json.dumps(body, ensure_ascii=False),
        status_code=status,
        headers=headers,
        media_type=content_type(media),
    )


def websocket_required(operation: OperationType) -> ExecutionResult:
    """The request error of a subscription sent over plain HTTP."""
    error: GraphQLError = request_error(
        f"a {operation.value} streams its results, which plain HTTP does not do here: open a "
        "websocket to /graphql (protocol graphql-transport-ws; GraphiQL and gql do this) and "
        "send it there",
        WEBSOCKET_REQUIRED,
    )
    return ExecutionResult(data=None, errors=[error])


def unknown_operation(reason: str) -> ExecutionResult:
    return ExecutionResult(data=None, errors=[request_error(reason, BAD_REQUEST)])
