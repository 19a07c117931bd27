"""What the tools return as structured content: pydantic models built from the engine's records.

Each model's JSON schema is its tool's ``outputSchema``, so a client can check every result
against it. The fields are those of the GraphQL types, in snake_case, without the parts a model
cannot use (vectors, explain scores).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from mnemoql.engine.activation import Activation
from mnemoql.engine.ingest import SaveOutcome
from mnemoql.engine.memory import MemoryIndex, TextRange
from mnemoql.engine.messages import Locale
from mnemoql.engine.models import Entity
from mnemoql.engine.recall import RecalledMemory, Recollection, TopicTree
from mnemoql.engine.retrieval import evidence as ev
from mnemoql.engine.retrieval.delivery import Outcome
from mnemoql.engine.retrieval.targeted import TargetedPage
from mnemoql.engine.topics import LookupMiss, Projection
from mnemoql.engine.topics.block import render_block


class Quote(BaseModel):
    """An exact excerpt: ``text == original[start:end]`` of a text of ``total`` code points."""

    text: str
    start: int
    end: int
    total: int


def _quote(q: ev.Quote | None) -> Quote | None:
    return Quote(text=q.text, start=q.start, end=q.end, total=q.total) if q else None


class QuoteRef(BaseModel):
    """The excerpt repeats one this session was given before: that event's range."""

    id: str
    start: int
    end: int


class Note(BaseModel):
    code: str
    value: str | None
    message: str


class Concept(BaseModel):
    id: str
    name: str


class Item(BaseModel):
    event_id: str
    summary: str
    create_time: str
    time: str | None
    quote: Quote | None
    quote_ref: QuoteRef | None
    total: int
    notes: list[Note]
    concepts: list[Concept]


class SharedConcept(BaseModel):
    id: str
    name: str
    event_ids: list[str]


class Neighbour(BaseModel):
    type: str
    direction: Literal["out", "in"]
    id: str
    label: str
    text: str


class EntityHit(BaseModel):
    id: str
    label: str
    name: str
    aliases: list[str]
    score: float
    exact: bool
    neighbours: list[Neighbour]


class Evidence(BaseModel):
    """A search, expand or nearby result."""

    session: str
    operation: str
    target: str
    cursor: str | None
    chain_count: int
    chain_limit: int
    excluded_count: int
    items: list[Item]
    shared_concepts: list[SharedConcept]
    expand_concepts: list[str]
    nearby_events: list[str]
    notes: list[Note]
    entity_hits: list[EntityHit]

    @classmethod
    def from_outcome(cls, out: Outcome, locale: Locale) -> Evidence:
        p = out.page
        return cls(
            session=out.session_id,
            operation=p.operation,
            target=p.target,
            cursor=p.cursor,
            chain_count=p.chain_count,
            chain_limit=p.chain_limit,
            excluded_count=p.excluded_count,
            items=[_item(i, locale) for i in p.items],
            shared_concepts=[
                SharedConcept(id=s.id, name=s.name, event_ids=list(s.event_ids))
                for s in p.shared_concepts
            ],
            expand_concepts=list(p.continuations.expand_concepts),
            nearby_events=list(p.continuations.nearby_events),
            notes=[_note(n, locale) for n in p.notes],
            entity_hits=[],
        )

    @classmethod
    def from_targeted(cls, t: TargetedPage, session: str) -> Evidence:
        return cls(
            session=session,
            operation="search",
            target=t.target,
            cursor=None,
            chain_count=0,
            chain_limit=ev.CHAIN_LIMIT,
            excluded_count=0,
            items=[],
            shared_concepts=[],
            expand_concepts=[],
            nearby_events=[],
            notes=[],
            entity_hits=[
                EntityHit(
                    id=h.node.id,
                    label=h.node.label,
                    name=h.node.name,
                    aliases=list(h.node.aliases),
                    score=h.score,
                    exact=h.exact,
                    neighbours=[
                        Neighbour(
                            type=r.rel.type,
                            direction=r.direction,
                            id=o.id,
                            label=o.label if isinstance(o, Entity) else "Event",
                            text=o.name if isinstance(o, Entity) else o.summary,
                        )
                        for r, o in h.neighbours
                    ],
                )
                for h in t.hits
            ],
        )


def _note(n: ev.Note, locale: Locale) -> Note:
    value = None if n.value is None else str(n.value)
    return Note(code=n.code.value, value=value, message=n.message(locale))


def _item(i: ev.EvidenceItem, locale: Locale) -> Item:
    q, r = i.quote, i.quote_ref
    return Item(
        event_id=i.event_id,
        summary=i.summary if i.shown is None else i.shown,
        create_time=i.create_time,
        time=i.time,
        quote=_quote(q),
        quote_ref=QuoteRef(id=r.id, start=r.start, end=r.end) if r else None,
        total=i.total,
        notes=[_note(n, locale) for n in i.notes],
        concepts=[Concept(id=c.id, name=c.name) for c in i.concepts],
    )


class Merge(BaseModel):
    id: str
    aliases_added: list[str]


