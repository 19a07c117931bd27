"""``mnemoql.Client`` and ``mnemoql.AsyncClient``: a served memory over its GraphQL API.

The same methods as ``mnemoql.Memory`` (``save``, ``search``, ``expand``, ``nearby``,
``read``, ``forget``), the same result types (``mnemoql.types``) and the same exceptions
(``mnemoql.errors``: a coded GraphQL error becomes the engine's class for its code). Each call
is one POST of a fixed document with variables; nothing here builds GraphQL from user input.

- **Token**: ``Client(url, token=...)`` sends ``Authorization: Bearer <token>``. The server's
  token table picks the memory space and the scopes; a server without tokens serves its
  default space on loopback only.
- **Space**: one token belongs to one space; a client per token reaches each space
  (``Client(url, token=alice)``, ``Client(url, token=bob)``).
- **Session**: ``session=`` (per client, or per call) is the evidence session: a search does
  not deliver again what its session was given. Without one, the server keeps one default
  session per connection, and this client keeps its connection open.

Two classes, one per I/O style, share the documents and the parsing: ``Client`` on
``httpx.Client``, ``AsyncClient`` on ``httpx.AsyncClient`` (both may be injected).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import httpx

from mnemoql._documents import Documents, answer, data_of
from mnemoql.errors import MnemoError, Unreachable
from mnemoql.types import (
    EvidencePage,
    ForgetResult,
    Locale,
    SaveResult,
    Target,
    TextRange,
)

DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT_S = 660.0  # past the server's own mutation deadline (600 s), which answers first
SESSION_HEADER = "x-memory-session"


def _headers(token: str | None, session: str | None, locale: Locale | None) -> dict[str, str]:
    headers = {"accept": "application/json"}
    if locale:  # the language of messages and errors; without it, the server's MNEMOQL_LOCALE
        headers["accept-language"] = locale
    if token:
        headers["authorization"] = f"Bearer {token}"
    if session:
        headers[SESSION_HEADER] = session
    return headers


class Client:
    """A served memory, one blocking call at a time.

    Args:
        url: the server's base URL (``/graphql`` is added) or its GraphQL endpoint.
        token: a bearer token of the server's token table (it picks space and scopes).
        session: the evidence session of calls that name none.
        locale: the language of texts, save messages and error messages, ``"en"`` or ``"zh"``
            (sent as ``Accept-Language``); default: the server's ``MNEMOQL_LOCALE``.
        timeout: seconds per request.
        http: an ``httpx.Client`` to use instead of one of its own (its base URL is ignored).
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        token: str | None = None,
        session: str | None = None,
        locale: Locale | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        http: httpx.Client | None = None,
    ) -> None:
        self.endpoint = _endpoint(url)
        self._docs = Documents(session, locale)
        self._own = http is None
        self._http = http or httpx.Client(timeout=timeout)
        self._headers = _headers(token, session, locale)

    def close(self) -> None:
        if self._own:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _send(self, document: str, variables: Mapping[str, Any]) -> httpx.Response:
        body = {"query": document, "variables": dict(variables)}
        try:
            return self._http.post(self.endpoint, json=body, headers=self._headers)
        except httpx.TransportError as exc:
            raise _unreachable(self.endpoint, exc) from exc

    def _post(self, request: tuple[str, dict[str, Any], str]) -> dict[str, Any]:
        document, variables, field = request
        return answer(self._send(document, variables), field)

    def save(
        self,
        content: str,
        *,
        id: str | None = None,
        time: str | None = None,
        topic_path: str | None = None,
        related_topics: Sequence[str] = (),
        extraction: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        dedupe_by_hash: bool = False,
    ) -> SaveResult:
        """Save one memory (see ``Memory.save``)."""
        request = self._docs.save(
            content,
            id=id,
            time=time,
            topic_path=topic_path,
            related_topics=list(related_topics),
            extraction=dict(extraction) if extraction is not None else None,
            idempotency_key=idempotency_key,
            dedupe_by_hash=dedupe_by_hash,
        )
        return SaveResult.from_json(self._post(request))

    def search(
        self,
        query: str | None = None,
        *,
        entities: Sequence[str] | None = None,
        time_hint: str | None = None,
        target: Target = "Event",
        session: str | None = None,
        reset_seen: bool = False,
        cursor: str | EvidencePage | None = None,
    ) -> EvidencePage:
        """Find evidence (see ``Memory.search``). Over HTTP the same search in a session
        gives the same page (caching clients stay right); ``cursor=page`` asks for its next
        page."""
        request = self._docs.search(
            query, entities, time_hint, target, session, reset_seen, cursor
        )
        return EvidencePage.from_json(self._post(request))

    def expand(
        self,
        cursor: str | EvidencePage,
        concept_id: str,
        *,
        limit: int = 3,
        session: str | None = None,
    ) -> EvidencePage:
        """Continue a chain through a concept the page offered."""
        return EvidencePage.from_json(
            self._post(self._docs.expand(cursor, concept_id, limit, session))
        )

    def nearby(
        self,
        cursor: str | EvidencePage,
        event_id: str,
        *,
        before: int = 2,
        after: int = 2,
        session: str | None = None,
    ) -> EvidencePage:
        """Read the records around a positional event the page offered."""
        return EvidencePage.from_json(
            self._post(self._docs.nearby(cursor, event_id, before, after, session))
        )

    def read(self, event_id: str, *, start: int = 0, limit: int = 2000) -> TextRange:
        """An exact code-point range of an event's original text."""
        return TextRange.from_json(self._post(self._docs.read(event_id, start, limit)))

    def forget(self, event_id: str) -> ForgetResult:
        """Delete an event with its chunks and the entities only it used."""
        data = self._post(self._docs.forget(event_id))
        return ForgetResult(tuple(data["deletedIds"]))

    def graphql(self, document: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Any other operation of the API: its ``data``, or the first coded error raised."""
        return data_of(self._send(document, variables or {}))


class AsyncClient:
    """``Client`` for asyncio code: the same arguments and methods, each awaited."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        token: str | None = None,
        session: str | None = None,
        locale: Locale | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.endpoint = _endpoint(url)
        self._docs = Documents(session, locale)
        self._own = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout)
        self._headers = _headers(token, session, locale)

    async def aclose(self) -> None:
        if self._own:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def _send(self, document: str, variables: Mapping[str, Any]) -> httpx.Response:
        body = {"query": document, "variables": dict(variables)}
        try:
            return await self._http.post(self.endpoint, json=body, headers=self._headers)
        except httpx.TransportError as exc:
            raise _unreachable(self.endpoint, exc) from exc

    async def _post(self, request: tuple[str, dict[str, Any], str]) -> dict[str, Any]:
        document, variables, field = request
        return answer(await self._send(document, variables), field)

    async def save(
        self,
        content: str,
        *,
        id: str | None = None,
        time: str | None = None,
        topic_path: str | None = None,
        related_topics: Sequence[str] = (),
        extraction: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        dedupe_by_hash: bool = False,
    ) -> SaveResult:
        """Save one memory (see ``Memory.save``)."""
        request = self._docs.save(
            content,
            id=id,
            time=time,
            topic_path=topic_path,
            related_topics=list(related_topics),
            extraction=dict(extraction) if extraction is not None else None,
            idempotency_key=idempotency_key,
            dedupe_by_hash=dedupe_by_hash,
        )
        return SaveResult.from_json(await self._post(request))

    async def search(
        self,
        query: str | None = None,
        *,
        entities: Sequence[str] | None = None,
        time_hint: str | None = None,
        target: Target = "Event",
        session: str | None = None,
        reset_seen: bool = False,
        cursor: str | EvidencePage | None = None,
    ) -> EvidencePage:
        """Find evidence (see ``Memory.search``). Over HTTP the same search in a session
        gives the same page (caching clients stay right); ``cursor=page`` asks for its next
        page."""
        request = self._docs.search(
            query, entities, time_hint, target, session, reset_seen, cursor
        )
        return EvidencePage.from_json(await self._post(request))

    async def expand(
        self,
        cursor: str | EvidencePage,
        concept_id: str,
        *,
        limit: int = 3,
        session: str | None = None,
    ) -> EvidencePage:
        """Continue a chain through a concept the page offered."""
        request = self._docs.expand(cursor, concept_id, limit, session)
        return EvidencePage.from_json(await self._post(request))

    async def nearby(
        self,
        cursor: str | EvidencePage,
        event_id: str,
        *,
        before: int = 2,
        after: int = 2,
        session: str | None = None,
    ) -> EvidencePage:
        """Read the records around a positional event the page offered."""
        request = self._docs.nearby(cursor, event_id, before, after, session)
        return EvidencePage.from_json(await self._post(request))

    async def read(self, event_id: str, *, start: int = 0, limit: int = 2000) -> TextRange:
        """An exact code-point range of an event's original text."""
        return TextRange.from_json(await self._post(self._docs.read(event_id, start, limit)))

    async def forget(self, event_id: str) -> ForgetResult:
        """Delete an event with its chunks and the entities only it used."""
        data = await self._post(self._docs.forget(event_id))
        return ForgetResult(tuple(data["deletedIds"]))

    async def graphql(
        self, document: str, variables: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Any other operation of the API: its ``data``, or the first coded error raised."""
        return data_of(await self._send(document, variables or {}))


def _endpoint(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/graphql") else f"{url}/graphql"


def _unreachable(endpoint: str, exc: httpx.TransportError) -> MnemoError:
    return Unreachable(f"{endpoint} did not answer: {type(exc).__name__}: {exc}")
