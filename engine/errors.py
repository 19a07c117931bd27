"""One error hierarchy with stable codes.

Every failure a caller can cause or can act on is a ``MnemoError`` with a stable ``code``
(surfaced as GraphQL ``extensions.code``), an English message saying how to fix it, and the
Chinese wording (SPEC.md's where it has one) in ``zh``. ``text(locale)`` is the one a user reads
(``MNEMOQL_LOCALE``, or the request's locale); GraphQL errors carry both as ``extensions.en`` and
``extensions.zh``. An error raised without ``zh`` shows its English message in both.

    MnemoError
    ├── InvalidInput            BAD_USER_INPUT       malformed or out-of-range arguments
    │   ├── OutOfRange          OUT_OF_RANGE         a number outside its documented range
    │   ├── InvalidId           INVALID_ID           a caller id that is not allowed
    │   ├── InvalidText         INVALID_TEXT         lone surrogates; content with nothing visible
    │   ├── LimitExceeded       LIMIT_EXCEEDED       past a size cap (query, where, extraction)
    │   ├── TimeHintInvalid     TIME_HINT_INVALID    an unparseable time_hint
    │   ├── DumpDamaged         DUMP_DAMAGED         a dump line whose text does not match its
    │   │                                            hash (restore refuses the whole file)
    │   └── ResetSeenMisuse     RESET_SEEN_SEARCH_ONLY
    ├── NotFound                NOT_FOUND            an unknown node / event id
    │   └── Forgotten           FORGOTTEN            a retried save whose events were forgotten
    ├── Conflict                CONFLICT             a caller id that already exists, or an
    │                                                idempotency key reused for other content
    ├── MetaMismatch            EMBEDDING_MISMATCH   config model/dims differ from MemoryMeta
    ├── MissingApiKey           MISSING_API_KEY
    ├── UpstreamFailed          UPSTREAM_FAILED      a model provider answered badly or not at all
    ├── ExtractionInvalid       EXTRACTION_INVALID   extraction JSON of the wrong shape
    ├── EmbeddingDimension      EMBEDDING_DIMENSION  a provider returned vectors of the wrong size
    ├── RevectorizeFailed       REVECTORIZE_FAILED   nothing was changed
    ├── CursorError             (cursor and chain problems)
    │   ├── CursorInvalid       CURSOR_INVALID       a token this memory never issued
    │   │   └── CursorExpired   CURSOR_EXPIRED       past its TTL, or dropped for the budget
    │   ├── CursorSession       CURSOR_SESSION
    │   ├── ChainExhausted      CHAIN_EXHAUSTED
    │   ├── ChainBroken         CHAIN_BROKEN
    │   ├── ConceptNotOffered   CONCEPT_NOT_OFFERED
    │   └── NoPosition          NO_POSITION
    ├── StoreUnavailable        STORE_UNAVAILABLE    the database cannot be reached
    ├── StorageFault            (retryable: the write was refused, nothing was written)
    │   ├── StorageFull         STORAGE_FULL         the disk holding the data is full
    │   └── StorageBusy         STORAGE_BUSY         another process holds the write lock
    ├── Unauthorized            UNAUTHENTICATED
    └── Forbidden               FORBIDDEN
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from mnemoql.engine.messages import Locale


class MnemoError(Exception):
    """Base of every expected error. ``code`` is stable; messages may improve."""

    code: ClassVar[str] = "INTERNAL"

    def __init__(self, message: str, *, zh: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message  # the shown one: English as raised, until ``localize``
        self.en = message
        self.zh = zh or message
        self.details = details

    def text(self, locale: Locale) -> str:
        """The message in ``locale``."""
        return self.zh if locale == "zh" else self.en

    def localize(self, locale: Locale) -> Self:
        """Show the message in ``locale`` (``message``, ``str(error)``); ``en`` and ``zh``
        keep both. For the edges that hand the error itself to a caller (the Python API)."""
        self.message = self.text(locale)
        self.args = (self.message,)
        return self

    def extensions(self) -> dict[str, Any]:
        return {"code": self.code, "en": self.en, "zh": self.zh, **self.details}


class InvalidInput(MnemoError):
    code = "BAD_USER_INPUT"


class OutOfRange(InvalidInput):
    code = "OUT_OF_RANGE"


class InvalidId(InvalidInput):
    code = "INVALID_ID"


class InvalidText(InvalidInput):
    code = "INVALID_TEXT"


class LimitExceeded(InvalidInput):
    code = "LIMIT_EXCEEDED"


class TimeHintInvalid(InvalidInput):
    code = "TIME_HINT_INVALID"


class DumpDamaged(InvalidInput):
    code = "DUMP_DAMAGED"


class ResetSeenMisuse(InvalidInput):
    code = "RESET_SEEN_SEARCH_ONLY"


class NotFound(MnemoError):
    code = "NOT_FOUND"


class Forgotten(NotFound):
    code = "FORGOTTEN"


class Conflict(MnemoError):
    code = "CONFLICT"


class MetaMismatch(MnemoError):
    code = "EMBEDDING_MISMATCH"


class MissingApiKey(MnemoError):
    code = "MISSING_API_KEY"


class UpstreamFailed(MnemoError):
    code = "UPSTREAM_FAILED"


class ExtractionInvalid(MnemoError):
    code = "EXTRACTION_INVALID"


class EmbeddingDimension(MnemoError):
    code = "EMBEDDING_DIMENSION"


class RevectorizeFailed(MnemoError):
    code = "REVECTORIZE_FAILED"


class CursorError(MnemoError):
    code = "CURSOR_ERROR"


class CursorInvalid(CursorError):
    code = "CURSOR_INVALID"


class CursorExpired(CursorInvalid):
    """A cursor this memory issued that is gone: past its TTL or dropped to keep the session
    state within its size budget (a subclass, so ``except CursorInvalid`` still catches it)."""

    code = "CURSOR_EXPIRED"


class CursorSession(CursorError):
    code = "CURSOR_SESSION"


class ChainExhausted(CursorError):
    code = "CHAIN_EXHAUSTED"


class ChainBroken(CursorError):
    code = "CHAIN_BROKEN"


class ConceptNotOffered(CursorError):
    code = "CONCEPT_NOT_OFFERED"


class NoPosition(CursorError):
    code = "NO_POSITION"


class StoreUnavailable(MnemoError):
    code = "STORE_UNAVAILABLE"


class StorageFault(MnemoError):
    """A write the storage refused for now; the call wrote nothing and may be retried as is
    (``extensions.retryable`` is true, ``extensions.hint`` says what frees it)."""

    code = "STORAGE_FAULT"

    def __init__(self, message: str, *, hint: str, zh: str | None = None, **details: Any) -> None:
        super().__init__(message, zh=zh, retryable=True, hint=hint, **details)
        self.hint = hint


class StorageFull(StorageFault):
    code = "STORAGE_FULL"


class StorageBusy(StorageFault):
    code = "STORAGE_BUSY"


class Unauthorized(MnemoError):
    code = "UNAUTHENTICATED"


class Forbidden(MnemoError):
    code = "FORBIDDEN"


def limit_exceeded(
    argument: str, what: str, got: int, limit: int, setting: str | None = None
) -> LimitExceeded:
    """The one wording for every size cap: what is too big, by how much, and the setting."""
    where = f" (MNEMOQL_LIMITS__{setting.upper()})" if setting else ""
    return LimitExceeded(
        f"{argument} has {got} {what}; the limit is {limit}{where}",
        zh=f"{argument} 超出上限（{got} > {limit}）",
        argument=argument,
        limit=limit,
        got=got,
    )


def out_of_range(name: str, low: int, high: int, value: object) -> OutOfRange:
    """The one wording for every bounded integer argument."""
    return OutOfRange(
        f"{name} must be between {low} and {high} (got {value})",
        zh=f"{name} 必须在 {low}–{high} 之间",
        argument=name,
    )
