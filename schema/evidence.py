"""Evidence pages: what search, expand and nearby return.

Every fact of the compact text (``text``) is also a typed field. A page can be followed inside
the same request through its ``expand`` and ``nearby`` fields, which continue the page's cursor.
"""

from __future__ import annotations

from enum import Enum
from typing import cast

import strawberry
from strawberry.scalars import JSON

from engine.retrieval import evidence as ev
from engine.retrieval.pipeline import Explain as ExplainDomain
from engine.retrieval.pipeline import Outcome, TargetedPage
from engine.retrieval.render import render, render_targeted
from schema.context import Info
from schema.graph import Event, Node, from_node


@strawberry.enum
class Locale(Enum):
    ZH = "zh"
    EN = "en"


@strawberry.enum
class SearchTarget(Enum):
    EVENT = "Event"
    PERSON = "Person"
    CONCEPT = "Concept"


@strawberry.type
class Quote:
    """An exact excerpt: ``text == content[start:end]`` of a text of ``total`` code points."""

    text: str
    start: int
    end: int
    total: int


@strawberry.type
class QuoteRef:
    """The excerpt repeats one delivered earlier in this session: see that event's range."""

    id: strawberry.ID
    start: int
    end: int


@strawberry.type
class Note:
    code: str
    value: str | None

    @strawberry.field
    def message(self, locale: Locale = Locale.EN) -> str:
        note = ev.Note(ev.NoteCode(self.code), self.value)
        return note.message(locale.value)

    @classmethod
    def from_domain(cls, n: ev.Note) -> Note:
        return cls(code=n.code.value, value=None if n.value is None else str(n.value))


@strawberry.type
class ConceptRef:
    id: strawberry.ID
    name: str


@strawberry.type
class SharedConcept:
    id: strawberry.ID
    name: str
    event_ids: list[strawberry.ID]


@strawberry.type
class Explain:
    """Why an item was delivered. Scores are retrieval heuristics, not confidence."""

    order: str = strawberry.field(description="hybrid, recency or position")
    summary_rank: int | None
    chunk_rank: int | None
    summary_cosine: float | None
    chunk_cosine: float | None
    rrf: float
    coverage: float
    score: float
    mmr_step: int | None
    relevance: float | None
    redundancy: float | None

    @classmethod
    def from_domain(cls, e: ExplainDomain) -> Explain:
        return cls(
            order=e.order,
            summary_rank=e.summary_rank,
            chunk_rank=e.chunk_rank,
            summary_cosine=e.summary_cosine,
            chunk_cosine=e.chunk_cosine,
            rrf=e.rrf,
            coverage=e.coverage,
            score=e.score,
            mmr_step=e.mmr_step,
            relevance=e.relevance,
            redundancy=e.redundancy,
        )


@strawberry.type
class EvidenceItem:
    event_id: strawberry.ID
    summary: str
    create_time: str
    time: str | None
    quote: Quote | None
    quote_ref: QuoteRef | None
    total: int = strawberry.field(description="Length of the event's original text.")
    notes: list[Note]
    concepts: list[ConceptRef]
    explain: Explain | None = strawberry.field(
        description="Route ranks, fused score and MMR step of this item."
    )

    @strawberry.field(description="The event itself, for any further field.")
    async def event(self, info: Info) -> Event | None:
        node = await info.context.loaders.node(str(self.event_id))
        return from_node(node) if node is not None else None

    @classmethod
    def from_domain(cls, item: ev.EvidenceItem, explain: ExplainDomain | None) -> EvidenceItem:
        q, r = item.quote, item.quote_ref
        return cls(
            event_id=strawberry.ID(item.event_id),
            summary=item.summary,
            create_time=item.create_time,
            time=item.time,
            quote=Quote(text=q.text, start=q.start, end=q.end, total=q.total) if q else None,
            quote_ref=QuoteRef(id=strawberry.ID(r.id), start=r.start, end=r.end) if r else None,
            total=item.total,
            notes=[Note.from_domain(n) for n in item.notes],
            concepts=[ConceptRef(id=strawberry.ID(c.id), name=c.name) for c in item.concepts],
            explain=Explain.from_domain(explain) if explain else None,
        )


@strawberry.type
class Neighbour:
    type: str
    direction: str
    properties: JSON
    node: Node


