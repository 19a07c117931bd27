"""The errors of the Python API: one hierarchy for the in-process ``Memory`` and the ``Client``.

Every class of ``mnemoql.engine.errors`` is re-exported with its stable ``code`` (the GraphQL
``extensions.code``): ``Memory`` raises them as the engine does, and ``Client`` raises the same
class for the same code from a served memory, so ``except mnemoql.NotFound`` works with both.
What only a client meets is added below ``ClientError``::

    MnemoError                  every code of mnemoql.engine.errors (BAD_USER_INPUT, NOT_FOUND,
    │                           CURSOR_INVALID, UNAUTHENTICATED, FORBIDDEN, ...)
    └── ClientError             the request did not get a coded answer of the memory
        ├── Unreachable         UNREACHABLE        no answer: refused, reset or timed out
        └── ServerError         (the server's code) a coded error no class here stands for:
                                GRAPHQL_VALIDATION_FAILED, TIMEOUT, INTERNAL_SERVER_ERROR, ...

``error.code`` is the stable code, ``error.message`` the message in the memory's or client's
language (``locale=``, else ``MNEMOQL_LOCALE``), ``error.en`` and ``error.zh`` both languages and
``error.details`` the rest of the extensions (``argument``, ``limit``, ...).
"""

from __future__ import annotations

from typing import Any

from mnemoql.engine.errors import (
    ChainBroken,
    ChainExhausted,
    ConceptNotOffered,
    Conflict,
    CursorError,
    CursorExpired,
    CursorInvalid,
    CursorSession,
    EmbeddingDimension,
    ExtractionInvalid,
    Forbidden,
    Forgotten,
    InvalidId,
    InvalidInput,
    InvalidText,
    LimitExceeded,
    MetaMismatch,
    MissingApiKey,
    MnemoError,
    NoPosition,
    NotFound,
    OutOfRange,
    ResetSeenMisuse,
    RevectorizeFailed,
    StoreUnavailable,
    TimeHintInvalid,
    Unauthorized,
    UpstreamFailed,
)

__all__ = [
    "ChainBroken",
    "ChainExhausted",
    "ClientError",
    "ConceptNotOffered",
    "Conflict",
    "CursorError",
    "CursorExpired",
    "CursorInvalid",
    "CursorSession",
    "EmbeddingDimension",
    "ExtractionInvalid",
    "Forbidden",
    "Forgotten",
    "InvalidId",
    "InvalidInput",
    "InvalidText",
    "LimitExceeded",
    "MetaMismatch",
    "MissingApiKey",
    "MnemoError",
    "NoPosition",
    "NotFound",
    "OutOfRange",
    "ResetSeenMisuse",
    "RevectorizeFailed",
    "ServerError",
    "StoreUnavailable",
    "TimeHintInvalid",
    "Unauthorized",
    "Unreachable",
    "UpstreamFailed",
    "error_for",
]


class ClientError(MnemoError):
    """A call of ``Client`` / ``AsyncClient`` that got no coded answer of the memory itself."""

    code = "CLIENT_ERROR"


class Unreachable(ClientError):
    """The server did not answer: nothing listens there, the connection broke, or it timed
    out. A save may or may not have landed: retry it with the same ``idempotency_key``."""

    code = "UNREACHABLE"


class ServerError(ClientError):
    """A coded error of the server that no class here stands for (``.code`` is the server's:
    ``GRAPHQL_VALIDATION_FAILED``, ``TIMEOUT``, ``INTERNAL_SERVER_ERROR``, ...)."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message, **details)
        self.code = code  # type: ignore[misc]  # the server's code, per instance


def _classes(base: type[MnemoError]) -> dict[str, type[MnemoError]]:
    found: dict[str, type[MnemoError]] = {}
    for cls in base.__subclasses__():
        if not issubclass(cls, ClientError):
            found.setdefault(cls.code, cls)
            found.update({k: v for k, v in _classes(cls).items() if k not in found})
    return found


def error_for(
    code: str | None, message: str, extensions: dict[str, Any] | None = None
) -> MnemoError:
    """The exception for one coded GraphQL error: the engine's class for ``code`` (so a
    served memory raises what the in-process one raises), else a ``ServerError``. Its
    ``message`` is the server's (in the request's language); ``en`` and ``zh`` are the
    extensions' when the server gave them."""
    ext = extensions or {}
    details = {k: v for k, v in ext.items() if k not in {"code", "en", "zh"}}
    en, zh = ext.get("en"), ext.get("zh")
    en = en if isinstance(en, str) else message
    zh = zh if isinstance(zh, str) else None
    cls = _classes(MnemoError).get(code or "")
    if cls is None:
        error: MnemoError = ServerError(code or "INTERNAL_SERVER_ERROR", en, zh=zh, **details)
    else:
        error = cls(en, zh=zh, **details)
    error.message, error.args = message, (message,)
    return error
