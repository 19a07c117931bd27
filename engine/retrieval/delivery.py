"""An evidence page's delivery (SPEC §1.6-§1.9): the picked events' quotes under one budget,
their concepts, the cursor that continues them, and the session's ledger.

Ranking (``ranking``) says which events and why; delivery reads what the page shows and records
it. A call records nothing unless it completes: the page is fully built first, then the cursor is
issued and the session committed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mnemoql.engine.cursors import Asked, CursorState, CursorStore
from mnemoql.engine.models import Entity, Event, Filters, Vector
from mnemoql.engine.providers.base import Embedder
from mnemoql.engine.retrieval.evidence import (
    ConceptRef,
    EvidenceItem,
    EvidencePage,
    Excerpt,
    Note,
    NoteCode,
    Operation,
    continuations,
    shared_concepts,
)
from mnemoql.engine.retrieval.quotes import QuoteBudget, QuoteResult, best_chunk, shown_summary
from mnemoql.engine.retrieval.terms import query_terms
from mnemoql.engine.sessions import Session, SessionStore
from mnemoql.engine.store.base import Store

DEFAULT_SESSION = "default"


@dataclass(frozen=True, slots=True)
class Explain:
    """Why an event was delivered: its route ranks, fused score and MMR step."""

    summary_rank: int | None = None
    chunk_rank: int | None = None
    summary_cosine: float | None = None
    chunk_cosine: float | None = None
    lexical_rank: int | None = None
    lexical_score: float | None = None  # BM25 of the event's best chunk or summary
    rrf: float = 0.0
    coverage: float = 0.0
    score: float = 0.0
    mmr_step: int | None = None
    relevance: float | None = None
    redundancy: float | None = None
    order: str = "hybrid"  # hybrid | recency | position


@dataclass(slots=True)
class Outcome:
    """An evidence page plus what the API exposes beside it."""

    page: EvidencePage
    explain: dict[str, Explain] = field(default_factory=dict)
    session_id: str = DEFAULT_SESSION


@dataclass(frozen=True)
class Ranked:
    """What a ranking step picked: ids in order, why, each one's best chunk range (chunk
    route) and the events already read on the way (so delivery does not read them again)."""

    picked: list[str]
    explain: dict[str, Explain]
    best: dict[str, tuple[int, int]] = field(default_factory=dict)
    events: Mapping[str, Event] = field(default_factory=dict)
    concepts: Mapping[str, tuple[tuple[str, str], ...]] | None = None
    # the ranking held more distinct candidates than it picked: asking again finds more
    more: bool = False


class Delivery:
    """Turns a ranking into the page a caller gets, over one store, with the sessions and
    cursors of one space."""

    def __init__(
        self, store: Store, embedder: Embedder, sessions: SessionStore, cursors: CursorStore
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.sessions = sessions
        self.cursors = cursors

    async def _concepts(self, picked: list[str]) -> dict[str, tuple[ConceptRef, ...]]:
        """The concepts each picked event MENTIONS (by id, at most 50), with their names, read
        from the store (``_known_concepts`` when the ranking read them already)."""
        rows = await self.store.neighbours(picked, "MENTIONS", "out", 50)
        ids = list(dict.fromkeys(r.other_id for mine in rows.values() for r in mine))
        names = {n.id: n.name for n in await self.store.get_nodes(ids) if isinstance(n, Entity)}
        return {
            i: tuple(ConceptRef(r.other_id, names.get(r.other_id, r.other_id)) for r in mine)
            for i, mine in rows.items()
        }

    async def _quotes(
        self,
        picked: Sequence[str],
        events: Mapping[str, Event],
        best: Mapping[str, tuple[int, int]],
        query: str | None,
        vector: Vector | None,
        session: Session,
    ) -> tuple[list[QuoteResult], list[Excerpt]]:
        """Each picked event's quote, in order, under one budget (the region of its best
        chunk, read here when the ranking did not say which one was best), and the excerpts
        they deliver."""
        budget = QuoteBudget(query_terms(query or ""), lookup=session.excerpt_lookup)
        need_local = [
            i for i in picked if vector is not None and (i not in best or best[i][0] >= 32000)
        ]
        local_chunks = (
            await self.store.get_chunks(need_local, with_vectors=True) if need_local else {}
        )
        quotes = []
        for event_id in picked:
            region = best.get(event_id)
            if vector is not None and (region is None or region[0] >= 32000):
                region = best_chunk(local_chunks.get(event_id, []), vector)
            quotes.append(budget.take(event_id, events[event_id].content, region))
        return quotes, budget.pending

    async def page(
        self,
        operation: Operation,
        session: Session,
        ranked: Ranked,
        query: str | None,
        vector: Vector | None,
        filters: Filters,
        parent: CursorState | None,
        *,
        asked: Asked = (None, (), None),
    ) -> Outcome:
        explain, best = ranked.explain, ranked.best
        events = {i: ranked.events[i] for i in ranked.picked if i in ranked.events}
        missing = [i for i in ranked.picked if i not in events]
        if missing:
            events.update((e.id, e) for e in await self.store.get_events(missing))
        picked = [i for i in ranked.picked if i in events]
        concepts = _known_concepts(picked, ranked.concepts)
        if concepts is not None:  # the route pool read them: no store read, no task
            quotes, excerpts = await self._quotes(picked, events, best, query, vector, session)
        else:
            # the concepts' store reads run while the quotes are cut (the same results)
            concepts_read = asyncio.ensure_future(self._concepts(picked))
            try:
                quotes, excerpts = await self._quotes(picked, events, best, query, vector, session)
                concepts = await concepts_read
            finally:
                concepts_read.cancel()  # a no-op once it is done; else nothing waits for it
        items: list[EvidenceItem] = []
        for event_id, quote in zip(picked, quotes, strict=True):
            ev = events[event_id]
            notes = list(quote.notes)
            if not ev.has_chunks:
                notes.append(Note(NoteCode.LEGACY_NO_CHUNKS))
            items.append(
                EvidenceItem(
                    event_id=event_id,
                    create_time=ev.create_time,
                    time=ev.time,
                    summary=ev.summary,
                    shown=shown_summary(
                        ev.summary, ev.content, quote.quote.text if quote.quote else None
                    ),
                    quote=quote.quote,
                    quote_ref=quote.quote_ref,
                    total=quote.total,
                    notes=tuple(notes),
                    concepts=concepts.get(event_id, ()),
                )
            )
        conts = continuations(items)
        token: str | None = None
        chain_count = parent.chain_count if parent else 0
        if items:
            ids = [i.event_id for i in items]
            if parent is None:
                token, state = self.cursors.start_chain(
                    session_id=session.id,
                    query_text=query,
                    query_vector=vector,
                    filters=filters,
                    model=self.embedder.model,
                    dims=self.embedder.dimensions,
                    delivered_ids=ids,
                    concepts=conts.expand_concepts,
                    anchors=conts.nearby_events,
                    asked=asked,
                )
            else:
                token, state = self.cursors.branch(
                    parent, ids, conts.expand_concepts, conts.nearby_events
                )
            chain_count = state.chain_count
        page = EvidencePage(
            operation=operation,
            cursor=token,
            chain_count=chain_count,
            items=tuple(items),
            shared_concepts=shared_concepts(items),
            continuations=conts,
            excluded_count=len(session.excluded),
            search_again=operation == "search" and query is not None and ranked.more,
        )
        if items:
            self.sessions.commit(session.id, [i.event_id for i in items], excerpts)
        return Outcome(page, {i: explain[i] for i in picked if i in explain}, session.id)


def _known_concepts(
    picked: list[str], known: Mapping[str, tuple[tuple[str, str], ...]] | None
) -> dict[str, tuple[ConceptRef, ...]] | None:
    """The picked events' concepts from what the ranking read (``Ranked.concepts``); None
    when it lacks one of them."""
    if known is None or not all(i in known for i in picked):
        return None
    return {i: tuple(ConceptRef(c, name) for c, name in known[i]) for i in picked}
