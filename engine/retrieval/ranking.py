"""The ranking of one search or expand call (SPEC §1.4-§1.6): which routes run, their
weights, fusion, dedup and MMR over the candidates, with each pick's explanation.

``Ranker`` owns the ranking's knobs (the route weights, the records' weights, the lexical
gate, MMR's share, and whether ``nearby`` keeps the records nearest the query), which the
benches and tests turn on ``memory.retriever.ranker``. It is separate from ``pipeline``
because it reads no session and keeps nothing: the Retriever decides what a call excludes and
what its page records; the Ranker only orders candidates. The candidate lists beyond the
store's route pool are ``routes``'.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Literal

from mnemoql.engine.config import RecordWeights
from mnemoql.engine.dates import find_days
from mnemoql.engine.models import Filters, Hit, RoutePool, Vector
from mnemoql.engine.retrieval import diversity, scoring
from mnemoql.engine.retrieval.delivery import Explain, Ranked
from mnemoql.engine.retrieval.nearby import position_of
from mnemoql.engine.retrieval.routes import (
    ROUTE_LIMIT,
    adjacent,
    asked_again,
    derived_routes,
    lexical_route_for,
    person_route,
    time_route,
    window_route,
    with_events,
)
from mnemoql.engine.retrieval.speakers import asker_role, asks_when, role_lines, role_of
from mnemoql.engine.retrieval.terms import (
    coverages,
    is_cjk_term,
    query_terms,
    with_word_forms,
    without_template,
)
from mnemoql.engine.store.base import Store

# Past this many query terms the two lexical signals (the BM25 route and term coverage) fade
# as (LONG_QUERY_TERMS / terms) ** LONG_QUERY_POWER: a conversation cue of 30-60 words matches
# nearly every memory somewhere, so BM25 and coverage rank chat words, not evidence
# (docs/DECISIONS.md, "Long queries"). Questions (LongMemEval: median 8 terms, at most 26)
# keep SPEC's weights up to 16 terms.
LONG_QUERY_TERMS = 16
LONG_QUERY_POWER = 6
# How many of the chunk route's best hits decide whether a search ranks records.
RECORD_VOTES = 10


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


def lexical_fade(n_terms: int, long_terms: int = LONG_QUERY_TERMS) -> float:
    """The factor on the coverage and lexical-route weights for a query of ``n_terms`` terms:
    1 up to ``long_terms`` (0: always 1), then ``(long_terms / n_terms) ** LONG_QUERY_POWER``."""
    if long_terms <= 0 or n_terms <= long_terms:
        return 1.0
    return float((long_terms / n_terms) ** LONG_QUERY_POWER)


class Ranker:
    """Orders the candidates of one call over one store, with the knobs of its ranking."""

    def __init__(
        self,
        store: Store,
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
        self.today = today
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
        self.mmr_lambda = diversity.MMR_LAMBDA
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

    async def rank(
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
        some of that is evidence this query ranks (``routes.asked_again``)."""
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
            followup = await asked_again(self.store, vector, filters, given, chunk_hits)
        w = self.record_weights(followup) if records else self.document_weights()
        window_hits = (
            await window_route(
                self.store,
                (pool.summary, pool.chunk, lexical_hits),
                vector,
                filters,
                excluded,
                restrict,
                span=self.window_span,
                alpha=self.window_alpha,
            )
            if w.window > 0 and self.window_span > 0
            else []
        )
        person_hits = (
            await person_route(self.store, query, vector, filters, excluded, restrict)
            if records and query and w.person > 0
            else []
        )
        time_hits = (
            await time_route(self.store, query, self.today(), vector, filters, excluded, restrict)
            if query and w.time > 0
            else []
        )
        events = await with_events(
            self.store, pool.events, [*lexical_hits, *window_hits, *person_hits, *time_hits]
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
        derived = derived_routes(fused, events, w.statement, w.session) if records else []
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
            fused = scoring.share_with_neighbours(fused, w.neighbours, adjacent)
        distinct = scoring.dedup_by_hash(fused, lambda s: events[s.id].content_hash)
        hashes = {s.id: pool.chunk_hashes.get(s.id, frozenset()) for s in distinct}
        picks = diversity.mmr(
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
