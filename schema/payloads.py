"""Mutation results and the memory index."""

from __future__ import annotations

import strawberry

from mnemoql.engine import memory as mem
from mnemoql.engine.ingest import SaveOutcome
from mnemoql.engine.memory_writes import SaveManyOutcome
from mnemoql.engine.messages import Locale as LocaleCode
from mnemoql.engine.models import Counts as CountsDomain
from mnemoql.schema.context import Info
from mnemoql.schema.graph import Node, node_by_id


@strawberry.type(description="An extraction ref (e.g. p1) and the node id it became.")
class RefId:
    ref: str = strawberry.field(description="The ref used inside the extraction JSON.")
    node_id: strawberry.ID = strawberry.field(description="The id of the node it became.")

    @strawberry.field(description="The node it became.")
    async def node(self, info: Info) -> Node | None:
        return await node_by_id(info, str(self.node_id))


@strawberry.type(description="An existing entity the save merged an extracted one into.")
class Merge:
    entity_id: strawberry.ID = strawberry.field(description="The entity merged into.")
    aliases_added: list[str] = strawberry.field(description="Names it gained as aliases.")

    @strawberry.field(description="The entity merged into, as it is now.")
    async def entity(self, info: Info) -> Node | None:
        return await node_by_id(info, str(self.entity_id))


@strawberry.type(description="What a save wrote (or replayed).")
class SavePayload:
    event_ids: list[strawberry.ID] = strawberry.field(description="The events saved.")
    created_persons: list[strawberry.ID] = strawberry.field(description="New Person ids.")
    created_concepts: list[strawberry.ID] = strawberry.field(description="New Concept ids.")
    created_locations: list[strawberry.ID] = strawberry.field(description="New Location ids.")
    merged: list[Merge] = strawberry.field(description="Existing entities merged into.")
    refs: list[RefId] = strawberry.field(description="Extraction ref -> the id it became.")
    replayed: bool = strawberry.field(
        description="True when nothing new was written (idempotency key or identical content)."
    )
    message: str = strawberry.field(
        description="One line: what was saved, in the request's language (Accept-Language, "
        "else MNEMOQL_LOCALE; the original tool's wording in Chinese)."
    )
    topic_path: str | None = strawberry.field(
        default=None, description="The topic the new events were bound to; null: date only."
    )
    topic_source: str | None = strawberry.field(
        default=None, description="Where that topic came from: client, model or offline."
    )

    @classmethod
    def from_domain(cls, o: SaveOutcome, locale: LocaleCode) -> SavePayload:
        r = o.result

        def ids(label: str) -> list[strawberry.ID]:
            return [strawberry.ID(i) for i in r.created.get(label, [])]

        return cls(
            event_ids=[strawberry.ID(i) for i in r.event_ids],
            created_persons=ids("Person"),
            created_concepts=ids("Concept"),
            created_locations=ids("Location"),
            merged=[
                Merge(entity_id=strawberry.ID(i), aliases_added=list(a)) for i, a in r.merged
            ],
            refs=[RefId(ref=k, node_id=strawberry.ID(v)) for k, v in r.refs.items()],
            replayed=r.replayed,
            message=o.message(locale),
            topic_path=o.topic.draft.path if o.topic is not None else None,
            topic_source=o.topic.source if o.topic is not None else None,
        )


@strawberry.type(description="Why one input of a saveMany was not saved.")
class SaveError:
    index: int = strawberry.field(description="Position of the input in `inputs` (0-based).")
    code: str = strawberry.field(description="The stable error code, as in extensions.code.")
    message: str = strawberry.field(
        description="What was wrong and how to fix it, in the request's language."
    )


@strawberry.type(description="What a saveMany wrote: each input stands or fails on its own.")
class SaveManyPayload:
    results: list[SavePayload | None] = strawberry.field(
        description="One entry per input, null where that input failed (see errors)."
    )
    errors: list[SaveError] = strawberry.field(description="The inputs that failed, by index.")
    saved: int = strawberry.field(description="How many inputs were saved (or replayed).")

    @classmethod
    def from_domain(cls, o: SaveManyOutcome, locale: LocaleCode) -> SaveManyPayload:
        return cls(
            results=[SavePayload.from_domain(x, locale) if x else None for x in o.outcomes],
            errors=[
                SaveError(index=i, code=c, message=zh if locale == "zh" else en)
                for i, c, en, zh in o.errors
            ],
            saved=sum(1 for x in o.outcomes if x is not None),
        )


@strawberry.type(description="How many nodes, chunks and relationships this memory holds.")
class Counts:
    events: int = strawberry.field(description="Event nodes.")
    persons: int = strawberry.field(description="Person nodes.")
    concepts: int = strawberry.field(description="Concept nodes.")
    locations: int = strawberry.field(description="Location nodes.")
    chunks: int = strawberry.field(description="Source chunks of event texts.")
    relationships: int = strawberry.field(description="Relationships between the four labels.")

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


@strawberry.type(description="What this memory holds and which models it was built with.")
class MemoryIndex:
    model: str = strawberry.field(description="The embedding model configured now.")
    dimensions: int = strawberry.field(description="Its vector dimensions.")
    stored_model: str | None = strawberry.field(description="The model recorded in MemoryMeta.")
    stored_dimensions: int | None = strawberry.field(
        description="The dimensions recorded in MemoryMeta."
    )
    mismatch: bool = strawberry.field(
        description="True when saving and semantic search are paused until revectorize."
    )
    counts: Counts = strawberry.field(description="What the memory holds.")
    store: str = strawberry.field(description="The store behind it (EmbeddedStore, Neo4jStore).")
    embedder: str = strawberry.field(description="The embedding provider in use.")
    extractor: str = strawberry.field(description="The extraction provider in use.")
    judge: str | None = strawberry.field(description="The merge judge in use, if any.")

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


@strawberry.type(description="What a revectorize re-embedded.")
class RevectorizeReport:
    model: str = strawberry.field(description="The model everything is embedded with now.")
    dimensions: int = strawberry.field(description="Its vector dimensions.")
    events: int = strawberry.field(description="Event summaries re-embedded.")
    persons: int = strawberry.field(description="Person names re-embedded.")
    concepts: int = strawberry.field(description="Concept names re-embedded.")
    locations: int = strawberry.field(description="Location names re-embedded.")
    chunks: int = strawberry.field(description="Source chunks re-embedded.")


@strawberry.type(description="One step of a running revectorize; the last one has the report.")
class RevectorizeProgress:
    phase: str = strawberry.field(description="embedding, writing or done")
    done: int = strawberry.field(description="Items finished in this phase.")
    total: int = strawberry.field(description="Items this phase has in all.")
    report: RevectorizeReport | None = strawberry.field(
        default=None, description="The result, on the last step (phase done)."
    )


@strawberry.type(description="What a forget deleted.")
class ForgetPayload:
    deleted_ids: list[strawberry.ID] = strawberry.field(
        description="The event and every entity that no other event used."
    )
