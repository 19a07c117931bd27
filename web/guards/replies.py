"""How the edge guards refuse a request before the app has seen it: one coded error, shaped for
the route it was sent to.

``/graphql`` gets a GraphQL-shaped body (``{"data": null, "errors": [{..., "extensions":
{"code": ...}}]}``), ``/mcp`` a JSON-RPC error with the code at the start of its message (the
shape of the MCP SDK's own refusals), anything else a small JSON object. A websocket is refused
before it is accepted: with the HTTP answer itself where the server supports ASGI's websocket
denial response (uvicorn does), else with a close, which the server turns into a 403.

A refusal is written in English and Chinese (``zh``); the body carries the one of the
request's ``Accept-Language`` (else the service's ``MNEMOQL_LOCALE``, kept on ``app.state``),
and a GraphQL body both, as ``extensions.en`` / ``extensions.zh`` like every other error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from starlette.types import Scope, Send

from mnemoql.engine.locale_choice import configured_locale, preferred
from mnemoql.engine.messages import Locale

MCP_PATH = "/mcp"


def scope_locale(scope: Scope) -> Locale:
    """The language of a request the app has not seen yet: its ``Accept-Language``, else the
    service's setting (``app.state.locale``; ``MNEMOQL_LOCALE`` outside an app)."""
    state = getattr(scope.get("app"), "state", None)
    default = getattr(state, "locale", None) or configured_locale()
    header = next((v for k, v in scope.get("headers", []) if k == b"accept-language"), b"")
    return preferred(header.decode("latin-1"), default)


def graphql_error_body(message: str, code: str, en: str, zh: str) -> bytes:
    extensions = {"code": code, "en": en, "zh": zh}
    payload = {"data": None, "errors": [{"message": message, "extensions": extensions}]}
    return json.dumps(payload, ensure_ascii=False).encode("utf-8")


def refusal_body(path: str, code: str, en: str, zh: str, locale: Locale = "en") -> bytes:
    """The body of a refusal with ``code`` on the route at ``path``, in ``locale``."""
    message = zh if locale == "zh" else en
    if path == MCP_PATH or path.startswith(MCP_PATH + "/"):
        rpc = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": f"{code}: {message}"},
        }
        return json.dumps(rpc, ensure_ascii=False).encode("utf-8")
    if path.startswith("/graphql"):
        return graphql_error_body(message, code, en, zh)
    body = {"error": {"code": code, "message": message}}
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


async def refuse(
    scope: Scope,
    send: Send,
    status: int,
    code: str,
    message: str,
    headers: Sequence[tuple[bytes, bytes]] = (),
    *,
    zh: str,
) -> None:
    """Answer ``status`` with a coded error (``message`` in English, ``zh`` in Chinese), for an
    HTTP request or a websocket not accepted."""
    path = str(scope.get("path", ""))
    body = refusal_body(path, code, message, zh, scope_locale(scope))
    head = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *headers,
    ]
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": body})
    elif "websocket.http.response" in scope.get("extensions", {}):
        await send({"type": "websocket.http.response.start", "status": status, "headers": head})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008})
