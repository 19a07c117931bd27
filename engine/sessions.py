"""Evidence history per session and chain cursors (SPEC §1.8, §1.9). Memory only.

A session remembers which events and excerpts it has been given, so search, expand and nearby
skip them and repeated excerpts become quoteRefs. A cursor remembers how a chain was started
(query, vector, filters) so expand and nearby can continue it without new model calls, and so
``search(cursor:)`` can ask for the search's next page.

A session also keeps the pages it was given, by the arguments that asked for them
(``Session.page``): a GraphQL query is safe to repeat, so asking the same thing again in the
session answers the same page instead of the next one (docs/followups.md). The page ledger and
the cursors are the state a later shared store (issue 30) takes over; callers only ever see
opaque cursor strings and session names.

Both stores read an injected clock, so tests move time instead of sleeping. They are meant for
one event loop: every mutation is synchronous, and a session's ``asyncio.Lock`` serialises the
calls of that session::

    async with sessions.acquire(session_id) as session:
        excluded = session.excluded
        ...  # build the page, quoting with session.excerpt_lookup
        sessions.commit(session_id, delivered_ids, budget.pending)  # only on success
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Protocol

from mnemoql.engine.errors import ChainBroken, ChainExhausted, CursorInvalid, CursorSession
from mnemoql.engine.models import Filters, Vector
from mnemoql.engine.retrieval.evidence import CHAIN_LIMIT, Excerpt

TTL_SECONDS = 15 * 60
MAX_SESSIONS = 32
MAX_IDS = 640
MAX_EXCERPTS = 640
MAX_CURSORS = 32
MAX_PAGES = 64  # pages a session can replay, oldest dropped first


class Clock(Protocol):
    """Monotonic seconds (``time.monotonic`` in production, a fake in tests)."""

    def __call__(self) -> float: ...


class Session:
    """One session's evidence history: delivered ids and excerpts, both FIFO-capped."""

    def __init__(
        self,
        session_id: str,
        now: float,
        max_ids: int,
        max_excerpts: int,
        max_pages: int = MAX_PAGES,
    ) -> None:
        self.id = session_id
        self.lock = asyncio.Lock()
        self.committed_at = now
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._excerpts: OrderedDict[str, tuple[str, int, int]] = OrderedDict()
        self._max_ids = max_ids
        self._max_excerpts = max_excerpts
        self._pages: OrderedDict[str, object] = OrderedDict()
        self._max_pages = max_pages
        self._users = 0  # callers inside acquire(); such a session is never evicted

    @property
    def excluded(self) -> frozenset[str]:
        """The delivered ids still in the history (to exclude from candidates)."""
        return frozenset(self._ids)

    @property
    def delivered_ids(self) -> tuple[str, ...]:
        """Delivered ids, oldest first."""
        return tuple(self._ids)

    @property
    def excerpt_count(self) -> int:
        return len(self._excerpts)

    def excerpt_lookup(self, text: str) -> tuple[str, int, int] | None:
        """``(event_id, start, end)`` of an earlier excerpt with exactly this text, or None."""
        return self._excerpts.get(text)

    def record(self, delivered_ids: Iterable[str], excerpts: Iterable[Excerpt]) -> None:
        """Append to the history, evicting the oldest entries past the caps."""
        for event_id in delivered_ids:
            self._ids.setdefault(event_id, None)
        while len(self._ids) > self._max_ids:
            self._ids.popitem(last=False)
        for ex in excerpts:
            self._excerpts.setdefault(ex.text, (ex.event_id, ex.start, ex.end))
        while len(self._excerpts) > self._max_excerpts:
            self._excerpts.popitem(last=False)

    def page(self, key: str) -> object | None:
        """The page this session was given for the call ``key`` (its arguments), or None."""
        return self._pages.get(key)

    def keep_page(self, key: str, page: object) -> None:
        """Remember the page a call was given, so asking again answers it again."""
        self._pages[key] = page
        self._pages.move_to_end(key)
        while len(self._pages) > self._max_pages:
            self._pages.popitem(last=False)

    def clear(self) -> None:
        self._ids.clear()
        self._excerpts.clear()
        self._pages.clear()


