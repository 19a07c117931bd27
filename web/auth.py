"""Bearer tokens: who may use ``/graphql``, in which memory space, with which scopes.

With tokens configured (``MNEMOQL_AUTH__TOKENS`` or a tokens file), every GraphQL request needs
``Authorization: Bearer <token>``; the GraphiQL page itself (a ``GET /graphql`` without a query),
the explorer, static files, ``/healthz`` and ``/readyz`` stay public. A missing or unknown token
is an HTTP 401 with a GraphQL-shaped ``UNAUTHENTICATED`` error. Scopes are checked per operation
by ``resolvers.context.ScopeGuard``.

With no tokens the service is open -- one ``default`` space, every scope -- and ``mnemoql serve``
refuses to bind anything but a loopback address unless told ``--allow-public``.

Tokens are compared by their SHA-256 digest and never logged, echoed or put in an error.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from mnemoql.engine.config import Settings
from mnemoql.engine.service_settings import AuthSettings, TokenGrant
from mnemoql.web.graphql_http import GRAPHQL_RESPONSE, content_type, negotiate

log = logging.getLogger("mnemoql.auth")

GRAPHQL_PATH = "/graphql"
WS_UNAUTHENTICATED = 4401


@dataclass(frozen=True, slots=True)
class Grant:
    """What a request may do: its memory space and scopes; ``caller`` names the token (a
    digest, not the token) for its default session, None in open mode."""

    space: str
    scopes: frozenset[str]
    caller: str | None = None


OPEN_GRANT = Grant("default", frozenset({"read", "write"}))


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def caller_id(token: str) -> str:
    """A short public name of a token (its default session is ``caller:<id>``): a digest of
    its own, so it says nothing about the digest tokens are matched by."""
    return hashlib.sha256(b"mnemoql-caller\0" + token.encode("utf-8")).hexdigest()[:16]


class TokenTable:
    """The configured tokens, by digest. Empty means open access (loopback only)."""

    def __init__(self, grants: list[TokenGrant]) -> None:
        self._by_digest: dict[bytes, Grant] = {}
        for n, g in enumerate(grants, 1):
            digest = _digest(g.token.get_secret_value())
            grant = Grant(g.space, frozenset(g.scopes), caller_id(g.token.get_secret_value()))
            if self._by_digest.get(digest, grant) != grant:
                raise ValueError(f"token #{n} is configured twice with different spaces or scopes")
            self._by_digest[digest] = grant

    @classmethod
    def from_settings(cls, auth: AuthSettings) -> TokenTable:
        """``auth.tokens`` plus those of ``auth.tokens_file``.

        Raises:
            ValueError: the file is missing or not a JSON list of tokens (the message names the
                file and the problem, never a token).
        """
        grants = list(auth.tokens)
        if auth.tokens_file is not None:
            grants.extend(read_tokens_file(auth.tokens_file))
        return cls(grants)

    @property
    def open(self) -> bool:
        return not self._by_digest

    @property
    def spaces(self) -> set[str]:
        return {g.space for g in self._by_digest.values()}

    def lookup(self, token: str | None) -> Grant | None:
        if not token:
            return None
        return self._by_digest.get(_digest(token))


_GRANTS = TypeAdapter(list[TokenGrant])


def read_tokens_file(path: Path) -> list[TokenGrant]:
    """A JSON list of ``{"token", "space", "scopes"}`` objects (``{"tokens": [...]}`` also)."""
    try:
        raw: Any = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read the tokens file {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise ValueError(f"the tokens file {path} is not JSON: {exc}") from None
    if isinstance(raw, dict) and "tokens" in raw:
        raw = raw["tokens"]
    try:
        return _GRANTS.validate_python(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(f"the tokens file {path} is invalid: {problems}") from None


def bearer(value: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` value."""
    if not value:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def token_from_params(params: Mapping[str, object] | None) -> str | None:
    """A token from a websocket ``connection_init`` payload: ``{"Authorization": "Bearer …"}``
    (any case) or ``{"token": "…"}``."""
    if not params:
        return None
    for key, value in params.items():
        if not isinstance(value, str):
            continue
        if key.lower() == "authorization":
            return bearer(value)
        if key == "token":
            return value.strip() or None
    return None