@strawberry.type
class EntityHit:
    """A Person/Concept match of a targeted search, with one-hop context."""

    node: Node
    score: float
    exact: bool = strawberry.field(description="Matched by name or alias (score 1.0).")
    neighbours: list[Neighbour]


@strawberry.type
class EvidencePage:
    operation: str
    target: str
    session: str
    cursor: str | None = strawberry.field(description="Continue with expand/nearby (15 minutes).")
    chain_count: int
    chain_limit: int
    items: list[EvidenceItem]
    shared_concepts: list[SharedConcept]
    expand_concepts: list[strawberry.ID] = strawberry.field(
        description="Concept ids this page's cursor can expand."
    )
    nearby_events: list[strawberry.ID] = strawberry.field(
        description="Positional event ids this page's cursor can read around."
    )
    excluded_count: int = strawberry.field(
        description="Events excluded because this session already received them."
    )
    notes: list[Note]
    entity_hits: list[EntityHit] = strawberry.field(
        description="For target PERSON/CONCEPT: the top 3 matches with their neighbours."
    )
    _page: strawberry.Private[ev.EvidencePage | TargetedPage]

    @strawberry.field(description="The compact rendering for an LLM (SPEC §1.10).")
    def text(self, locale: Locale = Locale.ZH) -> str:
        if isinstance(self._page, TargetedPage):
            return render_targeted(self._page, locale.value)
        return render(self._page, locale.value)

    @strawberry.field(description="Follow this page: expand one of its concepts.")
    async def expand(self, info: Info, concept_id: strawberry.ID, limit: int = 3) -> EvidencePage:
        out = await info.context.memory.expand(
            _need_cursor(self.cursor), str(concept_id), limit, self.session
        )
        return EvidencePage.from_outcome(out)

    @strawberry.field(description="Follow this page: read records around one of its events.")
    async def nearby(
        self, info: Info, event_id: strawberry.ID, before: int = 2, after: int = 2
    ) -> EvidencePage:
        out = await info.context.memory.nearby(
            _need_cursor(self.cursor), str(event_id), before, after, self.session
        )
        return EvidencePage.from_outcome(out)

    @classmethod
    def from_outcome(cls, out: Outcome) -> EvidencePage:
        p = out.page
        return cls(
            operation=p.operation,
            target=p.target,
            session=out.session_id,
            cursor=p.cursor,
            chain_count=p.chain_count,
            chain_limit=p.chain_limit,
            items=[EvidenceItem.from_domain(i, out.explain.get(i.event_id)) for i in p.items],
            shared_concepts=[
                SharedConcept(
                    id=strawberry.ID(s.id),
                    name=s.name,
                    event_ids=[strawberry.ID(i) for i in s.event_ids],
                )
                for s in p.shared_concepts
            ],
            expand_concepts=[strawberry.ID(c) for c in p.continuations.expand_concepts],
            nearby_events=[strawberry.ID(e) for e in p.continuations.nearby_events],
            excluded_count=p.excluded_count,
            notes=[Note.from_domain(n) for n in p.notes],
            entity_hits=[],
            _page=p,
        )

    @classmethod
    def from_targeted(cls, t: TargetedPage, session: str) -> EvidencePage:
        hits = [
            EntityHit(
                node=from_node(h.node),
                score=h.score,
                exact=h.exact,
                neighbours=[
                    Neighbour(
                        type=r.rel.type,
                        direction=r.direction,
                        properties=cast(JSON, r.rel.properties),
                        node=from_node(n),
                    )
                    for r, n in h.neighbours
                ],
            )
            for h in t.hits
        ]
        return cls(
            operation="search",
            target=t.target,
            session=session,
            cursor=None,
            chain_count=0,
            chain_limit=ev.CHAIN_LIMIT,
            items=[],
            shared_concepts=[],
            expand_concepts=[],
            nearby_events=[],
            excluded_count=0,
            notes=[],
            entity_hits=hits,
            _page=t,
        )


def _need_cursor(cursor: str | None) -> str:
    if cursor is None:
        from engine.errors import CursorInvalid

        raise CursorInvalid(
            "this page delivered nothing, so it has no cursor to follow",
            zh="游标无效或已过期，请重新 search",
        )
    return cursor
