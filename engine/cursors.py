"""Chain cursors (SPEC §1.9), shared by every process of a memory (issue 30).

A cursor remembers how a chain was started (query, vector, filters) so expand and nearby can
continue it without new model calls, and so ``search(cursor:)`` can ask for the search's next
page. Cursors are rows of ``engine.session_state`` beside the sessions (``engine.sessions``)
that own them: ``ttl`` seconds from issue, then a tombstone that answers ``CURSOR_EXPIRED``.
The cursors a call uses are loaded before it (``CursorStore.load``, ``Memory`` does it), so the
retrieval code reads them synchronously; the ones it issues are stored with its session's
commit (``CursorStore.take``).
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from mnemoql.engine.errors import (
    ChainBroken,
    ChainExhausted,
    CursorExpired,
    CursorInvalid,
    CursorSession,
)
from mnemoql.engine.models import Filters, Vector
from mnemoql.engine.retrieval.evidence import CHAIN_LIMIT
from mnemoql.engine.session_codec import decode_cursor, encode_cursor
from mnemoql.engine.session_state import Commit, LocalState, SharedState
from mnemoql.engine.sessions import TTL_SECONDS, Clock

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

    def _put(self, state: CursorState, token: str | None = None) -> str:
        """Keep a cursor issued now (``created_at`` the clock's time) under ``token`` (a new
        random one when None)."""
        token = token or "cur_" + secrets.token_hex(8)
        self._keep(token, state)
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
        drawn = secrets.token_hex(16)  # the chain's id and the token: one draw of randomness
        state = CursorState(
            session_id=session_id,
            chain_id=drawn[:16],
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
            created_at=self._clock(),
        )
        token = self._put(state, "cur_" + drawn[16:])
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
            created_at=self._clock(),
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