class SessionStore:
    """All sessions: 15-minute TTL sliding from the last commit, at most 32 (LRU).

    Args:
        clock: Seconds source.
        ttl: Seconds after the last successful commit (or creation) before a session expires.
        max_sessions: Sessions kept; the least recently used idle one is evicted.
        max_ids: Delivered ids kept per session (FIFO).
        max_excerpts: Excerpts kept per session (FIFO).
        cursors: The cursor store whose entries ``reset`` clears.
    """

    def __init__(
        self,
        clock: Clock = time.monotonic,
        ttl: float = TTL_SECONDS,
        max_sessions: int = MAX_SESSIONS,
        max_ids: int = MAX_IDS,
        max_excerpts: int = MAX_EXCERPTS,
        *,
        cursors: CursorStore | None = None,
    ) -> None:
        self._clock = clock
        self._ttl = ttl
        self._max_sessions = max_sessions
        self._max_ids = max_ids
        self._max_excerpts = max_excerpts
        self._cursors = cursors
        self._sessions: OrderedDict[str, Session] = OrderedDict()  # LRU first

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    def _expired(self, session: Session, now: float) -> bool:
        return now - session.committed_at >= self._ttl

    def _sweep(self, now: float, keep: str) -> None:
        for sid, session in list(self._sessions.items()):
            if session._users == 0 and self._expired(session, now) and sid != keep:
                del self._sessions[sid]
        # ``keep`` is the session being handed out: with every other session busy it would be
        # the only idle one, and evicting it would lose the call's own commit.
        idle = [sid for sid, s in self._sessions.items() if s._users == 0 and sid != keep]
        for sid in idle[: max(0, len(self._sessions) - self._max_sessions)]:
            del self._sessions[sid]

    def get(self, session_id: str) -> Session:
        """The live session for ``session_id``, created if missing or expired; marks it used.

        Prefer ``acquire`` for calls that commit: it also holds the session's lock.
        """
        now = self._clock()
        session = self._sessions.get(session_id)
        if session is not None and session._users == 0 and self._expired(session, now):
            del self._sessions[session_id]
            session = None
        if session is None:
            session = Session(session_id, now, self._max_ids, self._max_excerpts)
            self._sessions[session_id] = session
        self._sessions.move_to_end(session_id)
        self._sweep(now, keep=session_id)
        return session

    @asynccontextmanager
    async def acquire(self, session_id: str) -> AsyncIterator[Session]:
        """Hold the session's lock for one call; the session cannot be evicted meanwhile."""
        session = self.get(session_id)
        session._users += 1
        try:
            async with session.lock:
                if self._expired(session, self._clock()):
                    # It expired while waiting for the lock: start it afresh.
                    session.clear()
                    session.committed_at = self._clock()
                yield session
        finally:
            session._users -= 1

    def page(self, session_id: str, key: str) -> object | None:
        """The page a live session was given for the call ``key``, without touching it (a
        repeat can skip the query's embedding; ``Session.page`` under the lock decides)."""
        session = self._sessions.get(session_id)
        if session is None or self._expired(session, self._clock()):
            return None
        return session.page(key)

    def excerpt_lookup(self, session_id: str, text: str) -> tuple[str, int, int] | None:
        """``(event_id, start, end)`` of an excerpt this session was already given."""
        session = self._sessions.get(session_id)
        return None if session is None else session.excerpt_lookup(text)

    def commit(
        self, session_id: str, delivered_ids: Iterable[str], excerpts: Iterable[Excerpt] = ()
    ) -> None:
        """Record a successful call's deliveries and restart the session's TTL.

        Call it only once the response is fully built; a failed call must record nothing.
        """
        session = self._sessions.get(session_id) or self.get(session_id)
        session.record(delivered_ids, excerpts)
        session.committed_at = self._clock()
        self._sessions.move_to_end(session_id)

    def reset(self, session_id: str) -> None:
        """reset_seen: forget the session's ids and excerpts and drop its cursors."""
        session = self._sessions.get(session_id)
        if session is not None:
            session.clear()
        if self._cursors is not None:
            self._cursors.clear_session(session_id)


