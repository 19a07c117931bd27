"""``mnemoql.SyncMemory``: ``mnemoql.Memory`` for code without an event loop."""

from __future__ import annotations

from collections.abc import Coroutine, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from mnemoql._portal import Portal
from mnemoql.memory import Memory
from mnemoql.types import EvidencePage, ForgetResult, Locale, SaveResult, Target, TextRange

if TYPE_CHECKING:
    from mnemoql.engine.config import Settings

T = TypeVar("T")


class SyncMemory:
    """``Memory`` for code without an event loop: the same arguments, methods and results,
    each call blocking until done. Use ``with SyncMemory(...) as memory:`` (or ``open()`` and
    ``close()``). It runs the memory on an event loop of its own thread, so it also works
    where a loop is already running (a notebook).
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
        self._async = Memory(
            data_dir, space=space, session=session, locale=locale, settings=settings, **overrides
        )
        self._portal: Portal | None = None

    @property
    def space(self) -> str:
        return self._async.space

    @property
    def settings(self) -> Settings:
        return self._async.settings

    def open(self) -> SyncMemory:
        """Open the store (see ``Memory.open``)."""
        if self._portal is None:
            portal = Portal(f"mnemoql-{self._async.space}")
            try:
                portal.call(self._async.open())
            except BaseException:
                portal.stop()
                raise
            self._portal = portal
        return self

    def close(self) -> None:
        portal, self._portal = self._portal, None
        if portal is not None:
            try:
                portal.call(self._async.close())
            finally:
                portal.stop()

    def __enter__(self) -> SyncMemory:
        return self.open()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._portal is None:
            coro.close()
            raise RuntimeError("the memory is not open: use `with SyncMemory(...)` or open()")
        return self._portal.call(coro)

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
        """See ``Memory.save``."""
        return self._call(
            self._async.save(
                content,
                id=id,
                time=time,
                topic_path=topic_path,
                related_topics=related_topics,
                extraction=extraction,
                idempotency_key=idempotency_key,
                dedupe_by_hash=dedupe_by_hash,
            )
        )

    def forget(self, event_id: str) -> ForgetResult:
        """See ``Memory.forget``."""
        return self._call(self._async.forget(event_id))

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
        """See ``Memory.search``."""
        return self._call(
            self._async.search(
                query,
                entities=entities,
                time_hint=time_hint,
                target=target,
                session=session,
                reset_seen=reset_seen,
                cursor=cursor,
            )
        )

    def expand(
        self,
        cursor: str | EvidencePage,
        concept_id: str,
        *,
        limit: int = 3,
        session: str | None = None,
    ) -> EvidencePage:
        """See ``Memory.expand``."""
        return self._call(self._async.expand(cursor, concept_id, limit=limit, session=session))

    def nearby(
        self,
        cursor: str | EvidencePage,
        event_id: str,
        *,
        before: int = 2,
        after: int = 2,
        session: str | None = None,
    ) -> EvidencePage:
        """See ``Memory.nearby``."""
        return self._call(
            self._async.nearby(cursor, event_id, before=before, after=after, session=session)
        )

    def read(self, event_id: str, *, start: int = 0, limit: int = 2000) -> TextRange:
        """See ``Memory.read``."""
        return self._call(self._async.read(event_id, start=start, limit=limit))

    def export(self, *, vectors: bool = False) -> Iterator[str]:
        """See ``Memory.export``: the dump's lines, read as they are produced."""
        if self._portal is None:
            raise RuntimeError("the memory is not open: use `with SyncMemory(...)` or open()")
        return self._portal.iterate(self._async.export(vectors=vectors))
