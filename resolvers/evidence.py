"""Evidence queries: search, expand, nearby (SPEC §1.4-§1.9)."""

from __future__ import annotations

import strawberry

from engine.errors import ResetSeenMisuse
from engine.retrieval.pipeline import SearchRequest
from schema.context import Info
from schema.evidence import EvidencePage, SearchTarget

SessionArg = strawberry.argument(
    description="Evidence history key; defaults to the X-Memory-Session header, else 'default'."
)


def _session(info: Info, session: str | None) -> str | None:
    return session or info.context.session


def _no_reset(reset_seen: bool) -> None:
    if reset_seen:
        raise ResetSeenMisuse(
            "resetSeen is only valid on search", zh="reset_seen 仅用于 search", argument="resetSeen"
        )


@strawberry.type
class EvidenceQuery:
    @strawberry.field(
        description="Find evidence: at most 4 new events, each with an exact quote, and a cursor."
    )
    async def search(
        self,
        info: Info,
        query: str | None = None,
        entities: list[str] | None = None,
        time_hint: str | None = None,
        target: SearchTarget = SearchTarget.EVENT,
        session: str | None = None,
        reset_seen: bool = False,
    ) -> EvidencePage:
        memory = info.context.memory
        sid = _session(info, session)
        if target is not SearchTarget.EVENT:
            page = await memory.search_entities(target.value, query)
            return EvidencePage.from_targeted(page, sid or "default")
        request = SearchRequest(query, entities, time_hint, reset_seen)
        return EvidencePage.from_outcome(await memory.search(request, sid))

    @strawberry.field(description="Continue a chain through a concept the cursor offered.")
    async def expand(
        self,
        info: Info,
        cursor: str,
        concept_id: strawberry.ID,
        limit: int = 3,
        session: str | None = None,
        reset_seen: bool = False,
    ) -> EvidencePage:
        _no_reset(reset_seen)
        out = await info.context.memory.expand(
            cursor, str(concept_id), limit, _session(info, session)
        )
        return EvidencePage.from_outcome(out)

    @strawberry.field(description="Read records around a positional event (x_chN_eM ids).")
    async def nearby(
        self,
        info: Info,
        cursor: str,
        event_id: strawberry.ID,
        before: int = 2,
        after: int = 2,
        session: str | None = None,
        reset_seen: bool = False,
    ) -> EvidencePage:
        _no_reset(reset_seen)
        out = await info.context.memory.nearby(
            cursor, str(event_id), before, after, _session(info, session)
        )
        return EvidencePage.from_outcome(out)