Asked = tuple[str | None, tuple[str, ...], str | None]
"""A search's arguments: query, entity names, time hint (normalised: stripped, None if empty)."""


@dataclass(frozen=True, slots=True)
class CursorState:
    """How a chain continues (SPEC §1.9).

    Attributes:
        session_id: The session the cursor belongs to.
        chain_id: Shared by every cursor of one chain (a search starts a new one).
        chain_count: Events delivered along the chain up to this cursor.
        query_text: The search's query, None for entity/date-only searches.
        query_vector: Its embedding, reused by expand (None without a query).
        filters: The search's entity/date filters.
        model: Embedding model when the chain started.
        dims: Embedding dimensions when the chain started.
        delivered_ids: Every id delivered along the chain, root first (checked before use).
        concepts: Concepts mentioned by the events of the producing call (expand entries).
        anchors: Positional ids delivered by the producing call (nearby entries).
        asked: The search's arguments as given (query, entity names, time hint), so that
            ``search(cursor:)`` can tell a cursor of another search.
        created_at: Clock time of issue; the TTL counts from here.
    """

    session_id: str
    chain_id: str
    chain_count: int
    query_text: str | None
    query_vector: Vector | None
    filters: Filters
    model: str
    dims: int
    delivered_ids: tuple[str, ...]
    concepts: frozenset[str] = field(default_factory=frozenset)
    anchors: frozenset[str] = field(default_factory=frozenset)
    asked: Asked = (None, (), None)
    created_at: float = 0.0


