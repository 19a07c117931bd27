"""Evidence queries: search, expand, nearby (SPEC §1.4-§1.9)."""

from __future__ import annotations

from typing import Annotated

import strawberry

from mnemoql.engine.errors import ResetSeenMisuse
from mnemoql.engine.retrieval.pipeline import SearchRequest
from mnemoql.schema.context import Info
from mnemoql.schema.evidence import EvidencePage, SearchTarget

Session = Annotated[
    str | None,
    strawberry.argument(
        description="Evidence history key; defaults to the X-Memory-Session header, else 'default'."
    ),
]
ResetSeen = Annotated[
    bool,
    strawberry.argument(description="Forget what this session was given (search only)."),
]
Cursor = Annotated[str, strawberry.argument(description="The cursor of an earlier page.")]
NextOf = Annotated[
    str | None,
    strawberry.argument(
        description="The cursor of an earlier page: the next page of that page's search (new "
        "events, the same page each time it is asked). query, entities and timeHint may then "
        "be left out."
    ),
]


async def _session(info: Info, session: str | None, cursor: str | None = None) -> str | None:
    """The session of a call: the argument, else the request's header, else for a follow-up
    the session its cursor belongs to (a client whose connection changed still continues
    it), else the caller's default session."""
    if session or info.context.named_session:
        return session or info.context.named_session
    owner = await info.context.memory.cursor_session(cursor) if cursor else None
    return owner or info.context.session


def _no_reset(reset_seen: bool) -> None:
    if reset_seen:
        raise ResetSeenMisuse(
            "resetSeen is only valid on search", zh="reset_seen 仅用于 search", argument="resetSeen"
        )


@strawberry.type
class EvidenceQuery:
    @strawberry.field(
        description="Find evidence: at most 4 new events, each with an exact quote, and a cursor. "
        "Safe to repeat: the same arguments in the same session give the same page; "
        "search(cursor: <the page's cursor>) gives the next one."
    )
    async def search(
        self,
        info: Info,
        query: Annotated[
            str | None, strawberry.argument(description="What to look for, in any language.")
        ] = None,
        entities: Annotated[
            list[str] | None,
            strawberry.argument(description="Names the events must involve (ANDed)."),
        ] = None,
        time_hint: Annotated[
            str | None,
            strawberry.argument(description="When: a date, a range or words like 'last week'."),
        ] = None,
        target: Annotated[
            SearchTarget, strawberry.argument(description="Events, or people or concepts.")
        ] = SearchTarget.EVENT,
        session: Session = None,
        reset_seen: ResetSeen = False,
        cursor: NextOf = None,
    ) -> EvidencePage:
        memory = info.context.memory
        sid = await _session(info, session, cursor)
        if target is not SearchTarget.EVENT:
            page = await memory.search_entities(target.value, query)
            return EvidencePage.from_targeted(page, sid or "default")
        request = SearchRequest(query, entities, time_hint, reset_seen, cursor)
        return EvidencePage.from_outcome(await memory.search(request, sid, repeatable=True))

    @strawberry.field(description="Continue a chain through a concept the cursor offered.")
    async def expand(
        self,
        info: Info,
        cursor: Cursor,
        concept_id: Annotated[
            strawberry.ID, strawberry.argument(description="One of the page's expandConcepts.")
        ],
        limit: Annotated[int, strawberry.argument(description="How many events (1..8).")] = 3,
        session: Session = None,
        reset_seen: ResetSeen = False,
    ) -> EvidencePage:
        _no_reset(reset_seen)
        out = await info.context.memory.expand(
            cursor, str(concept_id), limit, await _session(info, session, cursor), repeatable=True
        )
        return EvidencePage.from_outcome(out)

    @strawberry.field(description="Read records around a positional event (x_chN_eM ids).")
    async def nearby(
        self,
        info: Info,
        cursor: Cursor,
        event_id: Annotated[
            strawberry.ID, strawberry.argument(description="One of the page's nearbyEvents.")
        ],
        before: Annotated[int, strawberry.argument(description="Records before it (0..10).")] = 2,
        after: Annotated[int, strawberry.argument(description="Records after it (0..10).")] = 2,
        session: Session = None,
        reset_seen: ResetSeen = False,
    ) -> EvidencePage:
        _no_reset(reset_seen)
        out = await info.context.memory.nearby(
            cursor,
            str(event_id),
            before,
            after,
            await _session(info, session, cursor),
            repeatable=True,
        )
        return EvidencePage.from_outcome(out)
