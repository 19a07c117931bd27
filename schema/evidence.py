"""Evidence pages: what search, expand and nearby return.

Every fact of the compact text (``text``) is also a typed field. A page can be followed inside
the same request through its ``expand`` and ``nearby`` fields, which continue the page's cursor.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, cast

import strawberry
from strawberry.scalars import JSON

from mnemoql.engine.retrieval import evidence as ev
from mnemoql.engine.retrieval.delivery import Explain as ExplainDomain
from mnemoql.engine.retrieval.delivery import Outcome
from mnemoql.engine.retrieval.render import render, render_targeted
from mnemoql.engine.retrieval.targeted import TargetedPage
from mnemoql.schema.context import Info
from mnemoql.schema.graph import Concept, Event, Node, from_node
from mnemoql.schema.locale import LocaleArg, chosen


@strawberry.enum(description="What a search looks for.")
class SearchTarget(Enum):
    EVENT = strawberry.enum_value("Event", description="Events, as evidence with quotes.")
    PERSON = strawberry.enum_value("Person", description="People by name, with neighbours.")
    CONCEPT = strawberry.enum_value("Concept", description="Concepts by name, with neighbours.")


@strawberry.type(
    description="An exact excerpt: `text == content[start:end]` of a text of `total` code points."
)
class Quote:
    text: str = strawberry.field(description="The excerpt, verbatim.")
    start: int = strawberry.field(description="First code point (inclusive).")
    end: int = strawberry.field(description="Last code point (exclusive).")
    total: int = strawberry.field(description="Length of the whole text in code points.")


@strawberry.type(
    description="The excerpt repeats one delivered earlier in this session: see that range."
)
class QuoteRef:
    event_id: strawberry.ID = strawberry.field(description="The event that was quoted before.")
    start: int = strawberry.field(description="First code point of the earlier excerpt.")
    end: int = strawberry.field(description="Last code point (exclusive) of the excerpt.")

    @strawberry.field(description="The event that was quoted before.")
    async def event(self, info: Info) -> Event | None:
        node = await info.context.loaders.node(str(self.event_id))
        return from_node(node) if node is not None else None




@strawberry.type(description="A remark about a page or an item (why something is missing...).")
class Note:
    code: str = strawberry.field(description="Stable code of the note.")
    value: str | None = strawberry.field(description="The value the note is about, if any.")

    @strawberry.field(description="The note as a sentence.")
    def message(self, info: Info, locale: LocaleArg = None) -> str:
        note = ev.Note(ev.NoteCode(self.code), self.value)
        return note.message(chosen(locale, info.context))

    @classmethod
    def from_domain(cls, n: ev.Note) -> Note:
        return cls(code=n.code.value, value=None if n.value is None else str(n.value))


async def _concept(info: Info, concept_id: strawberry.ID) -> Concept | None:
    node = await info.context.loaders.node(str(concept_id))
    return from_node(node) if node is not None else None


@strawberry.type(description="A concept an evidence item mentions.")
class ConceptRef:
    concept_id: strawberry.ID = strawberry.field(description="The concept's id.")
    name: str = strawberry.field(description="Its name.")

    @strawberry.field(description="The concept itself.")
    async def concept(self, info: Info) -> Concept | None:
        return await _concept(info, self.concept_id)


@strawberry.type(description="A concept several items of the page mention: a way to expand.")
class SharedConcept:
    concept_id: strawberry.ID = strawberry.field(description="The concept's id.")
    name: str = strawberry.field(description="Its name.")
    event_ids: list[strawberry.ID] = strawberry.field(description="The items that mention it.")

    @strawberry.field(description="The concept itself.")
    async def concept(self, info: Info) -> Concept | None:
        return await _concept(info, self.concept_id)


@strawberry.type(
    description="Why an item was delivered. Scores are retrieval heuristics, not confidence."
)
class Explain:
    order: str = strawberry.field(description="hybrid, recency or position")
    summary_rank: int | None = strawberry.field(description="Rank on the summary route (1-based).")
    chunk_rank: int | None = strawberry.field(description="Rank on the chunk route (1-based).")
    summary_cosine: float | None = strawberry.field(description="Cosine of the summary.")
    chunk_cosine: float | None = strawberry.field(description="Cosine of the best chunk.")
    lexical_rank: int | None = strawberry.field(
        description="1-based rank in the lexical (BM25) route over chunk texts and summaries; "
        "null when the event was not among its candidates or the route is off."
    )
    lexical_score: float | None = strawberry.field(
        description="BM25 score of the event's best chunk or summary (higher is better; "
        "comparable only within one search)."
    )
    rrf: float = strawberry.field(description="Reciprocal-rank fusion of the routes.")
    coverage: float = strawberry.field(description="Share of the query's terms the item has.")
    score: float = strawberry.field(description="The fused score the item was ranked by.")
    mmr_step: int | None = strawberry.field(description="The MMR step that picked it (1-based).")
    relevance: float | None = strawberry.field(description="MMR relevance when picked.")
    redundancy: float | None = strawberry.field(description="MMR redundancy when picked.")

    @classmethod
    def from_domain(cls, e: ExplainDomain) -> Explain:
        return cls(
            order=e.order,
            summary_rank=e.summary_rank,
            chunk_rank=e.chunk_rank,
            summary_cosine=e.summary_cosine,
            chunk_cosine=e.chunk_cosine,
            lexical_rank=e.lexical_rank,
            lexical_score=e.lexical_score,
            rrf=e.rrf,
            coverage=e.coverage,
            score=e.score,
            mmr_step=e.mmr_step,
            relevance=e.relevance,
            redundancy=e.redundancy,
        )


@strawberry.type(description="One delivered event: a short exact quote and what it mentions.")
class EvidenceItem:
    event_id: strawberry.ID = strawberry.field(description="The event (see event).")
    summary: str = strawberry.field(description="Its one-line summary.")
    create_time: str = strawberry.field(description="When it was saved (ISO-8601).")
    time: str | None = strawberry.field(description="Occurrence time as written in the text.")
    quote: Quote | None = strawberry.field(description="An exact excerpt, unless a quoteRef.")
    quote_ref: QuoteRef | None = strawberry.field(
        description="Set instead of quote when the excerpt was delivered before."
    )
    total: int = strawberry.field(description="Length of the event's original text.")
    notes: list[Note] = strawberry.field(description="Remarks about this item.")
    concepts: list[ConceptRef] = strawberry.field(description="Concepts the event mentions.")
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
            quote_ref=(
                QuoteRef(event_id=strawberry.ID(r.id), start=r.start, end=r.end) if r else None
            ),
            total=item.total,
            notes=[Note.from_domain(n) for n in item.notes],
            concepts=[
                ConceptRef(concept_id=strawberry.ID(c.id), name=c.name) for c in item.concepts
            ],
            explain=Explain.from_domain(explain) if explain else None,
        )


@strawberry.type(description="One relationship of an entity hit, and the node at its end.")
class Neighbour:
    type: str = strawberry.field(description="The relationship type.")
    direction: str = strawberry.field(description="out or in, seen from the hit.")
    properties: JSON = strawberry.field(description="The relationship's properties.")
    node: Node = strawberry.field(description="The node at the other end.")


@strawberry.type(description="A Person/Concept match of a targeted search, with one-hop context.")
class EntityHit:
    node: Node = strawberry.field(description="The matching person or concept.")
    score: float = strawberry.field(description="Name match 1.0, else the name's cosine.")
    exact: bool = strawberry.field(description="Matched by name or alias (score 1.0).")
    neighbours: list[Neighbour] = strawberry.field(description="Its direct relationships.")


ConceptArg = Annotated[
    strawberry.ID, strawberry.argument(description="One of this page's expandConcepts.")
]
ExpandLimit = Annotated[int, strawberry.argument(description="How many events (1..8).")]
NearbyEvent = Annotated[
    strawberry.ID, strawberry.argument(description="One of this page's nearbyEvents.")
]
BeforeCount = Annotated[int, strawberry.argument(description="Records before it (0..10).")]
AfterCount = Annotated[int, strawberry.argument(description="Records after it (0..10).")]


@strawberry.type(description="What search, expand and nearby return: evidence and a cursor.")
class EvidencePage:
    operation: str = strawberry.field(description="search, expand or nearby.")
    target: str = strawberry.field(description="Event, Person or Concept.")
    session: str = strawberry.field(description="The session whose history this page used.")
    cursor: str | None = strawberry.field(
        description="The next calls of this page (15 minutes): search(cursor:) for the next "
        "page of its search, expand/nearby for its entries. Null when it delivered nothing."
    )
    chain_count: int = strawberry.field(description="Follow-ups made on this chain so far.")
    chain_limit: int = strawberry.field(description="Follow-ups a chain may make.")
    items: list[EvidenceItem] = strawberry.field(description="At most 4 new events.")
    shared_concepts: list[SharedConcept] = strawberry.field(
        description="Concepts several items mention."
    )
    expand_concepts: list[strawberry.ID] = strawberry.field(
        description="Concept ids this page's cursor can expand."
    )
    nearby_events: list[strawberry.ID] = strawberry.field(
        description="Positional event ids this page's cursor can read around."
    )
    excluded_count: int = strawberry.field(
        description="Events excluded because this session already received them."
    )
    search_again: bool = strawberry.field(
        description="The next best call is search(cursor:) with this page's cursor (its "
        "ranking held more candidates than it delivered); on the bench the next page found "
        "more than expand or nearby."
    )
    notes: list[Note] = strawberry.field(description="Remarks about this page.")
    entity_hits: list[EntityHit] = strawberry.field(
        description="For target PERSON/CONCEPT: the top 3 matches with their neighbours."
    )
    _page: strawberry.Private[ev.EvidencePage | TargetedPage]

    @strawberry.field(description="The compact rendering for an LLM (SPEC §1.10).")
    def text(self, info: Info, locale: LocaleArg = None) -> str:
        language = chosen(locale, info.context)
        if isinstance(self._page, TargetedPage):
            return render_targeted(self._page, language)
        return render(self._page, language)

    @strawberry.field(description="Follow this page: expand one of its concepts.")
    async def expand(
        self, info: Info, concept_id: ConceptArg, limit: ExpandLimit = 3
    ) -> EvidencePage:
        out = await info.context.memory.expand(
            _need_cursor(self.cursor), str(concept_id), limit, self.session, repeatable=True
        )
        return EvidencePage.from_outcome(out)

    @strawberry.field(description="Follow this page: read records around one of its events.")
    async def nearby(
        self,
        info: Info,
        event_id: NearbyEvent,
        before: BeforeCount = 2,
        after: AfterCount = 2,
    ) -> EvidencePage:
        out = await info.context.memory.nearby(
            _need_cursor(self.cursor), str(event_id), before, after, self.session, repeatable=True
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
                    concept_id=strawberry.ID(s.id),
                    name=s.name,
                    event_ids=[strawberry.ID(i) for i in s.event_ids],
                )
                for s in p.shared_concepts
            ],
            expand_concepts=[strawberry.ID(c) for c in p.continuations.expand_concepts],
            nearby_events=[strawberry.ID(e) for e in p.continuations.nearby_events],
            excluded_count=p.excluded_count,
            search_again=p.search_again,
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
            search_again=False,
            notes=[],
            entity_hits=hits,
            _page=t,
        )


def _need_cursor(cursor: str | None) -> str:
    if cursor is None:
        from mnemoql.engine.errors import CursorInvalid

        raise CursorInvalid(
            "this page delivered nothing, so it has no cursor to follow",
            zh="游标无效或已过期，请重新 search",
        )
    return cursor
