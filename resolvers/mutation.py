"""Root mutations and the subscriptions: revectorize progress and the memoryChanges feed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from dataclasses import asdict
from typing import Annotated

import strawberry

from mnemoql.engine import ingest
from mnemoql.engine.extraction_input import parse_extraction
from mnemoql.schema.context import Info
from mnemoql.schema.inputs import SaveInput
from mnemoql.schema.locale import request_locale
from mnemoql.schema.payloads import (
    ForgetPayload,
    RevectorizeProgress,
    RevectorizeReport,
    SaveManyPayload,
    SavePayload,
)
from mnemoql.schema.snapshot import MemoryChange


def to_domain(item: SaveInput) -> ingest.SaveInput:
    extraction = parse_extraction(item.extraction) if item.extraction is not None else None
    return ingest.SaveInput(
        content=item.content,
        id=item.id,
        time=item.time,
        topic_path=item.topic_path,
        related_topics=list(item.related_topics or []),
        activation_profile=(
            item.activation_profile.to_domain() if item.activation_profile is not None else None
        ),
        extraction=extraction,
        idempotency_key=item.idempotency_key,
        dedupe_by_hash=item.dedupe_by_hash,
    )


@strawberry.type
class MemoryMutation:
    @strawberry.mutation(
        description="Save one memory: extract, embed and write in one transaction."
    )
    async def save(
        self,
        info: Info,
        input: Annotated[SaveInput, strawberry.argument(description="The memory to save.")],
    ) -> SavePayload:
        memory = info.context.memory
        saved = await memory.save(to_domain(input))
        await memory.remember_writes(info.context.session)  # read on any replica (Neo4j)
        return SavePayload.from_domain(saved, request_locale(info.context))

    @strawberry.mutation(description="Save many memories; each stands or fails on its own.")
    async def save_many(
        self,
        info: Info,
        inputs: Annotated[
            list[SaveInput], strawberry.argument(description="The memories, in order.")
        ],
    ) -> SaveManyPayload:
        items = [to_domain(i) for i in inputs]
        saved = await info.context.memory.save_many(items)
        await info.context.memory.remember_writes(info.context.session)
        return SaveManyPayload.from_domain(saved, request_locale(info.context))

    @strawberry.mutation(
        description="Re-embed every summary, name and chunk with the configured model, then swap."
    )
    async def revectorize(self, info: Info) -> RevectorizeReport:
        report = await info.context.memory.revectorize()
        return RevectorizeReport(**asdict(report))

    @strawberry.mutation(description="Delete an event, its chunks and entities left unused.")
    async def forget(
        self,
        info: Info,
        event_id: Annotated[strawberry.ID, strawberry.argument(description="The event.")],
    ) -> ForgetPayload:
        deleted = await info.context.memory.forget(str(event_id))
        return ForgetPayload(deleted_ids=[strawberry.ID(i) for i in deleted])


@strawberry.type
class MemorySubscription:
    @strawberry.subscription(description="Run revectorize and follow its progress.")
    async def revectorize(self, info: Info) -> AsyncGenerator[RevectorizeProgress, None]:
        queue: asyncio.Queue[RevectorizeProgress] = asyncio.Queue()

        def progress(phase: str, done: int, total: int) -> None:
            queue.put_nowait(RevectorizeProgress(phase=phase, done=done, total=total))

        job = asyncio.create_task(info.context.memory.revectorize(progress))
        try:
            while not job.done() or not queue.empty():
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, job}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield getter.result()
                else:
                    getter.cancel()
            report = job.result()
            yield RevectorizeProgress(
                phase="done", done=1, total=1, report=RevectorizeReport(**asdict(report))
            )
        finally:
            if not job.done():
                job.cancel()

    @strawberry.subscription(
        description="Every committed change of this memory space, as it happens: READY first, "
        "then SAVED, MERGED, FORGOTTEN, REVECTORIZED (RESYNC: reload). Needs the read scope."
    )
    async def memory_changes(self, info: Info) -> AsyncGenerator[MemoryChange, None]:
        async for change in info.context.memory.changes.subscribe():
            yield MemoryChange.from_domain(change)
