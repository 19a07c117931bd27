"""Mutation results and the memory index."""

from __future__ import annotations

import strawberry

from engine import memory as mem
from engine.ingest import SaveOutcome
from engine.models import Counts as CountsDomain


@strawberry.type
class RefId:
    ref: str
    id: strawberry.ID


@strawberry.type
class Merge:
    id: strawberry.ID
    aliases_added: list[str]


@strawberry.type
class SavePayload:
    event_ids: list[strawberry.ID]
    created_persons: list[strawberry.ID]
    created_concepts: list[strawberry.ID]
    created_locations: list[strawberry.ID]
    merged: list[Merge]
    refs: list[RefId] = strawberry.field(description="Extraction ref -> the id it became.")
    replayed: bool = strawberry.field(
        description="True when nothing new was written (idempotency key or identical content)."
    )
    message: str = strawberry.field(description="One line, as the original tool reported it.")
    topic_path: str | None = strawberry.field(
        default=None, description="The topic the new events were bound to; null: date only."
    )
    topic_source: str | None = strawberry.field(
        default=None, description="Where that topic came from: client, model or offline."
    )

    @classmethod
    def from_domain(cls, o: SaveOutcome) -> SavePayload:
        r = o.result

        def ids(label: str) -> list[strawberry.ID]:
            return [strawberry.ID(i) for i in r.created.get(label, [])]

        return cls(
            event_ids=[strawberry.ID(i) for i in r.event_ids],
            created_persons=ids("Person"),
            created_concepts=ids("Concept"),
            created_locations=ids("Location"),
            merged=[Merge(id=strawberry.ID(i), aliases_added=list(a)) for i, a in r.merged],
            refs=[RefId(ref=k, id=strawberry.ID(v)) for k, v in r.refs.items()],
            replayed=r.replayed,
            message=o.message,
            topic_path=o.topic.draft.path if o.topic is not None else None,
            topic_source=o.topic.source if o.topic is not None else None,
        )


@strawberry.type
class SaveError:
    index: int
    code: str
    message: str


@strawberry.type
class SaveManyPayload:
    results: list[SavePayload | None] = strawberry.field(
        description="One entry per input, null where that input failed (see errors)."
    )
    errors: list[SaveError]
    saved: int

    @classmethod
    def from_domain(cls, o: mem.SaveManyOutcome) -> SaveManyPayload:
        return cls(
            results=[SavePayload.from_domain(x) if x else None for x in o.outcomes],
            errors=[SaveError(index=i, code=c, message=msg) for i, c, msg in o.errors],
            saved=sum(1 for x in o.outcomes if x is not None),
        )


@strawberry.type
class Counts:
    events: int
    persons: int
    concepts: int
    locations: int
    chunks: int
    relationships: int

    @classmethod
    def from_domain(cls, c: CountsDomain) -> Counts:
        return cls(
            events=c.events,
            persons=c.persons,
            concepts=c.concepts,
            locations=c.locations,
            chunks=c.chunks,
            relationships=c.relations,
        )


@strawberry.type
class MemoryIndex:
    """What this memory holds and which models it was built with."""

    model: str = strawberry.field(description="The embedding model configured now.")
    dimensions: int
    stored_model: str | None = strawberry.field(description="The model recorded in MemoryMeta.")
    stored_dimensions: int | None
    mismatch: bool = strawberry.field(
        description="True when saving and semantic search are paused until revectorize."
    )
    counts: Counts
    store: str
    embedder: str
    extractor: str
    judge: str | None

    @classmethod
    def from_domain(cls, i: mem.MemoryIndex) -> MemoryIndex:
        return cls(
            model=i.model,
            dimensions=i.dimensions,
            stored_model=i.stored.model if i.stored else None,
            stored_dimensions=i.stored.dimensions if i.stored else None,
            mismatch=i.mismatch,
            counts=Counts.from_domain(i.counts),
            store=i.store,
            embedder=i.embedder,
            extractor=i.extractor,
            judge=i.judge,
        )


@strawberry.type
class RevectorizeReport:
    model: str
    dimensions: int
    events: int
    persons: int
    concepts: int
    locations: int
    chunks: int


@strawberry.type
class RevectorizeProgress:
    """One step of a running revectorize; the last one carries the report."""

    phase: str = strawberry.field(description="embedding, writing or done")
    done: int
    total: int
    report: RevectorizeReport | None = None


@strawberry.type
class ForgetPayload:
    deleted_ids: list[strawberry.ID] = strawberry.field(
        description="The event and every entity that no other event used."
    )
