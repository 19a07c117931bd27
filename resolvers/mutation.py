"""Root mutations."""

from __future__ import annotations

import strawberry

from engine import ingest
from schema.context import Info
from schema.inputs import SaveInput
from schema.payloads import SaveManyPayload, SavePayload


def to_domain(item: SaveInput) -> ingest.SaveInput:
    extraction = ingest.parse_extraction(item.extraction) if item.extraction is not None else None
    return ingest.SaveInput(
        content=item.content,
        id=item.id,
        time=item.time,
        topic_path=item.topic_path,
        related_topics=list(item.related_topics or []),
        extraction=extraction,
        idempotency_key=item.idempotency_key,
        dedupe_by_hash=item.dedupe_by_hash,
    )


@strawberry.type
class MemoryMutation:
    @strawberry.mutation(
        description="Save one memory: extract, embed and write in one transaction."
    )
    async def save(self, info: Info, input: SaveInput) -> SavePayload:
        return SavePayload.from_domain(await info.context.memory.save(to_domain(input)))

    @strawberry.mutation(description="Save many memories; each stands or fails on its own.")
    async def save_many(self, info: Info, inputs: list[SaveInput]) -> SaveManyPayload:
        items = [to_domain(i) for i in inputs]
        return SaveManyPayload.from_domain(await info.context.memory.save_many(items))