class Saved(BaseModel):
    """What a save wrote (or, ``replayed``, found already written)."""

    event_ids: list[str]
    created_persons: list[str]
    created_concepts: list[str]
    created_locations: list[str]
    merged: list[Merge]
    refs: dict[str, str]
    replayed: bool
    message: str
    topic_path: str | None
    topic_source: str | None

    @classmethod
    def from_domain(cls, o: SaveOutcome, locale: Locale) -> Saved:
        r = o.result
        return cls(
            event_ids=list(r.event_ids),
            created_persons=list(r.created.get("Person", [])),
            created_concepts=list(r.created.get("Concept", [])),
            created_locations=list(r.created.get("Location", [])),
            merged=[Merge(id=i, aliases_added=list(a)) for i, a in r.merged],
            refs=dict(r.refs),
            replayed=r.replayed,
            message=o.message(locale),
            topic_path=o.topic.draft.path if o.topic is not None else None,
            topic_source=o.topic.source if o.topic is not None else None,
        )


class Read(BaseModel):
    """``original[start:end]`` of one event; ``next`` is where to continue, if anywhere."""

    event_id: str
    text: str
    start: int
    end: int
    total: int
    next: int | None

    @classmethod
    def from_domain(cls, r: TextRange) -> Read:
        return cls(
            event_id=r.event_id, text=r.text, start=r.start, end=r.end, total=r.total, next=r.next
        )

    def to_result(self) -> ev.ReadResult:
        return ev.ReadResult(self.event_id, self.text, self.start, self.end, self.total, self.next)


class Forgotten(BaseModel):
    deleted_ids: list[str]


class Topic(BaseModel):
    path: str
    name: str
    slices: int
    parent: str | None
    children: list[str]


class Topics(BaseModel):
    """The topic tree: Partner's text form and every node, depth first."""

    text: str
    topics: list[Topic]

    @classmethod
    def from_domain(cls, t: TopicTree) -> Topics:
        return cls(
            text=t.text,
            topics=[
                Topic(
                    path=n.path,
                    name=n.segment,
                    slices=len(n.bindings),
                    parent=n.parent.path if n.parent is not None else None,
                    children=[c.path for c in n.children.values()],
                )
                for n in t.nodes
            ],
        )


class Missing(BaseModel):
    """A topic path or date the index does not hold."""

    target: str
    key: str
    message: str

    @classmethod
    def from_domain(cls, m: LookupMiss) -> Missing:
        return cls(target=m.target, key=m.key, message=m.message)


class Recalled(BaseModel):
    event_id: str
    summary: str
    create_time: str
    source: str
    score: float | None
    topic_path: str | None


def _recalled(m: RecalledMemory) -> Recalled:
    e = m.event
    return Recalled(
        event_id=e.id,
        summary=e.summary,
        create_time=e.create_time,
        source=m.source,
        score=m.score,
        topic_path=m.topic_path,
    )


class Recall(BaseModel):
    memories: list[Recalled]
    missing: Missing | None

    @classmethod
    def from_domain(cls, r: Recollection) -> Recall:
        miss = Missing.from_domain(r.missing) if r.missing is not None else None
        return cls(memories=[_recalled(m) for m in r.memories], missing=miss)


class SourceRange(BaseModel):
    index: int
    start: int
    end: int


class ActivatedMemory(Recalled):
    quote: Quote | None
    ranges: list[SourceRange]


class Cue(BaseModel):
    type: str
    text: str


class Activated(BaseModel):
    """The cues a conversation gave and the memories they called up, best first; with a
    ``projection``, also Partner's ``activated_memory_slices`` block of them as XML."""

    cues: list[Cue]
    memories: list[ActivatedMemory]
    missing: list[Missing]
    projection: Literal["full", "compact", "abstract"] | None = None
    block: str | None = None

    @classmethod
    def from_domain(cls, a: Activation, projection: Projection | None = None) -> Activated:
        memories = [
            ActivatedMemory(
                **_recalled(m.memory).model_dump(),
                quote=_quote(m.quote),
                ranges=[SourceRange(index=i, start=s, end=e) for i, s, e in m.ranges],
            )
            for m in a.memories
        ]
        return cls(
            cues=[Cue(type=c.type, text=c.text) for c in a.cues],
            memories=memories,
            missing=[Missing.from_domain(m) for m in a.missing],
            projection=projection,
            block=render_block(a.slices, projection) if projection is not None else None,
        )


class Index(BaseModel):
    """What this memory holds and which models built it (the GraphQL ``memoryIndex``)."""

    model: str
    dimensions: int
    stored_model: str | None
    stored_dimensions: int | None
    mismatch: bool
    counts: dict[str, int]
    store: str
    embedder: str
    extractor: str
    judge: str | None

    @classmethod
    def from_domain(cls, i: MemoryIndex) -> Index:
        c = i.counts
        return cls(
            model=i.model,
            dimensions=i.dimensions,
            stored_model=i.stored.model if i.stored else None,
            stored_dimensions=i.stored.dimensions if i.stored else None,
            mismatch=i.mismatch,
            counts={
                "events": c.events,
                "persons": c.persons,
                "concepts": c.concepts,
                "locations": c.locations,
                "chunks": c.chunks,
                "relationships": c.relations,
            },
            store=i.store,
            embedder=i.embedder,
            extractor=i.extractor,
            judge=i.judge,
        )
