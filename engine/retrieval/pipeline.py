"""Evidence retrieval end to end (SPEC §1.4-§1.9): candidates from the store, fusion, dedup,
MMR; the page's quotes, session history and cursors are ``delivery``'s.

Everything store-specific stays behind the ``Store`` protocol; the maths are the pure functions
of ``scoring``, ``terms`` and ``quotes``. A call records nothing in its session unless it
completes (``delivery.Delivery.page``).

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Literal

import numpy as np

from mnemoql.engine.config import RecordWeights
from mnemoql.engine.cursors import Asked, CursorState, CursorStore
from mnemoql.engine.dates import find_days, find_spans
from mnemoql.engine.errors import ConceptNotOffered, CursorError, InvalidInput, out_of_range
from mnemoql.engine.meta import check_vectors
from mnemoql.engine.models import (
    Entity,
    EntityLabel,
    Event,
    Filters,
    Hit,
    MemoryMeta,
    Neighbour,
    RoutePool,
    Vector,
)
from mnemoql.engine.positions import neighbour_ids
from mnemoql.engine.providers.base import Embedder
from mnemoql.engine.retrieval import scoring
from mnemoql.engine.retrieval.delivery import DEFAULT_SESSION, Delivery, Explain, Outcome, Ranked
from mnemoql.engine.retrieval.evidence import (
    CHAIN_LIMIT,
    EvidencePage,
    Note,
    NoteCode,
)
from mnemoql.engine.retrieval.nearby import parse_position, pick_neighbours, position_of
from mnemoql.engine.retrieval.speakers import (
    asker_role,
    asks_when,
    named_people,
    role_lines,
    role_of,
    states_in_first_person,
)
from mnemoql.engine.retrieval.terms import (
    coverages,
    is_cjk_term,
    query_terms,
    with_word_forms,
    without_template,
)
from mnemoql.engine.sessions import Session, SessionStore
from mnemoql.engine.store.base import Store
from mnemoql.engine.store.window import record_vectors
from mnemoql.engine.text import normalise_name
from mnemoql.engine.timehint import parse_time_hint

ROUTE_LIMIT = 40
PER_CALL = 4
EXPAND_MAX = 8
EXPAND_DEFAULT = 3
NEARBY_MAX = 10
TARGET_TOP = 3
TARGET_NEIGHBOURS = 20
# Past this many query terms the two lexical signals (the BM25 route and term coverage) fade
# as (LONG_QUERY_TERMS / terms) ** LONG_QUERY_POWER: a conversation cue of 30-60 words matches
# nearly every memory somewhere, so BM25 and coverage rank chat words, not evidence
# (docs/DECISIONS.md, "Long queries"). Questions (LongMemEval: median 8 terms, at most 26)
# keep SPEC's weights up to 16 terms.
LONG_QUERY_TERMS = 16
LONG_QUERY_POWER = 6
_SPLIT_TERMS = re.compile(r"[,，、;；]")
# The window route (``engine.store.window``) looks around the best hits of each other route.
WINDOW_SEEDS = 20
# How many of the chunk route's best hits decide whether a search ranks records.
RECORD_VOTES = 10
# How many of a session's latest events tell a search asked again (a follow-up) from a new one.
FOLLOWUP_RECENT = 20


@dataclass(frozen=True, slots=True)
class RouteWeights:
    """One ranking's weights: the summary, lexical and window routes' RRF weights (the chunk
    route's is 1), the coverage term's, the speaker route's and the neighbour share."""

    summary: float
    lexical: float
    coverage: float
    window: float
    speaker: float = 0.0
    neighbours: float = 0.0
    person: float = 0.0
    dated: float = 0.0
    statement: float = 0.0
    session: float = 0.0
    time: float = 0.0


def _session_of(event_id: str) -> str | None:
    """The conversation session (prefix and chapter) of a positional id, None without one."""
    pos = position_of(event_id)
    return f"{pos.prefix}_ch{pos.chapter}" if pos is not None else None


def _derived_routes(
    fused: Sequence[scoring.Scored], events: Mapping[str, Event], w: RouteWeights
) -> list[tuple[list[str], float]]:
    """The records' routes read off the other routes' fused order (each with its weight,
    only those weighed above 0): the candidates that state something in the first person,
    and the candidates grouped by session, the sessions with the most fused score first."""
    out: list[tuple[list[str], float]] = []
    if w.statement > 0:
        ids = [s.id for s in fused if states_in_first_person(events[s.id].content)]
        out.append((ids, w.statement))
    if w.session > 0:
        out.append((scoring.by_group(fused, _session_of), w.session))
    return out


def _adjacent(event_id: str) -> list[str]:
    """The records right before and after a positional id (none for other ids)."""
    return neighbour_ids(event_id, 1, 1) if position_of(event_id) is not None else []


def is_message_pool(pool: RoutePool) -> bool:
    """Whether the chunk route's best hits are mostly messages saved one at a time: positional
    records (``<prefix>_ch<N>_e<M>``) with at most one speaker-role line, the shape a chat
    agent saves. The ranking then takes the records' weights. An exchange saved whole (a user
    turn and the replies to it) keeps the documents' weights, which its client summaries suit
    (docs/DECISIONS.md, "Records ranking")."""
    top = [pool.events.get(h.event_id) for h in pool.chunk[:RECORD_VOTES]]
    votes = sum(
        e is not None and position_of(e.id) is not None and role_lines(e.content) <= 1 for e in top
    )
    return bool(top) and 2 * votes > len(top)


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


@dataclass(frozen=True, slots=True)
class TargetedHit:
    node: Entity
    score: float
    exact: bool
    neighbours: tuple[tuple[Neighbour, Entity | Event], ...]


@dataclass(frozen=True, slots=True)
class TargetedPage:
    target: str
    query: str
    hits: tuple[TargetedHit, ...]


class Retriever:
    """search / expand / nearby over one store, with the sessions and cursors of one space."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        sessions: SessionStore,
        cursors: CursorStore,
        today: Callable[[], date],
        *,
        lexical: bool | Literal["auto"] = "auto",
        coverage_weight: float = scoring.COVERAGE_WEIGHT,
        lexical_weight: float = 1.0,
        long_query_terms: int = LONG_QUERY_TERMS,
        window_span: int = 0,
        window_alpha: float = 0.5,
        window_weight: float = 0.0,
        summary_weight: float = 1.0,
        time_weight: float = 0.0,
        records: RecordWeights | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.sessions = sessions
        self.cursors = cursors
        self.today = today
        self.delivery = Delivery(store, embedder, sessions, cursors)
        # The lexical (BM25) route beside the two vector routes; off gives SPEC §1.4's two.
        self.lexical = lexical
        self.coverage_weight = coverage_weight
        self.lexical_weight = lexical_weight
        # 0 keeps SPEC's fixed weights for every query length.
        self.long_query_terms = long_query_terms
        # The window route: positional records scored with their neighbours within
        # ``window_span`` (neighbour vectors weighted ``window_alpha``), fused with
        # ``window_weight``; span or weight 0 leaves it out (docs/DECISIONS.md, "Window route").
        self.window_span = window_span
        self.window_alpha = window_alpha
        self.window_weight = window_weight
        # nearby(before, after) keeps the records of its window nearest the cursor's query
        # instead of the nearest in position (same quota, same window).
        self.nearby_by_query = False
        # The summary route's RRF weight and MMR's relevance share (SPEC §1.4: 1 and 0.85).
        self.summary_weight = summary_weight
        self.mmr_lambda = scoring.MMR_LAMBDA
        # The time route: the events written in the days a time phrase of the query names.
        self.time_weight = time_weight
        # Positional records (conversation turns saved one message at a time) rank by route
        # ranks: BM25 on, no summary vote, no coverage, the asker's own turns as a route
        # (docs/DECISIONS.md, "Records ranking").
        rw = records or RecordWeights()
        self.records_summary_weight = rw.summary_weight
        self.records_lexical_weight = rw.lexical_weight
        self.records_coverage_weight = rw.coverage_weight
        self.records_speaker_weight = rw.speaker_weight
        self.records_window_weight = rw.window_weight
        self.records_neighbour_share = rw.neighbour_share
        # The person route: messages of and about a Person the question names.
        self.records_person_weight = rw.person_weight
        # The dated route: for a "when" question, the candidates that state a day.
        self.records_dated_weight = rw.dated_weight
        # Round 6's levers, off by default (docs/DECISIONS.md): BM25 without the question's
        # template words, the first-person statements as a route, the best sessions' records.
        self.records_lexical_drop_template = rw.lexical_drop_template
        self.records_lexical_word_forms = rw.lexical_word_forms
        self.records_statement_weight = rw.statement_weight
        self.records_session_weight = rw.session_weight
        # A follow-up (the search's next page, or the same question again in its session)
        # ranks records with these (docs/followups.md, "How a follow-up ranks").
        self.records_followup_window_weight = rw.followup_window_weight
        self.records_followup_neighbour_share = rw.followup_neighbour_share
        self.records_followup_speaker_weight = rw.followup_speaker_weight
        self.records_followup_lexical_weight = rw.followup_lexical_weight
        self.records_followup_summary_weight = rw.followup_summary_weight

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
        if query is not None:  # the meta check's round trip overlaps the query's embedding
            vector, _ = await asyncio.gather(self._embed_query(query), self._check_meta())
        async with self.sessions.acquire(sid) as session:
            if (again := _replay(session, key)) is not None:
                return again
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
            ranked = await self._rank(
                query, vector, filters, excluded, quota, None, given=session.delivered_ids
            )
            out = await self.delivery.page(
                "search", session, ranked, query, vector, filters, None, asked=asked
            )
            return _kept(session, key, out)

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
            ranked = await self._rank(
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
            ranked = await self._rank(
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
            picked = pick_neighbours(
                event_id,
                same_chapter,
                before,
                after,
                quota if not self.nearby_by_query else before + after,
                exclude=session.excluded,
            )
            if self.nearby_by_query and len(picked) > quota and state.query_vector is not None:
                picked = await self._closest(picked, state.query_vector, quota)
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

    async def targeted(self, target: str, query: str | None) -> TargetedPage:
        """Person/Concept search: top 3 plus one-hop context; no history, no cursor."""
        if target not in ("Person", "Concept"):
            raise InvalidInput(
                "target must be Event, Person or Concept",
                zh="target_label 仅支持 Event/Person/Concept",
            )
        text = (query or "").strip()
        if not text:
            raise InvalidInput(
                "a Person/Concept search needs a query", zh="定向检索需要 query_text"
            )
        await self._check_meta()
        label: EntityLabel = "Person" if target == "Person" else "Concept"
        exact_ids = await self.store.resolve_terms(normalise_name(text))
        exact_nodes = [
            n
            for n in await self.store.get_nodes(sorted(exact_ids))
            if isinstance(n, Entity) and n.label == label
        ]
        ranked: list[tuple[Entity, float, bool]] = [(n, 1.0, True) for n in exact_nodes][
            :TARGET_TOP
        ]
        if len(ranked) < TARGET_TOP:
            vector = await self._embed_query(text)
            seen = {n.id for n, _, _ in ranked}
            for ent, cos in await self.store.entity_vector_top(
                label, vector, TARGET_TOP + len(seen)
            ):
                if ent.id not in seen and len(ranked) < TARGET_TOP:
                    ranked.append((ent, cos, False))
        hits = []
        rows = await self.store.neighbours([n.id for n, _, _ in ranked], None, "both", 200)
        for node, score, exact in ranked:
            mine = rows.get(node.id, [])
            others = await self.store.get_nodes([r.other_id for r in mine])
            pairs = [(r, o) for r, o in zip(mine, others, strict=True) if o is not None]
            pairs.sort(key=lambda p: (p[0].rel.type, _neg_time(p[1])))
            hits.append(TargetedHit(node, score, exact, tuple(pairs[:TARGET_NEIGHBOURS])))
        return TargetedPage(target, text, tuple(hits))

    # ---- steps ----

    async def _check_meta(self) -> MemoryMeta | None:
        """The memory's meta; EMBEDDING_MISMATCH when it was embedded by another model."""
        meta = await self.store.get_meta()
        check_vectors(meta, self.embedder.model, self.embedder.dimensions)
        return meta

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

    async def _rank(
        self,
        query: str | None,
        vector: Vector | None,
        filters: Filters,
        excluded: frozenset[str],
        quota: int,
        restrict: frozenset[str] | None,
        *,
        followup: bool = False,
        given: Sequence[str] = (),
    ) -> Ranked:
        """Pick up to ``quota`` events, with explanations, best-chunk ranges and the events.

        ``followup``: the search continues one (its cursor's next page); ``given``: what the
        session was given so far, so a search asked again in it ranks as a follow-up when
        some of that is evidence this query ranks (``_asked_again``)."""
        if restrict is not None:
            restrict = restrict - excluded
            if not restrict:
                return Ranked([], {})
        if vector is None:
            ids = await self.store.recent_events(filters, excluded, ROUTE_LIMIT, restrict)
            events = {e.id: e for e in await self.store.get_events(ids)}
            kept = scoring.dedup_by_hash(
                ids, lambda i: events[i].content_hash if i in events else None
            )
            picked = kept[:quota]
            return Ranked(picked, {i: Explain(order="recency") for i in picked}, events=events)
        text = query if query and lexical_route_for(query, self.lexical) else None
        pool = await self.store.route_pool(
            vector, filters, excluded, ROUTE_LIMIT, restrict, text=text
        )
        records = is_message_pool(pool)
        lexical_hits = pool.lexical
        if records and query and text is None and self.lexical == "auto":
            # conversation turns: BM25 is what lifts plain RRF above dense (issue #25)
            lexical_hits = await self.store.lexical_route(
                self._lexical_text(query), filters, excluded, ROUTE_LIMIT, restrict
            )
        summary_hits, chunk_hits = pool.summary, pool.chunk
        if records and not followup and given and vector is not None and self._followups_differ():
            followup = await self._asked_again(vector, filters, given, chunk_hits)
        w = self.record_weights(followup) if records else self.document_weights()
        window_hits = await self._window(
            (pool.summary, pool.chunk, lexical_hits), vector, filters, excluded, restrict, w.window
        )
        person_hits = (
            await self._person_route(query, vector, filters, excluded, restrict)
            if records and query and w.person > 0
            else []
        )
        time_hits = (
            await self._time_route(query, vector, filters, excluded, restrict)
            if query and w.time > 0
            else []
        )
        events = await self._with_events(
            pool.events, [*lexical_hits, *window_hits, *person_hits, *time_hits]
        )
        if not events:
            return Ranked([], {})
        terms = query_terms(query or "")
        cov = coverages(terms, ((i, e.summary, e.content) for i, e in events.items()))
        fade = lexical_fade(sum(not is_cjk_term(t) for t in terms), self.long_query_terms)
        routes = {
            "summary": [h.event_id for h in summary_hits if h.event_id in events],
            "chunk": [h.event_id for h in chunk_hits if h.event_id in events],
            "lexical": [h.event_id for h in lexical_hits if h.event_id in events],
            "window": [h.event_id for h in window_hits if h.event_id in events],
            "person": [h.event_id for h in person_hits if h.event_id in events],
            "time": [h.event_id for h in time_hits if h.event_id in events],
        }

        def fuse(
            speaker_ids: Sequence[str] = (),
            dated_ids: Sequence[str] = (),
            extra: Sequence[tuple[Sequence[str], float]] = (),
        ) -> list[scoring.Scored]:
            return scoring.fuse(
                routes["summary"],
                routes["chunk"],
                cov,
                lexical_ids=routes["lexical"],
                weight=w.coverage * fade,
                lexical_weight=w.lexical * fade,
                window_ids=routes["window"],
                window_weight=w.window,
                summary_weight=w.summary,
                speaker_ids=speaker_ids,
                speaker_weight=w.speaker,
                person_ids=routes["person"],
                person_weight=w.person,
                dated_ids=dated_ids,
                dated_weight=w.dated,
                extra=[*extra, (routes["time"], w.time)] if routes["time"] else extra,
            )

        fused = fuse()
        role = asker_role(query or "") if records and w.speaker > 0 else None
        when = records and w.dated > 0 and asks_when(query or "")
        derived = _derived_routes(fused, events, w) if records else []
        if role is not None or when or derived:
            # the speaker route: the asker's own turns; the dated route: for a "when"
            # question, the turns that state a day; both in the order of the other routes
            today = self.today()
            fused = fuse(
                [s.id for s in fused if role_of(events[s.id].content) == role] if role else (),
                [s.id for s in fused if find_days(events[s.id].content[:4000], today)]
                if when
                else (),
                derived,
            )
        if records:
            fused = scoring.share_with_neighbours(fused, w.neighbours, _adjacent)
        distinct = scoring.dedup_by_hash(fused, lambda s: events[s.id].content_hash)
        hashes = {s.id: pool.chunk_hashes.get(s.id, frozenset()) for s in distinct}
        picks = scoring.mmr(
            distinct,
            {i: e.embedding for i, e in events.items()},
            hashes,
            quota,
            self.mmr_lambda,
        )
        s_cos = {h.event_id: h.score for h in summary_hits}
        c_hit: dict[str, Hit] = {h.event_id: h for h in chunk_hits}
        lex: dict[str, Hit] = {h.event_id: h for h in lexical_hits}
        explain = {
            p.id: Explain(
                summary_rank=p.scored.summary_rank,
                chunk_rank=p.scored.chunk_rank,
                summary_cosine=s_cos.get(p.id),
                chunk_cosine=c_hit[p.id].score if p.id in c_hit else None,
                lexical_rank=p.scored.lexical_rank,
                lexical_score=lex[p.id].score if p.id in lex else None,
                rrf=p.scored.rrf,
                coverage=p.scored.coverage,
                score=p.scored.score,
                mmr_step=p.step,
                relevance=p.relevance,
                redundancy=p.redundancy,
            )
            for p in picks
        }
        # The quote's region: the chunk the vector route liked best, else the lexical one.
        best = {
            i: (h.start, h.end)
            for i, h in [*lex.items(), *c_hit.items()]
            if h.start is not None and h.end is not None
        }
        more = len(distinct) > len(picks)
        return Ranked([p.id for p in picks], explain, best, events, pool.concepts, more)

    def _lexical_text(self, query: str) -> str:
        """The text the records' BM25 route reads: the query, without its template words
        (``records_lexical_drop_template``), with its words' other inflections
        (``records_lexical_word_forms``)."""
        text = without_template(query) if self.records_lexical_drop_template else query
        forms = self.records_lexical_word_forms
        return with_word_forms(text, forms == "all") if forms != "off" else text

    def document_weights(self) -> RouteWeights:
        """The fusion weights for documents, notes and anything without a position."""
        return RouteWeights(
            self.summary_weight,
            self.lexical_weight,
            self.coverage_weight,
            self.window_weight,
            time=self.time_weight,
        )

    def record_weights(self, followup: bool = False) -> RouteWeights:
        """The fusion weights when the routes found positional records (conversation turns,
        book scenes: docs/DECISIONS.md, "Records ranking"); ``followup``: for a search that
        continues one (docs/followups.md, "How a follow-up ranks")."""
        if followup:
            return RouteWeights(
                self.records_followup_summary_weight,
                self.records_followup_lexical_weight,
                self.records_coverage_weight,
                self.records_followup_window_weight,
                self.records_followup_speaker_weight,
                self.records_followup_neighbour_share,
                self.records_person_weight,
                self.records_dated_weight,
                self.records_statement_weight,
                self.records_session_weight,
                self.time_weight,
            )
        return RouteWeights(
            self.records_summary_weight,
            self.records_lexical_weight,
            self.records_coverage_weight,
            self.records_window_weight,
            self.records_speaker_weight,
            self.records_neighbour_share,
            self.records_person_weight,
            self.records_dated_weight,
            self.records_statement_weight,
            self.records_session_weight,
            self.time_weight,
        )

    def _followups_differ(self) -> bool:
        """Whether a follow-up ranks records otherwise than a first call (else there is
        nothing to tell apart, and no store read for it)."""
        return (
            self.records_followup_window_weight,
            self.records_followup_neighbour_share,
            self.records_followup_speaker_weight,
            self.records_followup_lexical_weight,
            self.records_followup_summary_weight,
        ) != (
            self.records_window_weight,
            self.records_neighbour_share,
            self.records_speaker_weight,
            self.records_lexical_weight,
            self.records_summary_weight,
        )

    async def _asked_again(
        self, vector: Vector, filters: Filters, given: Sequence[str], chunk_hits: Sequence[Hit]
    ) -> bool:
        """Whether a search without a cursor continues an earlier one of its session: some of
        the session's last ``FOLLOWUP_RECENT`` events would rank in this query's chunk route
        (the route's top ``ROUTE_LIMIT`` with nothing excluded). A new question in a session
        that was given other evidence ranks as a first call."""
        recent = frozenset(given[-FOLLOWUP_RECENT:])
        hits = await self.store.route("chunk", vector, filters, frozenset(), len(recent), recent)
        if not hits:
            return False
        if len(chunk_hits) < ROUTE_LIMIT:  # the route held every event that passes
            return True
        cutoff = chunk_hits[-1].score
        return any(h.score >= cutoff for h in hits)

    async def _person_route(
        self,
        query: str,
        vector: Vector,
        filters: Filters,
        excluded: frozenset[str],
        restrict: frozenset[str] | None,
    ) -> list[Hit]:
        """The person route (issue #25, "who in the question"): the events adjacent to a
        Person the query names (a named speaker's own messages, PARTICIPATED_IN, and the
        messages that mention them), ranked by the chunk route under the search's filters
        plus that entity filter; empty when the query names no Person the memory knows."""
        found: set[str] = set()
        for name in named_people(query):
            found |= await self.store.resolve_terms(normalise_name(name))
        if not found:
            return []
        nodes = await self.store.get_nodes(sorted(found))
        people = frozenset(n.id for n in nodes if isinstance(n, Entity) and n.label == "Person")
        if not people:
            return []
        theirs = Filters((people, *filters.groups), filters.date_from, filters.date_to)
        return await self.store.route("chunk", vector, theirs, excluded, ROUTE_LIMIT, restrict)

    async def _time_route(
        self,
        query: str,
        vector: Vector,
        filters: Filters,
        excluded: frozenset[str],
        restrict: frozenset[str] | None,
    ) -> list[Hit]:
        """The time route (docs/DECISIONS.md, "The time route"): for a query naming a time
        ("the past weekend", "last Saturday", 上个月), the events written in those days (from
        the first phrase's first day to the last one's last), ranked by the chunk route under
        the search's filters narrowed to them; empty without a time phrase, or when the
        filters' own dates leave no day."""
        spans = find_spans(query, self.today())
        if not spans:
            return []
        first = max(min(a for a, _ in spans).isoformat(), filters.date_from or "")
        last = min(max(b for _, b in spans).isoformat(), filters.date_to or "9999-12-31")
        if first > last:
            return []
        within = Filters(filters.groups, first, last)
        return await self.store.route("chunk", vector, within, excluded, ROUTE_LIMIT, restrict)

    async def _with_events(self, events: dict[str, Event], hits: Sequence[Hit]) -> dict[str, Event]:
        """``events`` plus the events of ``hits`` it lacks (read with their vectors)."""
        missing = list(dict.fromkeys(h.event_id for h in hits if h.event_id not in events))
        if not missing:
            return events
        found = await self.store.get_events(missing, with_vectors=True)
        return {**events, **{e.id: e for e in found}}

    async def _closest(self, ids: list[str], vector: Vector, quota: int) -> list[str]:
        """The ``quota`` records of ``ids`` nearest the query by content vector (ties by
        position), in their original order: ``nearby`` with ``nearby_by_query``."""
        vectors = await record_vectors(self.store, ids)
        q = vector / (float(np.linalg.norm(vector)) or 1.0)
        score = {i: float(np.dot(vectors[i], q)) if i in vectors else -2.0 for i in ids}
        keep = set(sorted(ids, key=lambda i: (-score[i], ids.index(i)))[:quota])
        return [i for i in ids if i in keep]

    async def _window(
        self,
        routes: Sequence[Sequence[Hit]],
        vector: Vector,
        filters: Filters,
        excluded: frozenset[str],
        restrict: frozenset[str] | None,
        weight: float,
    ) -> list[Hit]:
        """The window route around the other routes' best hits; empty when it is off or no
        hit has a position."""
        if weight <= 0 or self.window_span <= 0:
            return []
        seeds = list(dict.fromkeys(h.event_id for hits in routes for h in hits[:WINDOW_SEEDS]))
        if not any(position_of(s) for s in seeds):
            return []
        return await self.store.window_route(
            vector,
            seeds,
            filters,
            excluded,
            ROUTE_LIMIT,
            restrict,
            span=self.window_span,
            alpha=self.window_alpha,
        )


# A token a dense model reads poorly and BM25 finds at once: a part number, an order id, a
# version, an acronym (XK-4471-B, INV-2024-0032, v2.3, GDPR) or a quoted phrase.
_IDENTIFIER = re.compile(
    r"\b(?=[\w.-]*\d)(?=[\w.-]*[A-Za-z])[A-Za-z0-9][\w.-]*[A-Za-z0-9]\b|\b[A-Z]{2,}\d*\b|[\"“「][^\"”」]{2,}[\"”」]"
)


def lexical_route_for(query: str, setting: bool | Literal["auto"]) -> bool:
    """Whether the BM25 route joins this search: always (True), never (False), or with
    ``"auto"`` (the default) when the query holds an identifier-like token or a quoted
    phrase. On whole LongMemEval haystacks the route on every query cost the first call and
    five searches recall (docs/DECISIONS.md, "Lexical route"), while exact identifiers are
    what it exists for."""
    if setting != "auto":
        return bool(setting)
    return _IDENTIFIER.search(query) is not None


def lexical_fade(n_terms: int, long_terms: int = LONG_QUERY_TERMS) -> float:
    """The factor on the coverage and lexical-route weights for a query of ``n_terms`` terms:
    1 up to ``long_terms`` (0: always 1), then ``(long_terms / n_terms) ** LONG_QUERY_POWER``."""
    if long_terms <= 0 or n_terms <= long_terms:
        return 1.0
    return float((long_terms / n_terms) ** LONG_QUERY_POWER)


def _call_key(operation: str, *args: object) -> str:
    """A call's arguments as one key of the session's page ledger."""
    return json.dumps([operation, *args], ensure_ascii=False)


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


def _neg_time(node: Entity | Event) -> str:
    # create_time DESC inside one relationship type: invert the ISO string's sort order.
    return "".join(chr(0x10FFFF - ord(c)) for c in node.create_time)
