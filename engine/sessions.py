"""Evidence history per session (SPEC §1.8), shared by every process of a memory (issue 30).

A session remembers which events and excerpts it has been given, so search, expand and nearby
skip them and repeated excerpts become quoteRefs. The chain cursors a session's calls issue
(SPEC §1.9) are ``engine.cursors``; a session's commit stores them with its ledger.

A session also keeps the pages it was given, by the arguments that asked for them
(``Session.page``): a GraphQL query is safe to repeat, so asking the same thing again in the
session answers the same page instead of the next one (docs/followups.md).

Where it lives: rows of ``engine.session_state`` -- the store's own table (embedded) or nodes
(Neo4j), so a follow-up can land on any replica behind a load balancer. Limits are a TTL and
a size budget, not a count: a cursor outlives any number of other agents' searches, and one
that is gone (expired, or dropped for the budget) is a coded ``CURSOR_EXPIRED``.

A call works on a copy loaded when it acquires the session; what it records is written back
when it ends without an error (one transaction that merges into the stored ledger, so two
processes committing to one session both land)::

    async with sessions.acquire(session_id) as session:   # loads the ledger
        excluded = session.excluded
        ...  # build the page, quoting with session.excerpt_lookup
        sessions.commit(session_id, delivered_ids, budget.pending)  # only on success
    # here: the ledger's changes and the call's new cursors are stored

Sessions and cursors read an injected clock (wall seconds: processes compare it), so tests
move time instead of sleeping.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Protocol

from mnemoql.engine.retrieval.evidence import Excerpt
from mnemoql.engine.session_codec import (
    JSON_PAGES,
    PageCodec,
    SessionBody,
)
from mnemoql.engine.session_state import Commit, LocalState, SharedState

if TYPE_CHECKING:
    from mnemoql.engine.cursors import CursorStore

TTL_SECONDS = 15 * 60
MAX_IDS = 640
MAX_EXCERPTS = 640
MAX_PAGES = 64  # pages a session can replay, oldest dropped first


class Clock(Protocol):
    """Wall-clock seconds (``time.time`` in production, a fake in tests)."""

    def __call__(self) -> float: ...


class Session:
    """One call's copy of a session's evidence history, and what the call adds to it.

    Built from the stored ``SessionBody`` when the call acquires the session; ``record``,
    ``keep_page`` and ``clear`` change the copy and remember the change, which
    ``SessionStore`` merges into the stored body when the call succeeds.
    """

    def __init__(
        self,
        session_id: str,
        body: SessionBody | None = None,
        max_ids: int = MAX_IDS,
        max_excerpts: int = MAX_EXCERPTS,
        max_pages: int = MAX_PAGES,
        pages: PageCodec = JSON_PAGES,
    ) -> None:
        self.id = session_id
        self.body = body or SessionBody()
        self._pages = pages  # kept pages stay JSON text until one is asked for
        self.stored_pages: list[str] = []  # the call keys of the pages loaded with it
        self.caps = (max_ids, max_excerpts, max_pages)
        self.change = SessionBody()  # what this call added (``cleared``: it reset first)
        self.changed = False

    @property
    def excluded(self) -> frozenset[str]:
        """The delivered ids still in the history (to exclude from candidates)."""
        return frozenset(self.body.ids)

    @property
    def delivered_ids(self) -> tuple[str, ...]:
        """Delivered ids, oldest first."""
        return tuple(self.body.ids)

    @property
    def excerpt_count(self) -> int:
        return len(self.body.excerpts)

    def excerpt_lookup(self, text: str) -> tuple[str, int, int] | None:
        """``(event_id, start, end)`` of an earlier excerpt with exactly this text, or None."""
        return self.body.excerpts.get(text)

    def record(self, delivered_ids: Iterable[str], excerpts: Iterable[Excerpt]) -> None:
        """Append to the history, evicting the oldest entries past the caps."""
        ids = list(delivered_ids)
        found = [(ex.text, (ex.event_id, ex.start, ex.end)) for ex in excerpts]
        for target in (self.body, self.change):
            target.add(ids, found, (), self.caps)
        self.changed = True

    def page(self, key: str) -> object | None:
        """The page this session was given for the call ``key`` (its arguments), or None."""
        text = self.body.pages.get(key)
        if text is None:
            return None
        try:
            return self._pages.decode(text)
        except ValueError:  # a page of another version: asking again builds a new one
            return None

    def keep_page(self, key: str, page: object) -> None:
        """Remember the page a call was given, so asking again answers it again."""
        text = self._pages.encode(page)
        for target in (self.body, self.change):
            target.add((), (), [(key, text)], self.caps)
        self.changed = True

    def clear(self) -> None:
        self.body = SessionBody()
        self.change = SessionBody(cleared=True)
        self.changed = True


class SessionStore:
    """All sessions of a memory: stored in ``state``, each alive ``ttl`` seconds after its last
    commit, bounded together with the cursors by the state's size budget.

    Args:
        clock: Seconds source (wall time: several processes compare it).
        ttl: Seconds after the last successful commit (or creation) before a session expires.
        max_ids: Delivered ids kept per session (FIFO).
        max_excerpts: Excerpts kept per session (FIFO).
        max_pages: Pages a session can replay (FIFO).
        cursors: The cursor store whose new cursors a call stores when it ends.
        state: Where the rows live (default: this process only).
        pages: How a kept page is stored (``Memory`` passes the evidence page's codec).
    """

    def __init__(
        self,
        clock: Clock = time.time,
        ttl: float = TTL_SECONDS,
        max_ids: int = MAX_IDS,
        max_excerpts: int = MAX_EXCERPTS,
        *,
        max_pages: int = MAX_PAGES,
        cursors: CursorStore | None = None,
        state: SharedState | None = None,
        pages: PageCodec = JSON_PAGES,
    ) -> None:
        self._clock = clock
        self._ttl = ttl
        self._caps = (max_ids, max_excerpts, max_pages)
        self._cursors = cursors
        self.state: SharedState = state or (cursors.state if cursors else LocalState())
        self._codec = pages
        self._local = isinstance(self.state, LocalState)
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # per session, while used
        self._open: dict[str, Session] = {}  # sessions inside acquire()
        self._recent: OrderedDict[str, tuple[Session, float]] = OrderedDict()  # ``page`` hints

    @asynccontextmanager
    async def acquire(self, session_id: str) -> AsyncIterator[Session]:
        """Hold the session for one call: its lock in this process, its stored ledger loaded.
        What the call records is stored when it ends without an error; the cursors it
        dropped are dropped either way."""
        lock, users = self._locks.get(session_id) or (asyncio.Lock(), 0)
        self._locks[session_id] = (lock, users + 1)
        try:
            async with lock:
                session = await self._load(session_id)
                self._open[session_id] = session
                try:
                    yield session
                except BaseException:
                    failed = Commit(session_id, self._ttl)
                    if self._cursors is not None:
                        self._cursors.take(session_id, failed, keep=False)
                    if not failed.empty:
                        await self.state.commit(failed, self._clock())
                    raise
                finally:
                    del self._open[session_id]
                await self._store(session)
        finally:
            lock, users = self._locks[session_id]
            if users <= 1:
                del self._locks[session_id]
            else:
                self._locks[session_id] = (lock, users - 1)

    async def _load(self, session_id: str) -> Session:
        stored, pages = await self.state.session(session_id, self._clock())
        body = SessionBody.decode(stored, self._caps) if stored is not None else SessionBody()
        prefix = _page_key(session_id, "")
        for key, text in pages:
            body.pages[key.removeprefix(prefix)] = text.decode()
        session = Session(session_id, body, *self._caps, pages=self._codec)
        session.stored_pages = list(body.pages)
        return session

    async def _store(self, session: Session) -> None:
        """One transaction: the ledger's merge, the call's pages (those pushed past the cap
        or reset go) and its cursors."""
        now, sid = self._clock(), session.id
        commit = Commit(sid, self._ttl)
        if session.changed:
            change, caps = session.change, self._caps

            def merged(current: bytes | None) -> bytes:
                body = SessionBody.decode(current, caps) if current else SessionBody()
                return body.merge(change, caps).encode()

            commit.update, commit.delta = merged, change.encode()
            commit.clear_pages = change.cleared
            if not change.cleared:
                gone = set(session.stored_pages) - set(session.body.pages)
                commit.drop_pages = [_page_key(sid, key) for key in sorted(gone)]
            commit.pages = [(_page_key(sid, k), t.encode()) for k, t in change.pages.items()]
        if self._cursors is not None:
            self._cursors.take(sid, commit, keep=True)
        if not commit.empty:
            await self.state.commit(commit, now)
        if session.changed:
            self._remember(session, now)

    async def touch(self, session_id: str) -> None:
        """Store the session again unchanged, with what the state keeps of this process's
        latest writes (Neo4j: its bookmarks), so the session's next call on another replica
        reads them. Restarts the session's TTL."""

        caps = self._caps

        def same(current: bytes | None) -> bytes:
            return (SessionBody.decode(current, caps) if current else SessionBody()).encode()

        await self.state.update("s", session_id, same, self._clock(), self._ttl)

    def _remember(self, session: Session, now: float) -> None:
        """Keep the session for ``page`` (a hint: only for state of this process alone)."""
        if not self._local:
            return
        self._recent[session.id] = (session, now)
        self._recent.move_to_end(session.id)
        while len(self._recent) > 256:
            self._recent.popitem(last=False)

    def page(self, session_id: str, key: str) -> object | None:
        """The page a live session was given for the call ``key``, before taking its lock (a
        repeat can skip the query's embedding; ``Session.page`` under the lock decides). Only
        with state of this process alone: with shared state another process may have reset
        the session since, so the answer waits for the ledger."""
        kept = self._recent.get(session_id)
        if kept is None or self._clock() - kept[1] >= self._ttl:
            return None
        return kept[0].page(key)

    def excerpt_lookup(self, session_id: str, text: str) -> tuple[str, int, int] | None:
        """``(event_id, start, end)`` of an excerpt a session being used was given."""
        session = self._open.get(session_id)
        return None if session is None else session.excerpt_lookup(text)

    def commit(
        self, session_id: str, delivered_ids: Iterable[str], excerpts: Iterable[Excerpt] = ()
    ) -> None:
        """Record a successful call's deliveries; stored (restarting the session's TTL) when
        the call's ``acquire`` ends. Call it only once the response is fully built."""
        self._session(session_id).record(delivered_ids, excerpts)

    def reset(self, session_id: str) -> None:
        """reset_seen: forget the session's ids, excerpts and pages and drop its cursors."""
        self._recent.pop(session_id, None)
        self._session(session_id).clear()
        if self._cursors is not None:
            self._cursors.clear_session(session_id)

    def _session(self, session_id: str) -> Session:
        session = self._open.get(session_id)
        if session is None:
            raise RuntimeError(f"session {session_id!r} is not acquired")
        return session


def _page_key(session_id: str, call: str) -> str:
    """The row key of a session's page for the call ``call``."""
    return f"{session_id}\x1f{call}"