def grant_of(scope: Scope) -> Grant | None:
    """The grant ``BearerAuth`` attached to this request, if any."""
    state = scope.get("state") or {}
    grant = state.get("grant")
    return grant if isinstance(grant, Grant) else None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _renders_ide(scope: Scope) -> bool:
    """GET /graphql without a query renders GraphiQL (a public page; its requests need tokens)."""
    if scope.get("method") != "GET":
        return False
    query = bytes(scope.get("query_string", b"")).decode("latin-1")
    return not any(part.split("=", 1)[0] == "query" for part in query.split("&"))


_UNAUTHENTICATED_MESSAGE = "missing or invalid bearer token: send 'Authorization: Bearer <token>'"
_UNAUTHENTICATED_ERROR = {
    "message": _UNAUTHENTICATED_MESSAGE,
    "extensions": {
        "code": "UNAUTHENTICATED",
        "en": _UNAUTHENTICATED_MESSAGE,
        "zh": "缺少或无效的访问令牌",
    },
}


async def send_unauthenticated(send: Send, accept: str | None = None) -> None:
    """A 401 in the media type the client asked for (``web.graphql_http``): with
    ``application/graphql-response+json`` a request error has no ``data`` entry."""
    media = negotiate(accept)
    payload: dict[str, Any] = {"errors": [_UNAUTHENTICATED_ERROR]}
    if media != GRAPHQL_RESPONSE:
        payload = {"data": None, **payload}
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", content_type(media).encode()),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="mnemoql"'),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BearerAuth:
    """ASGI middleware: attaches the caller's ``Grant`` to ``/graphql`` requests, or refuses.

    Open mode (no tokens) grants ``OPEN_GRANT`` to everyone. A websocket without an
    ``Authorization`` header may still authenticate in its ``connection_init`` payload
    (``MemoryGraphQL.on_ws_connect``); one with a bad header is closed at once.
    """

    def __init__(self, app: ASGIApp, tokens: TokenTable) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in {"http", "websocket"} or scope.get("path") != GRAPHQL_PATH:
            await self.app(scope, receive, send)
            return
        if self.tokens.open:
            scope.setdefault("state", {})["grant"] = OPEN_GRANT
            await self.app(scope, receive, send)
            return
        header = _header(scope, b"authorization")
        grant = self.tokens.lookup(bearer(header))
        if grant is not None:
            scope.setdefault("state", {})["grant"] = grant
        elif scope["type"] == "websocket":
            if header is not None:
                log.info("websocket refused: invalid bearer token")
                await send({"type": "websocket.close", "code": WS_UNAUTHENTICATED})
                return
        elif not _renders_ide(scope):
            client = scope.get("client")
            log.info(
                "unauthenticated %s %s from %s (%s)",
                scope.get("method"),
                GRAPHQL_PATH,
                client[0] if client else "?",
                "invalid token" if header else "no token",
            )
            await send_unauthenticated(send, _header(scope, b"accept"))
            return
        await self.app(scope, receive, send)


# ---------------------------------------------------------------- binding


class PublicBindRefused(ValueError):
    """Serving a non-loopback address with no tokens configured."""


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and ``localhost``; anything else (0.0.0.0, ::, a name) is public."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_bind(settings: Settings, tokens: TokenTable) -> None:
    """Refuse a public bind without tokens unless ``allow_public`` is set.

    Raises:
        PublicBindRefused: with what to do instead.
    """
    if tokens.open and not is_loopback(settings.host) and not settings.allow_public:
        raise PublicBindRefused(
            f"refusing to serve on {settings.host}: no access tokens are configured, so anyone "
            "who can reach this address could read and change the memory. Configure tokens "
            "(MNEMOQL_AUTH__TOKENS or MNEMOQL_AUTH__TOKENS_FILE), bind 127.0.0.1, or pass "
            "--allow-public (MNEMOQL_ALLOW_PUBLIC=1) if another layer guards access."
        )
