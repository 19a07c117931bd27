"""How the edge guards refuse a request before the app has seen it: one coded error, shaped for
the route it was sent to.

``/graphql`` gets a GraphQL-shaped body (``{"data": null, "errors": [{..., "extensions":
{"code": ...}}]}``), ``/mcp`` a JSON-RPC error with the code at the start of its message (the
shape of the MCP SDK's own refusals), anything else a small JSON object. A websocket is refused
before it is accepted: with the HTTP answer itself where the server supports ASGI's websocket
denial response (uvicorn does), else with a close, which the server turns into a 403.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from starlette.types import Scope, Send

MCP_PATH = "/mcp"


def graphql_error_body(message: str, code: str) -> bytes:
    payload = {"data": None, "errors": [{"message": message, "extensions": {"code": code}}]}
    return json.dumps(payload).encode("utf-8")


def refusal_body(path: str, code: str, message: str) -> bytes:
    """The body of a refusal with ``code`` on the route at ``path``."""
    if path == MCP_PATH or path.startswith(MCP_PATH + "/"):
        rpc = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32600, "message": f"{code}: {message}"},
        }
        return json.dumps(rpc).encode("utf-8")
    if path.startswith("/graphql"):
        return graphql_error_body(message, code)
    return json.dumps({"error": {"code": code, "message": message}}).encode("utf-8")


async def refuse(
    scope: Scope,
    send: Send,
    status: int,
    code: str,
    message: str,
    headers: Sequence[tuple[bytes, bytes]] = (),
) -> None:
    """Answer ``status`` with a coded error, for an HTTP request or a websocket not accepted."""
    body = refusal_body(str(scope.get("path", "")), code, message)
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