class CursorStore:
    """Every live cursor, globally: at most 32 (oldest evicted), 15 minutes from creation.

    Args:
        clock: Seconds source.
        ttl: Seconds a cursor stays valid after it was issued.
        capacity: Cursors kept.
        chain_limit: Events per chain.
    """

    def __init__(
        self,
        clock: Clock = time.monotonic,
        ttl: float = TTL_SECONDS,
        capacity: int = MAX_CURSORS,
        chain_limit: int = CHAIN_LIMIT,
    ) -> None:
        self._clock = clock
        self._ttl = ttl
        self._capacity = capacity
        self.chain_limit = chain_limit
        self._states: OrderedDict[str, CursorState] = OrderedDict()  # oldest first

    def __len__(self) -> int:
        return len(self._states)

    def __contains__(self, token: object) -> bool:
        return token in self._states

    def _purge(self, now: float) -> None:
        for token, state in list(self._states.items()):
            if now - state.created_at >= self._ttl:
                del self._states[token]

    def _put(self, state: CursorState) -> str:
        now = self._clock()
        self._purge(now)
        while len(self._states) >= self._capacity:
            self._states.popitem(last=False)
        token = "cur_" + secrets.token_hex(8)
        self._states[token] = replace(state, created_at=now)
        return token

    def start_chain(
        self,
        *,
        session_id: str,
        query_text: str | None,
        query_vector: Vector | None,
        filters: Filters,
        model: str,
        dims: int,
        delivered_ids: Iterable[str],
        concepts: Iterable[str] = (),
        anchors: Iterable[str] = (),
        asked: Asked = (None, (), None),
    ) -> tuple[str, CursorState]:
        """Issue the cursor of a search: a new chain with ``chain_count = delivered``.

        Raises:
            ValueError: When nothing was delivered (no cursor is issued then) or the search
                delivered more than a chain holds.
        """
        ids = tuple(delivered_ids)
        self._check_batch(0, ids)
        state = CursorState(
            session_id=session_id,
            chain_id=secrets.token_hex(8),
            chain_count=len(ids),
            query_text=query_text,
            query_vector=query_vector,
            filters=filters,
            model=model,
            dims=dims,
            delivered_ids=ids,
            concepts=frozenset(concepts),
            anchors=frozenset(anchors),
            asked=asked,
        )
        token = self._put(state)
        return token, self._states[token]

    def branch(
        self,
        parent: CursorState,
        delivered_ids: Iterable[str],
        concepts: Iterable[str] = (),
        anchors: Iterable[str] = (),
    ) -> tuple[str, CursorState]:
        """Issue the child cursor of an expand/nearby call on ``parent``.

        The child counts ``parent.chain_count + delivered``, so branching from an older cursor
        of the chain uses that cursor's own count. Concepts and anchors are only those of the
        events delivered by this call.

        Raises:
            ValueError: When nothing was delivered or the chain limit would be exceeded.
        """
        ids = tuple(delivered_ids)
        self._check_batch(parent.chain_count, ids)
        child = replace(
            parent,
            chain_count=parent.chain_count + len(ids),
            delivered_ids=parent.delivered_ids + ids,
            concepts=frozenset(concepts),
            anchors=frozenset(anchors),
        )
        token = self._put(child)
        return token, self._states[token]

    def _check_batch(self, chain_count: int, ids: tuple[str, ...]) -> None:
        if not ids:
            raise ValueError("a call that delivers nothing issues no cursor")
        if chain_count + len(ids) > self.chain_limit:
            raise ValueError(f"a chain holds at most {self.chain_limit} events")

    def get(self, token: str, session_id: str) -> CursorState:
        """The live cursor ``token`` of ``session_id``.

        Raises:
            CursorInvalid: Unknown or expired token.
            CursorSession: The cursor belongs to another session.
        """
        self._purge(self._clock())
        state = self._states.get(token)
        if state is None:
            raise CursorInvalid(
                "cursor is invalid or expired; run search again",
                zh="游标无效或已过期，请重新 search",
            )
        if state.session_id != session_id:
            raise CursorSession("cursor belongs to another session", zh="游标不属于当前会话")
        return state

    def remaining(self, state: CursorState) -> int:
        """Events the chain may still deliver: ``20 - chain_count``.

        Raises:
            ChainExhausted: When nothing remains.
        """
        left = self.chain_limit - state.chain_count
        if left <= 0:
            raise ChainExhausted(
                f"the chain has reached its limit of {self.chain_limit} events; run search again",
                zh=f"追查链已达 {self.chain_limit} 个事件上限，请重新 search",
            )
        return left

    def verify(
        self,
        token: str,
        state: CursorState,
        *,
        model: str,
        dims: int,
        id_counts: Mapping[str, int],
    ) -> None:
        """Check a cursor against the current MemoryMeta and ids; drop it when broken.

        Args:
            token: The cursor's token.
            state: Its state.
            model: MemoryMeta's current model.
            dims: MemoryMeta's current dimensions.
            id_counts: How many nodes carry each of ``state.delivered_ids``.

        Raises:
            ChainBroken: The model/dims changed, or a delivered id is gone or duplicated.
        """
        if (model, dims) != (state.model, state.dims):
            self.drop(token)
            raise ChainBroken(
                "the embedding model or dimensions changed; the chain is broken, run search again",
                zh="向量模型或维度已改变，追查已中断，请重新 search",
            )
        if any(id_counts.get(i, 0) != 1 for i in state.delivered_ids):
            self.drop(token)
            raise ChainBroken(
                "a record of the chain was deleted or its id duplicated; run search again",
                zh="追查链中的记录已删除或 ID 重复，请重新 search",
            )

    def owner(self, token: str) -> str | None:
        """The session a live cursor belongs to, None when it is unknown or expired.

        For callers that carry no session of their own (a stateless MCP request): the cursor,
        an unguessable token of this space, then stands for the session that received it.
        """
        self._purge(self._clock())
        state = self._states.get(token)
        return state.session_id if state is not None else None

    def drop(self, token: str) -> None:
        self._states.pop(token, None)

    def clear(self) -> None:
        """Forget every cursor (after revectorize)."""
        self._states.clear()

    def clear_session(self, session_id: str) -> None:
        """Forget the cursors of one session (reset_seen)."""
        for token in [t for t, s in self._states.items() if s.session_id == session_id]:
            del self._states[token]
