"""Which hosts and origins may reach the service: the defence against DNS rebinding, on every
route (``/graphql`` over HTTP and websocket, ``/mcp``, the pages).

A web page the user visits can rebind its own name to 127.0.0.1 and then send requests to the
service as if it were on the page's origin: the browser sees no cross-origin request, so CORS
does not stop it. What still gives it away is the ``Host`` header (the attacker's name), and the
``Origin`` header of a browser's request (the attacker's page). So, on every request:

- **Host.** On a loopback bind only loopback names are accepted (``localhost``, 127.0.0.0/8,
  ``::1``; any port), plus the names in ``MNEMOQL_HTTP__ALLOWED_HOSTS`` (``"*.example.com"``
  matches every subdomain; ``"*"`` any name). On another bind every name is accepted unless
  that setting names some. Otherwise: HTTP 421 ``HOST_NOT_ALLOWED``.
- **Origin.** A request carrying one (browsers send it on cross-origin requests, on every POST
  and on every websocket) must come from the service's own origin (the ``Origin`` names the same
  host and port as ``Host``) or from one listed in ``MNEMOQL_HTTP__CORS_ORIGINS``. Otherwise:
  HTTP 403 ``ORIGIN_NOT_ALLOWED``. Clients other than browsers send no ``Origin`` and are not
  affected.

Websockets are refused the same way before they are accepted (websockets have no CORS, so the
``Origin`` check is their only guard). The MCP SDK's own check is off: this one covers ``/mcp``
too. ``cors`` builds starlette's ``CORSMiddleware`` for the listed origins, so their browsers can
read the answers (a preflight is answered, not a 405).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from mnemoql.web.auth import is_loopback
from mnemoql.web.guards.replies import refuse

log = logging.getLogger("mnemoql.guards")

_DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}
# what a browser on a listed origin may send and read (MCP's session headers among them)
CORS_METHODS = ["GET", "POST", "DELETE", "OPTIONS"]
CORS_EXPOSED = ["mcp-session-id", "mcp-protocol-version", "retry-after", "www-authenticate",
                "x-request-id"]  # fmt: skip


def split_host(value: str) -> tuple[str, int | None]:
    """``("evil.example", 8000)`` for ``"evil.example:8000"``; ``("::1", None)`` for ``"[::1]"``;
    the name lower-cased, without a trailing dot. A malformed port gives ``("", None)``."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif value.count(":") == 1:
        name, _, port_text = value.partition(":")
    else:
        name, port_text = value, ""
    if port_text and not port_text.isdigit():
        return "", None
    return name.rstrip("."), int(port_text) if port_text else None


def _origin(origin: str) -> str:
    """An origin as browsers write it: lower-case, no trailing slash."""
    return origin.strip().rstrip("/").lower()


class HostRule:
    """The accepted ``Host`` names and ``Origin`` values of one service."""

    def __init__(self, *, loopback_bind: bool, allowed_hosts: Iterable[str],
                 cors_origins: Iterable[str]) -> None:  # fmt: skip
        self.allowed_hosts = [h.strip().lower().rstrip(".") for h in allowed_hosts if h.strip()]
        self.any_host = "*" in self.allowed_hosts or (not loopback_bind and not self.allowed_hosts)
        self.cors_origins = {_origin(o) for o in cors_origins if o.strip()}
        self.any_origin = "*" in self.cors_origins

    def host_allowed(self, header: str | None) -> bool:
        if self.any_host:
            return True
        if not header:
            return False
        name, _ = split_host(header)
        if not name:
            return False
        if is_loopback(name):
            return True
        for allowed in self.allowed_hosts:
            if allowed.startswith("*.") and name.endswith(allowed[1:]):
                return True
            if name == allowed:
                return True
        return False

    def origin_allowed(self, origin: str | None, host: str | None, scheme: str) -> bool:
        """No ``Origin`` (not a browser), the service's own, or a listed one."""
        if origin is None:
            return True
        normal = _origin(origin)
        if self.any_origin or normal in self.cors_origins:
            return True
        if normal == "null" or not host:
            return False
        parts = urlsplit(normal)
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
            return False
        try:
            origin_port = parts.port or _DEFAULT_PORTS[parts.scheme]
        except ValueError:
            return False
        name, port = split_host(host)
        own_port = port or _DEFAULT_PORTS.get(scheme, 80)
        return (parts.hostname.rstrip("."), origin_port) == (name, own_port)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class HostGuard:
    """ASGI middleware: refuses requests and websockets whose ``Host`` or ``Origin`` the
    ``HostRule`` does not accept."""

    def __init__(self, app: ASGIApp, rule: HostRule) -> None:
        self.app = app
        self.rule = rule

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in {"http", "websocket"}:
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        if not self.rule.host_allowed(host):
            log.info("refused %s %s: Host %r is not allowed", scope["type"], scope.get("path"),
                     host)  # fmt: skip
            message = (
                f"the Host {host!r} is not one this service answers to (DNS rebinding "
                "protection); use http://127.0.0.1 or localhost, or list the name in "
                "MNEMOQL_HTTP__ALLOWED_HOSTS"
            )
            await refuse(
                scope,
                send,
                421,
                "HOST_NOT_ALLOWED",
                message,
                zh=(
                    f"本服务不应答 Host {host!r}（防 DNS 重绑定）；请用 http://127.0.0.1 或 "
                    "localhost，或把该名称加入 MNEMOQL_HTTP__ALLOWED_HOSTS"
                ),
            )
            return
        origin = _header(scope, b"origin")
        if not self.rule.origin_allowed(origin, host, str(scope.get("scheme", "http"))):
            log.info("refused %s %s: Origin %r is not allowed", scope["type"], scope.get("path"),
                     origin)  # fmt: skip
            message = (
                f"requests from the web origin {origin!r} are not allowed; list it in "
                "MNEMOQL_HTTP__CORS_ORIGINS to let its pages use this service"
            )
            await refuse(
                scope,
                send,
                403,
                "ORIGIN_NOT_ALLOWED",
                message,
                zh=(
                    f"不允许来自网页来源 {origin!r} 的请求；把它加入 MNEMOQL_HTTP__CORS_ORIGINS "
                    "后，其页面才能使用本服务"
                ),
            )
            return
        await self.app(scope, receive, send)


def cors(origins: Iterable[str]) -> list[Middleware]:
    """starlette's ``CORSMiddleware`` for ``origins`` (none: no middleware at all)."""
    listed = [o.strip().rstrip("/") for o in origins if o.strip()]
    if not listed:
        return []
    return [
        Middleware(
            CORSMiddleware,
            allow_origins=listed,
            allow_methods=CORS_METHODS,
            allow_headers=["*"],  # mirrored back: Authorization, content-type, MCP's headers
            expose_headers=CORS_EXPOSED,
            max_age=600,
        )
    ]
