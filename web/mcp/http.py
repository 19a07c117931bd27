"""The streamable HTTP transport at ``/mcp``: the same bearer tokens as ``/graphql``, then the
SDK's session manager.

- A token picks the caller's memory space and scopes (``web.auth``); without tokens configured
  the service is open, as GraphQL is (one ``default`` space, every scope, loopback only). A
  missing or unknown token is a 401 with a JSON-RPC error and ``WWW-Authenticate``.
- An MCP session (``Mcp-Session-Id``, protocol versions with the initialize handshake) is one
  evidence session, ``mcp-<session id>``; the SDK ties it to the token that opened it, so another
  token cannot continue it. A stateless request (protocol 2026-07-28) carries no session: its
  HTTP connection stands for one (``mcp-conn:<peer>``: the SDK client keeps one keep-alive
  connection per client), each search also names its session for callers that reconnect, and
  a follow-up with a cursor continues in the cursor's session.
- Host and Origin are checked before the request gets here, as for every route
  (``web.guards.hosts``: DNS rebinding, CORS); the SDK's own check is off.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator
from importlib.metadata import version
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from mnemoql.engine.config import Settings
from mnemoql.engine.errors import Unauthorized
from mnemoql.engine.locale_choice import preferred
from mnemoql.engine.messages import DEFAULT_LOCALE
from mnemoql.engine.spaces import Spaces
from mnemoql.web.auth import OPEN_GRANT, Grant, TokenTable, bearer, grant_of
from mnemoql.web.mcp.mount import send_error
from mnemoql.web.mcp.server import Caller, build_server

SESSION_HEADER = "mcp-session-id"


def identify(ctx: ServerRequestContext[Any, Any]) -> Caller:
    """The caller of an HTTP request: the grant ``McpHttp`` attached, and its MCP session."""
    request = ctx.request
    grant = grant_of(request.scope) if request is not None else None
    if grant is None:
        raise Unauthorized("missing or invalid bearer token", zh="缺少或无效的访问令牌")
    sid = request.headers.get(SESSION_HEADER) if request is not None else None
    # each request may name its language; without Accept-Language the server's (None)
    header = request.headers.get("accept-language") if request is not None else None
    locale = preferred(header, DEFAULT_LOCALE) if header else None
    if sid:
        return Caller(grant.space, grant.scopes, f"mcp-{sid}", locale=locale)
    peer = request.client if request is not None else None
    fallback = f"mcp-conn:{peer.host}:{peer.port}" if peer is not None else None
    return Caller(grant.space, grant.scopes, None, fallback=fallback, locale=locale)


def _principal(token: str, grant: Grant) -> AuthenticatedUser:
    """The SDK's view of a token: a session opened with it answers only to it."""
    digest = hashlib.sha256(token.encode("utf-8")).hexdigest()
    access = AccessToken(
        token=digest, client_id=f"token-{digest[:16]}", scopes=sorted(grant.scopes)
    )
    return AuthenticatedUser(access)


class McpHttp:
    """The ASGI app behind ``/mcp`` once the SDK is loaded (``web.mcp.mount`` routes to it)."""

    def __init__(self, settings: Settings, tokens: TokenTable, spaces: Spaces) -> None:
        self.tokens = tokens
        server = build_server(
            spaces, identify, settings.limits, settings.mcp.locale or settings.locale,
            version("mnemoql"),
        )
        self.manager = StreamableHTTPSessionManager(
            server,
            security_settings=None,  # web.guards.hosts checks Host and Origin
            max_request_body_size=settings.limits.max_body_bytes,
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.tokens.open:
            scope.setdefault("state", {})["grant"] = OPEN_GRANT
        else:
            token = bearer(Headers(scope=scope).get("authorization"))
            grant = self.tokens.lookup(token)
            if token is None or grant is None:
                await _unauthenticated(send)
                return
            scope.setdefault("state", {})["grant"] = grant
            scope["user"] = _principal(token, grant)
        await self.manager.handle_request(scope, receive, send)


async def _unauthenticated(send: Send) -> None:
    message = (
        "UNAUTHENTICATED: missing or invalid bearer token: send 'Authorization: Bearer <token>'"
    )
    await send_error(send, 401, -32001, message, [(b"www-authenticate", b'Bearer realm="mnemoql"')])
