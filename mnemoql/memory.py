"""``mnemoql.Memory``: one memory space in this process, without a server.

It opens what ``mnemoql mcp`` opens (``web.service.serving_spaces``: the configured store, the
offline defaults or the configured models, settings from ``MNEMOQL_*`` like the CLI) and calls
the engine's ``Memory`` that the GraphQL resolvers call, so the checks, limits, sessions,
cursors and coded errors are the API's own. Results are the dataclasses of ``mnemoql.types``;
failures are the exceptions of ``mnemoql.errors``.

``mnemoql.SyncMemory`` (``mnemoql.sync``) is the same for code without an event loop.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from mnemoql.errors import InvalidInput, MnemoError
from mnemoql.types import (
    EvidencePage,
    ForgetResult,
    Locale,
    SaveResult,
    Target,
    TextRange,
    follow,
)

if TYPE_CHECKING:
    from mnemoql.engine.config import Settings
    from mnemoql.engine.ingest import SaveInput
    from mnemoql.engine.memory import Memory as EngineMemory


P = ParamSpec("P")
R = TypeVar("R")


def _localized(
    method: Callable[Concatenate[Memory, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[Memory, P], Coroutine[Any, Any, R]]:
    """``method`` with its errors' messages in the memory's language (``MnemoError.localize``):
    the engine raises them in English, with the Chinese beside."""

    @functools.wraps(method)
    async def call(memory: Memory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(memory, *args, **kwargs)
        except MnemoError as exc:
            exc.localize(memory.locale)
            raise

    return call


class Memory:
    """An embedded memory space, opened by ``async with`` (or ``await memory.open()``).

    Args:
        data_dir: where the embedded store keeps its files (default: ``MNEMOQL_DATA_DIR``, else
            the user data directory ``mnemoql serve`` uses).
        space: the memory space (1-64 letters, digits, ``_`` or ``-``).
        session: the evidence session of calls that name none: a search does not deliver
            again what this session was given (SPEC §1.7). Default ``"default"``.
        locale: the language of texts, save messages, notes and error messages, ``"en"`` or
            ``"zh"``; default: ``MNEMOQL_LOCALE`` (English unless set).
        settings: a complete ``Settings`` instead of the environment (then ``data_dir`` and
            ``overrides`` must not be given).
        **overrides: settings groups as ``mnemoql serve`` takes them from flags, e.g.
            ``store="neo4j"`` or ``embedding={"provider": "hashing"}``; they win over
            ``MNEMOQL_*`` variables.

    Nothing is read or opened until ``open()``: the constructor only remembers its arguments.
    """

    def __init__(
        self,
        data_dir: str | Path | None = None,
        *,
        space: str = "default",
        session: str | None = None,
        locale: Locale | None = None,
        settings: Settings | None = None,
        **overrides: Any,
    ) -> None:
        if settings is not None and (data_dir is not None or overrides):
            raise TypeError("give either settings or data_dir/overrides, not both")
        self.space = space
        self.session = session
        self._locale = locale
        self._data_dir = Path(data_dir).expanduser() if data_dir is not None else None
        self._settings = settings
        self._overrides = overrides
        self._stack: contextlib.AsyncExitStack | None = None
        self._memory: EngineMemory | None = None

    # ---- life cycle ----

    @_localized
    async def open(self) -> Memory:
        """Open the store of the space (creating it on first use).

        Raises:
            InvalidInput: a bad space name. StoreUnavailable: the store cannot be opened.
            ValueError: invalid settings (pydantic's ValidationError names each one).
        """
        if self._memory is not None:
            return self
        from mnemoql.web.service import serving_spaces

        settings = self.settings
        stack = contextlib.AsyncExitStack()
        try:
            spaces = await stack.enter_async_context(serving_spaces(settings))
            self._memory = await spaces.get(self.space)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def close(self) -> None:
        """Close the store (and a Neo4j this process started); the memory can be opened again."""
        stack, self._stack, self._memory = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    async def __aenter__(self) -> Memory:
        return await self.open()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def settings(self) -> Settings:
        """The settings this memory opens with (read once, on first use)."""
        if self._settings is None:
            from mnemoql.engine.config import load_settings

            overrides = dict(self._overrides)
            if self._data_dir is not None:
                overrides["data_dir"] = self._data_dir
            self._settings = load_settings(**overrides)
        return self._settings

    @property
    def locale(self) -> Locale:
        """The language of texts, messages and errors: ``locale=``, else ``MNEMOQL_LOCALE``."""
        return self._locale or self.settings.locale

    @property
    def engine(self) -> EngineMemory:
        """The engine's memory of this space (everything the GraphQL API can do)."""
        if self._memory is None:
            raise RuntimeError("the memory is not open: use `async with Memory(...)` or open()")
        return self._memory

    # ---- writes ----

    @_localized
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
        """Save one memory: extract, embed and write in one transaction (GraphQL ``save``).

        Args:
            content: the original text; kept verbatim, quoted exactly by searches.
            id: your own event id (``book_ch3_e12``); positional ids enable ``nearby``.
            time: when it happened, as written (``2026-03-01``, ``last Monday``).
            topic_path: bind it to a topic (``work->mnemoql``).
            related_topics: further topic paths it relates to.
            extraction: a ready extraction (the GraphQL ``extraction`` JSON) instead of the
                extraction model.
            idempotency_key: a retry with the same key returns the first result.
            dedupe_by_hash: identical content returns the existing events.

        Raises:
            InvalidInput (and subclasses), ExtractionInvalid, Conflict, Forgotten,
            MetaMismatch, UpstreamFailed, StoreUnavailable: as the API raises them.
        """
        item = _save_input(
            content=content,
            id=id,
            time=time,
            topic_path=topic_path,
            related_topics=list(related_topics),
            extraction=extraction,
            idempotency_key=idempotency_key,
            dedupe_by_hash=dedupe_by_hash,
        )
        return SaveResult.from_domain(await self.engine.save(item), self.locale)

    @_localized
    async def forget(self, event_id: str) -> ForgetResult:
        """Delete an event with its chunks, topic bindings and the entities only it used.

        Raises:
            NotFound: no event has this id.
        """
        return ForgetResult(tuple(await self.engine.forget(event_id)))

    # ---- evidence ----

    @_localized
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
        """Find evidence: at most 4 events new to the session, each with an exact quote.

        Args:
            query: what to look for, in any language.
            entities: names the events must involve (ANDed).
            time_hint: when: a date, a range or words like ``last week``.
            target: ``"Event"`` (evidence), or ``"Person"`` / ``"Concept"`` (matches by name
                with their neighbours, in ``entity_hits``).
            session: the evidence session (default: this memory's).
            reset_seen: forget what the session was given first.
            cursor: a page (or its ``cursor``) of an earlier search: its next page, in that
                page's session; query, entities and time hint may then be left out.
        """
        from mnemoql.engine.retrieval.pipeline import SearchRequest

        token, sid = (None, session or self.session) if cursor is None else follow(
            cursor, session, self.session
        )
        if target != "Event":
            page = await self.engine.search_entities(target, query)
            return EvidencePage.from_targeted(page, sid or "default", self.locale)
        request = SearchRequest(
            query, list(entities) if entities else None, time_hint, reset_seen, token
        )
        return EvidencePage.from_outcome(await self.engine.search(request, sid), self.locale)

    @_localized
    async def expand(
        self,
        cursor: str | EvidencePage,
        concept_id: str,
        *,
        limit: int = 3,
        session: str | None = None,
    ) -> EvidencePage:
        """Continue a chain through a concept the page offered (``page.expand_concepts``).

        Raises:
            CursorInvalid, CursorSession, ChainExhausted, ConceptNotOffered, OutOfRange.
        """
        token, sid = follow(cursor, session, self.session)
        out = await self.engine.expand(token, concept_id, limit, sid)
        return EvidencePage.from_outcome(out, self.locale)

    @_localized
    async def nearby(
        self,
        cursor: str | EvidencePage,
        event_id: str,
        *,
        before: int = 2,
        after: int = 2,
        session: str | None = None,
    ) -> EvidencePage:
        """Read the records around a positional event the page offered
        (``page.nearby_events``: ids like ``book_ch3_e12``)."""
        token, sid = follow(cursor, session, self.session)
        out = await self.engine.nearby(token, event_id, before, after, sid)
        return EvidencePage.from_outcome(out, self.locale)

    @_localized
    async def read(self, event_id: str, *, start: int = 0, limit: int = 2000) -> TextRange:
        """An exact code-point range of an event's original text (no session, no model).

        Raises:
            NotFound: no such event. OutOfRange / InvalidInput: ``limit`` or ``start``.
        """
        return TextRange.from_domain(await self.engine.read(event_id, start, limit))

    async def export(self, *, vectors: bool = False) -> AsyncIterator[str]:
        """The whole space as the lines of a dump (``mnemoql export``; ``mnemoql restore``
        loads it), header and end line included, without newlines."""
        async for line in self.engine.export(vectors=vectors):
            yield line


def _save_input(**fields: Any) -> SaveInput:
    """The engine's ``SaveInput``; a value of the wrong type is a coded ``BAD_USER_INPUT``
    naming the argument, as GraphQL's own type check would be."""
    from pydantic import ValidationError

    from mnemoql.engine.extraction_input import parse_extraction
    from mnemoql.engine.ingest import SaveInput

    extraction = fields.pop("extraction")
    if extraction is not None:
        fields["extraction"] = parse_extraction(dict(extraction))
    try:
        return SaveInput(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = ".".join(str(p) for p in first["loc"]) or "input"
        raise InvalidInput(
            f"{name}: {first['msg']}", argument=name, zh=f"参数 {name} 无效：{first['msg']}"
        ) from None
