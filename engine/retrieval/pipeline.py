"""Evidence retrieval's public operations (SPEC §1.4-§1.9): search, expand, nearby and the
Person/Concept search (``targeted``), with the sessions, cursors and repeated calls around them.
Which events a call picks and why is ``ranking``'s; the page's quotes, session history and
cursors are ``delivery``'s.

Everything store-specific stays behind the ``Store`` protocol; the maths are the pure functions
of ``scoring``, ``diversity``, ``terms`` and ``quotes``. A call records nothing in its session
unless it completes (``delivery.Delivery.page``).

Follow-ups are named by arguments: a page's cursor continues its search (``SearchRequest.cursor``)
as well as expand and nearby. A ``repeatable`` call (GraphQL) that repeats the arguments of an
earlier call of its session is answered with that call's page, so a client's cache and the
server agree (docs/followups.md); MCP tools leave it off, so calling the same search again still
brings the next events.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date

from mnemoql.engine.cursors import Asked, CursorState, CursorStore
from mnemoql.engine.errors import ConceptNotOffered, CursorError, InvalidInput, out_of_range
from mnemoql.engine.meta import check_vectors
from mnemoql.engine.models import (
    Filters,
    MemoryMeta,
    Vector,
)
from mnemoql.engine.providers.base import Embedder
from mnemoql.engine.retrieval.delivery import DEFAULT_SESSION, Delivery, Explain, Outcome, Ranked
from mnemoql.engine.retrieval.evidence import (
    CHAIN_LIMIT,
    EvidencePage,
    Note,
    NoteCode,
)
from mnemoql.engine.retrieval.nearby import parse_position, pick_neighbours
from mnemoql.engine.retrieval.ranking import Ranker
from mnemoql.engine.retrieval.routes import closest
from mnemoql.engine.retrieval.targeted import TargetedSearch
from mnemoql.engine.sessions import Session, SessionStore
from mnemoql.engine.store.base import Store
from mnemoql.engine.text import normalise_name
from mnemoql.engine.timehint import parse_time_hint

PER_CALL = 4
EXPAND_MAX = 8
EXPAND_DEFAULT = 3
NEARBY_MAX = 10
_SPLIT_TERMS = re.compile(r"[,，、;；]")


class AnchorNotOffered(CursorError):
    code = "ANCHOR_NOT_OFFERED"


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """What a search asks for. With ``cursor``, the next page of the search that cursor came
    from; query, entities and time hint may then be left out (or repeat that search's own)."""

    query: str | None = None
    entities: Sequence[str] | str | None = None
    time_hint: str | None = None
    reset_seen: bool = False
    cursor: str | None = None


class Retriever(TargetedSearch):
    """search / expand / nearby over one store, with the sessions and cursors of one space; the
    Person/Concept search is ``TargetedSearch``'s (``targeted``)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        sessions: SessionStore,
        cursors: CursorStore,
        today: Callable[[], date],
        *,
        ranker: Ranker | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.sessions = sessions
        self.cursors = cursors
        self.today = today
        self.delivery = Delivery(store, embedder, sessions, cursors)
        # How a search or expand orders its candidates, with the knobs of that ranking.
        self.ranker = ranker or Ranker(store, today)

    # ---- public operations ----

    async def search(
        self, req: SearchRequest, session_id: str | None, *, repeatable: bool = False
    ) -> Outcome:
        """A page of evidence (SPEC §1.4): the first page of a search, or with ``req.cursor``
        the next one. ``repeatable``: the same arguments in the same session give the same page.
        """
        if req.cursor is not None:
            return await self._search_on(req, session_id, repeatable)
        query = (req.query or "").strip() or None
        terms_in = _entity_terms(req.entities)
        hint = (req.time_hint or "").strip() or None
        if query is None and not terms_in and hint is None:
            raise InvalidInput(
                "search needs at least one of query, entities or timeHint",
                zh="search 需要 query_text、entity_filter、time_hint 至少一项",
            )
        sid = session_id or DEFAULT_SESSION
        asked: Asked = (query, tuple(terms_in), hint)
        key = _call_key("search", *asked) if repeatable and not req.reset_seen else None
        if key is not None and isinstance(again := self.sessions.page(sid, key), Outcome):
            return again  # a repeat: no embedding, no store
        # Everything that can fail on bad input runs before reset_seen touches the session.
        date_from, date_to = parse_time_hint(hint, self.today()) if hint else (None, None)
        vector: Vector | None = None
        # the meta check's round trip and the session's load overlap the query's embedding
        embedded = self._embedded(query) if query is not None else None
        try:
            async with self.sessions.acquire(sid) as session:
                if (again := _replay(session, key)) is not None:
                    return again
                if embedded is not None:
                    vector = await embedded
                if req.reset_seen:
                    self.sessions.reset(sid)
                groups: list[frozenset[str]] = []
                for term in terms_in:
                    ids = await self.store.resolve_terms(normalise_name(term))
                    if not ids:
                        page = EvidencePage(
                            operation="search",
                            excluded_count=len(session.excluded),
                            notes=(Note(NoteCode.ENTITY_NOT_FOUND, term),),
                        )
                        return Outcome(page, session_id=sid)
                    groups.append(ids)
                filters = Filters(tuple(groups), date_from, date_to)
                quota = min(PER_CALL, CHAIN_LIMIT)
                excluded = session.excluded
                ranked = await self.ranker.rank(
                    query, vector, filters, excluded, quota, None, given=session.delivered_ids
                )
                out = await self.delivery.page(
                    "search", session, ranked, query, vector, filters, None, asked=asked
                )
                return _kept(session, key, out)
        finally:
            _drop(embedded)

    async def _search_on(
        self, req: SearchRequest, session_id: str | None, repeatable: bool
    ) -> Outcome:
        """The next page of the search behind ``req.cursor``: the same query, vector and
        filters, ranked again without what the session has been given; a new chain."""
        token = req.cursor or ""
        if req.reset_seen:
            raise InvalidInput(
                "resetSeen starts a search over: pass it without a cursor",
                zh="reset_seen 用于重新开始 search，不能与 cursor 同用",
                argument="resetSeen",
            )
        sid = session_id or DEFAULT_SESSION
        async with self.sessions.acquire(sid) as session:
            key = _call_key("search", token) if repeatable else None
            if (again := _replay(session, key)) is not None:
                return again
            state = self.cursors.get(token, sid)
            _same_search(req, state.asked)
            await self._check_meta()
            if (state.model, state.dims) != (self.embedder.model, self.embedder.dimensions):
                self.cursors.verify(
                    token,
                    state,
                    model=self.embedder.model,
                    dims=self.embedder.dimensions,
                    id_counts={},
                )
            ranked = await self.ranker.rank(
                state.query_text,
                state.query_vector,
                state.filters,
                session.excluded,
                min(PER_CALL, CHAIN_LIMIT),
                None,
                followup=True,
            )
            out = await self.delivery.page(
                "search",
                session,
                ranked,
                state.query_text,
                state.query_vector,
                state.filters,
                None,
                asked=state.asked,
            )
            return _kept(session, key, out)

    async def expand(
        self,
        token: str,
        concept_id: str,
        limit: int,
        session_id: str | None,
        *,
        repeatable: bool = False,
    ) -> Outcome:
        if not 1 <= limit <= EXPAND_MAX:
            raise out_of_range("limit", 1, EXPAND_MAX, limit)
        sid = session_id or DEFAULT_SESSION
        async with self.sessions.acquire(sid) as session:
            key = _call_key("expand", token, concept_id, limit) if repeatable else None
            if (again := _replay(session, key)) is not None:
                return again
            state = await self._cursor(token, sid)
            if concept_id not in state.concepts:
                raise ConceptNotOffered(
                    f"{concept_id} is not an entry this cursor offers "
                    f"(offered: {', '.join(sorted(state.concepts)) or 'none'})",
                    zh="该 concept 不是当前游标提供的入口",
                )
            quota = min(limit, PER_CALL, self.cursors.remaining(state))
            candidates = await self.store.events_mentioning(concept_id)
            ranked = await self.ranker.rank(
                state.query_text,
                state.query_vector,
                state.filters,
                session.excluded,
                quota,
                candidates,
            )
            out = await self.delivery.page(
                "expand",
                session,
                ranked,
                state.query_text,
                state.query_vector,
                state.filters,
                state,
            )
            return _kept(session, key, out)

    async def nearby(
        self,
        token: str,
        event_id: str,
        before: int,
        after: int,
        session_id: str | None,
        *,
        repeatable: bool = False,
    ) -> Outcome:
        for name, value in (("before", before), ("after", after)):
            if not 0 <= value <= NEARBY_MAX:
                raise out_of_range(name, 0, NEARBY_MAX, value)
        sid = session_id or DEFAULT_SESSION
        async with self.sessions.acquire(sid) as session:
            key = _call_key("nearby", token, event_id, before, after) if repeatable else None
            if (again := _replay(session, key)) is not None:
                return again
            state = await self._cursor(token, sid)
            pos = parse_position(event_id)
            if event_id not in state.anchors:
                raise AnchorNotOffered(
                    f"{event_id} is not a nearby entry of this cursor "
                    f"(offered: {', '.join(sorted(state.anchors)) or 'none'})",
                    zh="该事件不是当前游标提供的邻近入口",
                )
            quota = min(PER_CALL, self.cursors.remaining(state))
            same_chapter = await self.store.positional_events(pos.prefix, pos.chapter)
            by_query = self.ranker.nearby_by_query
            picked = pick_neighbours(
                event_id,
                same_chapter,
                before,
                after,
                quota if not by_query else before + after,
                exclude=session.excluded,
            )
            if by_query and len(picked) > quota and state.query_vector is not None:
                picked = await closest(self.store, picked, state.query_vector, quota)
            ranked = Ranked(picked, {i: Explain(order="position") for i in picked})
            out = await self.delivery.page(
                "nearby",
                session,
                ranked,
                state.query_text,
                state.query_vector,
                state.filters,
                state,
            )
            return _kept(session, key, out)

    # ---- steps ----

    async def _check_meta(self) -> MemoryMeta | None:
        """The memory's meta; EMBEDDING_MISMATCH when it was embedded by another model."""
        meta = await self.store.get_meta()
        check_vectors(meta, self.embedder.model, self.embedder.dimensions)
        return meta

    def _embedded(self, query: str) -> asyncio.Future[Vector]:
        """The query's vector, embedded while the meta is checked (EMBEDDING_MISMATCH), as a
        task the caller awaits once it holds its session."""

        async def both() -> Vector:
            vector, _ = await asyncio.gather(self._embed_query(query), self._check_meta())
            return vector

        return asyncio.ensure_future(both())

    async def _embed_query(self, text: str) -> Vector:
        matrix = await self.embedder.embed([text], "query")
        vector: Vector = matrix[0]
        return vector

    async def _cursor(self, token: str, sid: str) -> CursorState:
        state = self.cursors.get(token, sid)
        meta = await self._check_meta()
        counts = await self.store.id_counts(list(state.delivered_ids))
        current = (meta.model, meta.dimensions) if meta else (state.model, state.dims)
        self.cursors.verify(token, state, model=current[0], dims=current[1], id_counts=counts)
        self.cursors.remaining(state)
        return state


def _call_key(operation: str, *args: object) -> str:
    """A call's arguments as one key of the session's page ledger."""
    return json.dumps([operation, *args], ensure_ascii=False)


def _drop(task: asyncio.Future[Vector] | None) -> None:
    """Stop an embedding the call no longer waits for (it returned early or failed), and mark
    an error it ended with as seen."""
    if task is None:
        return
    if not task.done():
        task.cancel()
    elif not task.cancelled():
        task.exception()


def _replay(session: Session, key: str | None) -> Outcome | None:
    page = session.page(key) if key is not None else None
    return page if isinstance(page, Outcome) else None


def _kept(session: Session, key: str | None, out: Outcome) -> Outcome:
    """Keep a page that delivered something under its call's key (a page that delivered
    nothing changed nothing, so asking again already gives the same answer)."""
    if key is not None and out.page.items:
        session.keep_page(key, out)
    return out


def _same_search(req: SearchRequest, asked: Asked) -> None:
    """With a cursor, query / entities / timeHint may be left out or repeat the cursor's own
    (a client that keeps its variables and adds the cursor); anything else is a mistake."""
    query = (req.query or "").strip() or None
    terms = tuple(_entity_terms(req.entities))
    hint = (req.time_hint or "").strip() or None
    for name, given, own in (
        ("query", query, asked[0]),
        ("entities", terms or None, asked[1] or None),
        ("timeHint", hint, asked[2]),
    ):
        if given is not None and given != own:
            raise InvalidInput(
                f"this cursor continues another search ({name} differs): leave {name} out "
                "or start a new search without the cursor",
                zh="该游标属于另一个 search：请去掉该参数，或不带 cursor 重新 search",
                argument=name,
            )


def _entity_terms(entities: Sequence[str] | str | None) -> list[str]:
    if entities is None:
        return []
    raw = [entities] if isinstance(entities, str) else list(entities)
    return [t.strip() for r in raw for t in _SPLIT_TERMS.split(r) if t.strip()]
