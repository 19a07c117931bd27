"""Evidence history per session and chain cursors (SPEC §1.8, §1.9), shared by every process
of a memory (issue 30).

A session remembers which events and excerpts it has been given, so search, expand and nearby
skip them and repeated excerpts become quoteRefs. A cursor remembers how a chain was started
(query, vector, filters) so expand and nearby can continue it without new model calls, and so
``search(cursor:)`` can ask for the search's next page.

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

The cursors a call uses are loaded before it (``CursorStore.load``, ``Memory`` does it), so the
retrieval code reads them synchronously. Both stores read an injected clock (wall seconds:
processes compare it), so tests move time instead of sleeping.
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

from mnemoql.engine.errors import (
    ChainBroken,
    ChainExhausted,
    CursorExpired,
    CursorInvalid,
    CursorSession,
)
from mnemoql.engine.models import Filters, Vector
from mnemoql.engine.retrieval.evidence import CHAIN_LIMIT, Excerpt
from mnemoql.engine.session_codec import (
    JSON_PAGES,
    PageCodec,
    SessionBody,
    decode_cursor,
    encode_cursor,
)
from mnemoql.engine.session_state import Commit, LocalState, SharedState

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
        body = SessionBody.decode(stored) if stored is not None else SessionBody()
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
                body = SessionBody.decode(current) if current else SessionBody()
                return body.merge(change, caps).encode()

            commit.update = merged
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

        def same(current: bytes | None) -> bytes:
            return current if current is not None else SessionBody().encode()

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


_GONE = "gone"  # a cursor the state remembers as expired or evicted (a tombstone)


class CursorStore:
    """Every cursor of a memory, stored in ``state``: ``ttl`` seconds from creation, then
    ``CURSOR_EXPIRED`` (bounded by the state's size budget, not by a count).

    A call's cursors are loaded before it runs (``load``) and the cursors it issues are stored
    with its session's commit (``take``, from ``SessionStore.acquire``); in between,
    ``get``, ``start_chain`` and ``branch`` work on this process's copies.

    Args:
        clock: Seconds source (wall time).
        ttl: Seconds a cursor stays valid after it was issued.
        chain_limit: Events per chain.
        state: Where the rows live (default: this process only).
    """

    def __init__(
        self,
        clock: Clock = time.time,
        ttl: float = TTL_SECONDS,
        chain_limit: int = CHAIN_LIMIT,
        *,
        state: SharedState | None = None,
    ) -> None:
        self._clock = clock
        self._ttl = ttl
        self.chain_limit = chain_limit
        self.state: SharedState = state or LocalState()
        # copies for the calls running now: loaded, or issued and not stored yet
        self._seen: OrderedDict[str, CursorState | str] = OrderedDict()
        self._pending: dict[str, list[str]] = {}  # session -> tokens issued by its call
        self._drops: dict[str, list[tuple[str | None, str | None]]] = {}  # session -> drops

    def __contains__(self, token: object) -> bool:
        """A live copy in this process (tests)."""
        found = self._seen.get(token) if isinstance(token, str) else None
        return isinstance(found, CursorState) and not self._expired(found)

    def _expired(self, state: CursorState) -> bool:
        return self._clock() - state.created_at >= self._ttl

    def _keep(self, token: str, found: CursorState | str) -> None:
        self._seen[token] = found
        self._seen.move_to_end(token)
        while len(self._seen) > 4096:  # copies only: the state holds the cursors
            self._seen.popitem(last=False)

    async def load(self, token: str) -> None:
        """Read ``token``'s cursor from the state for the call about to use it."""
        row = await self.state.get("c", token, self._clock())
        if row is None:
            self._seen.pop(token, None)
        elif row.body is None:
            self._keep(token, _GONE)
        else:
            self._keep(token, decode_cursor(row.body))

    def take(self, session_id: str, commit: Commit, *, keep: bool) -> None:
        """Move what ``session_id``'s call did to the cursors into ``commit``: the cursors it
        issued and the drops it asked for (``keep``: the call succeeded; a failed call stores
        no cursor and resets nothing, but its broken chains still go)."""
        tokens = self._pending.pop(session_id, [])
        for key, owner in self._drops.pop(session_id, []):
            if key is not None:
                commit.drop_cursors.append(key)
            elif owner is not None and keep:
                commit.clear_cursors = True
        for token in tokens:
            found = self._seen.get(token)
            if keep and isinstance(found, CursorState):
                commit.cursors.append((token, encode_cursor(found), found.created_at))
            else:
                self._seen.pop(token, None)

    def _put(self, state: CursorState) -> str:
        token = "cur_" + secrets.token_hex(8)
        self._keep(token, replace(state, created_at=self._clock()))
        self._pending.setdefault(state.session_id, []).append(token)
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
        return token, self._issued(token)

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
        return token, self._issued(token)

    def _check_batch(self, chain_count: int, ids: tuple[str, ...]) -> None:
        if not ids:
            raise ValueError("a call that delivers nothing issues no cursor")
        if chain_count + len(ids) > self.chain_limit:
            raise ValueError(f"a chain holds at most {self.chain_limit} events")

    def _issued(self, token: str) -> CursorState:
        found = self._seen[token]
        assert isinstance(found, CursorState)
        return found

    def get(self, token: str, session_id: str) -> CursorState:
        """The live cursor ``token`` of ``session_id`` (loaded by ``load`` or issued here).

        Raises:
            CursorInvalid: A token this memory never issued (or forgot long ago).
            CursorExpired: A cursor past its TTL, or dropped for the state's size budget.
            CursorSession: The cursor belongs to another session.
        """
        found = self._seen.get(token)
        if found is None:
            raise CursorInvalid(
                "cursor is invalid or expired; run search again",
                zh="游标无效或已过期，请重新 search",
            )
        if found == _GONE or (isinstance(found, CursorState) and self._expired(found)):
            minutes = round(self._ttl / 60)
            raise CursorExpired(
                f"cursor expired (a cursor lives {minutes} minutes); run search again",
                zh="游标已过期，请重新 search",
            )
        assert isinstance(found, CursorState)
        if found.session_id != session_id:
            raise CursorSession("cursor belongs to another session", zh="游标不属于当前会话")
        return found

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

    async def owner(self, token: str) -> str | None:
        """The session a live cursor belongs to, None when it is unknown or expired.

        For callers that carry no session of their own (a stateless MCP request): the cursor,
        an unguessable token of this space, then stands for the session that received it.
        """
        await self.load(token)
        found = self._seen.get(token)
        if isinstance(found, CursorState) and not self._expired(found):
            return found.session_id
        return None

    def drop(self, token: str) -> None:
        """Drop a cursor (a broken chain) when the call using it ends, failed or not."""
        found = self._seen.get(token)
        self._seen.pop(token, None)
        if isinstance(found, CursorState):
            self._drops.setdefault(found.session_id, []).append((token, None))

    async def clear(self) -> None:
        """Forget every cursor (after revectorize or restore)."""
        self._seen.clear()
        self._pending.clear()
        await self.state.drop("c")

    def clear_session(self, session_id: str) -> None:
        """Forget the cursors of one session (reset_seen), when its call succeeds."""
        for token in [t for t, s in self._seen.items() if isinstance(s, CursorState)]:
            found = self._seen[token]
            if isinstance(found, CursorState) and found.session_id == session_id:
                del self._seen[token]
        self._pending.pop(session_id, None)
        self._drops.setdefault(session_id, []).append((None, session_id))
