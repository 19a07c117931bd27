"""Associative recall (SPEC §2) as GraphQL types: what ``recall``, ``recallByDate`` and
``activate`` return, memories with why they were recalled, and ``activate``'s Partner context
block (``activated_memory_slices``) in its three projections. The topic tree is ``schema.topics``.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, cast

import strawberry

from mnemoql.engine import activation as act
from mnemoql.engine import recall as rc
from mnemoql.engine.activation_cues import ActivationCue
from mnemoql.engine.topics import LookupMiss, Omitted, Projection, block
from mnemoql.engine.topics.block import ActivatedSlice, render_block
from mnemoql.schema.evidence import Quote
from mnemoql.schema.graph import Event
from mnemoql.schema.text import SourceRange


@strawberry.enum(description="Why a memory was recalled.")
class RecallSource(Enum):
    PRIMARY = strawberry.enum_value("PRIMARY", description="Bound to the topic asked for.")
    PARENT = strawberry.enum_value("PARENT", description="Bound to a topic above it.")
    RELATED = strawberry.enum_value("RELATED", description="Bound with it as a related path.")
    DATE = strawberry.enum_value("DATE", description="Saved on the day asked for.")
    ENTITY = strawberry.enum_value("ENTITY", description="Mentions an entity of the cues.")
    VECTOR = strawberry.enum_value(
        "VECTOR", description="Found by the vector search of the lines alone (activate)."
    )


@strawberry.type(description="A topic path or date the index does not hold.")
class LookupMissing:
    target: str = strawberry.field(description="TOPIC or DATE_INDEX.")
    key: str = strawberry.field(description="The path or date that was asked for.")
    message: str = strawberry.field(description="What is missing, as a sentence.")

    @classmethod
    def from_domain(cls, m: LookupMiss) -> LookupMissing:
        return cls(target=m.target, key=m.key, message=m.message)


@strawberry.type(description="One recalled memory and why it came back.")
class RecalledMemory:
    event: Event = strawberry.field(description="The event.")
    source: RecallSource = strawberry.field(description="Why it was recalled.")
    score: float | None = strawberry.field(description="Topic recall score; null otherwise.")
    timestamp: float = strawberry.field(description="Binding (or save) time, ms since epoch.")
    topic_path: str | None = strawberry.field(description="The topic it was found under.")

    @classmethod
    def from_domain(cls, m: rc.RecalledMemory) -> RecalledMemory:
        return cls(
            event=Event.from_domain(m.event),
            source=RecallSource(m.source),
            score=m.score,
            timestamp=float(m.timestamp_ms),
            topic_path=m.topic_path,
        )


@strawberry.type(description="What recall or recallByDate found.")
class Recollection:
    memories: list[RecalledMemory] = strawberry.field(description="The memories, best first.")
    missing: LookupMissing | None = strawberry.field(
        description="Set when the topic or date is not in the index."
    )

    @classmethod
    def from_domain(cls, r: rc.Recollection) -> Recollection:
        return cls(
            memories=[RecalledMemory.from_domain(m) for m in r.memories],
            missing=LookupMissing.from_domain(r.missing) if r.missing is not None else None,
        )


@strawberry.enum(description="What kind of cue a conversation line gave.")
class RecallCueType(Enum):
    TOPIC = strawberry.enum_value("topic", description="A topic path.")
    DATE = strawberry.enum_value("date", description="A day (yyyy-MM-dd).")
    ENTITY = strawberry.enum_value("entity", description="A person, concept or location.")


@strawberry.type(description="A cue found in the conversation lines.")
class RecallCue:
    type: RecallCueType = strawberry.field(description="What kind of cue.")
    text: str = strawberry.field(description="The cue itself.")


@strawberry.type(description="A memory the conversation called up, with where its text is.")
class ActivatedMemory:
    event: Event = strawberry.field(description="The event.")
    summary: str = strawberry.field(description="Its one-line summary.")
    source: RecallSource = strawberry.field(
        description="Why it was recalled: the first cue that found it, else VECTOR."
    )
    score: float | None = strawberry.field(description="Topic recall score; null otherwise.")
    timestamp: float = strawberry.field(description="Binding (or save) time, ms since epoch.")
    topic_path: str | None = strawberry.field(description="The topic it was found under.")
    quote: Quote | None = strawberry.field(
        description="An exact excerpt (at most 120 code points) where the cue's terms are."
    )
    ranges: list[SourceRange] = strawberry.field(
        description="The source chunks: exact [start, end) ranges of the original text."
    )
    relevance: float = strawberry.field(
        description="The ranking score: similarity to the lines plus what the cues add (how "
        "much each cue narrows, term coverage, recency); a heuristic, not a confidence."
    )
    similarity: float | None = strawberry.field(
        description="Cosine of the lines and the memory (mean of its summary and best chunk); "
        "null without usable vectors."
    )
    coverage: float = strawberry.field(description="Share of the lines' terms the memory holds.")
    recency: float = strawberry.field(
        description="Partner's recency bonus of its time (0.30 within a day ... 0 after 30 days)."
    )
    vector_rank: int | None = strawberry.field(
        description="Its rank in the vector search of the lines (1-based); null if not there."
    )
    cue_rank: int | None = strawberry.field(
        description="Its rank among the memories a cue found (1-based); null if no cue did."
    )
    cues: list[RecallCue] = strawberry.field(description="The cues that found it, in cue order.")

    @classmethod
    def from_domain(cls, a: act.ActivatedMemory, cues: list[ActivationCue]) -> ActivatedMemory:
        m, q = a.memory, a.quote
        return cls(
            event=Event.from_domain(m.event),
            summary=m.event.summary,
            source=RecallSource(m.source),
            score=m.score,
            timestamp=float(m.timestamp_ms),
            topic_path=m.topic_path,
            quote=Quote(text=q.text, start=q.start, end=q.end, total=q.total) if q else None,
            ranges=[SourceRange(index=i, start=s, end=e) for i, s, e in a.ranges],
            relevance=a.relevance,
            similarity=a.similarity,
            coverage=a.coverage,
            recency=a.recency,
            vector_rank=a.vector_rank,
            cue_rank=a.cue_rank,
            cues=[_cue(cues[i]) for i in a.cues],
        )


def _cue(c: ActivationCue) -> RecallCue:
    return RecallCue(type=RecallCueType(c.type), text=c.text)


@strawberry.enum(description="A projection of the activated_memory_slices block (SPEC §2.8).")
class SliceProjection(Enum):
    FULL = strawberry.enum_value(
        "full", description="Summary and messages: up to 10 whole; else first 2, middle 4, last 2."
    )
    COMPACT = strawberry.enum_value(
        "compact", description="As FULL, without the first 2 messages when there are more than 10."
    )
    ABSTRACT = strawberry.enum_value("abstract", description="The summary only.")

    @property
    def code(self) -> Projection:
        """The engine's name (members hold it at run time; strawberry unwraps enum_value)."""
        return cast(Projection, self.value)


ProjectionArg = Annotated[
    SliceProjection, strawberry.argument(description="Which projection (default FULL).")
]


@strawberry.enum(description="A message of a slice, or a note for messages left out.")
class SliceEntryKind(Enum):
    MESSAGE = strawberry.enum_value("message", description="A message, shown whole.")
    OMITTED = strawberry.enum_value("omitted", description="'省略了 N 条消息': N left out.")


@strawberry.type(description="One entry of a slice's source_messages in a projection.")
class SliceEntry:
    kind: SliceEntryKind = strawberry.field(description="A message or an omitted note.")
    role: str | None = strawberry.field(description="user or assistant; null for a note.")
    content: str | None = strawberry.field(description="The message text; null for a note.")
    omitted: int | None = strawberry.field(description="How many were left out; null otherwise.")
    text: str = strawberry.field(description="The message, or the note as Partner words it.")


@strawberry.type(description="One activated slice (a saved event) as the block shows it.")
class ActivatedMemorySlice:
    unit_id: str = strawberry.field(description="Partner's unit: the memory space.")
    slice_id: strawberry.ID = strawberry.field(description="Partner's slice: the event id.")
    event: Event = strawberry.field(description="The event.")
    date: str = strawberry.field(description="The day it was saved (yyyy-MM-dd).")
    timestamp: float = strawberry.field(description="When it was saved, ms since the epoch.")
    summary: str = strawberry.field(description="Its summary (slice_summary).")
    message_count: int = strawberry.field(
        description="Its messages: the non-blank lines of the saved text."
    )
    _slice: strawberry.Private[ActivatedSlice]

    @strawberry.field(description="The source_messages of one projection (empty for ABSTRACT).")
    def messages(self, projection: ProjectionArg = SliceProjection.FULL) -> list[SliceEntry]:
        out = []
        for e in self._slice.window(projection.code):
            if isinstance(e, Omitted):
                out.append(SliceEntry(kind=SliceEntryKind.OMITTED, role=None, content=None,
                                      omitted=e.count, text=e.text))  # fmt: skip
            else:
                out.append(SliceEntry(kind=SliceEntryKind.MESSAGE, role=e.role, content=e.content,
                                      omitted=None, text=e.content))  # fmt: skip
        return out


@strawberry.type(
    description="Partner's activated_memory_slices context block: the activated slices, "
    "their three projections as XML, and the block's fade settings."
)
class ActivatedMemorySlices:
    block_name: str = strawberry.field(description="activated_memory_slices.")
    source: str = strawberry.field(description="memory_selector.")
    urgency: str = strawberry.field(description="normal.")
    visible_to: list[str] = strawberry.field(description="The domains that see it: MEMORY.")
    replace_fade_factor: float = strawberry.field(
        description="Score lost when a newer block of the same source replaces it (18)."
    )
    time_fade_factor: float = strawberry.field(description="Score lost per minute (8).")
    activate_factor: float = strawberry.field(description="Score gained per activation (16).")
    activation_score: float = strawberry.field(
        description="The starting score (100): FULL from 70, COMPACT from 30, ABSTRACT below."
    )
    slices: list[ActivatedMemorySlice] = strawberry.field(
        description="The slices, in ranking order (empty when nothing was activated)."
    )
    _slices: strawberry.Private[list[ActivatedSlice]]

    @strawberry.field(description="The block as XML in one projection (what a model reads).")
    def xml(self, projection: ProjectionArg = SliceProjection.FULL) -> str:
        return render_block(self._slices, projection.code)

    @classmethod
    def from_domain(cls, a: act.Activation) -> ActivatedMemorySlices:
        events = {m.memory.event.id: m.memory.event for m in a.memories}
        return cls(
            block_name=block.BLOCK_NAME,
            source=block.BLOCK_SOURCE,
            urgency=block.BLOCK_URGENCY,
            visible_to=list(block.VISIBLE_TO),
            replace_fade_factor=block.REPLACE_FADE_FACTOR,
            time_fade_factor=block.TIME_FADE_FACTOR,
            activate_factor=block.ACTIVATE_FACTOR,
            activation_score=block.INITIAL_ACTIVATION_SCORE,
            slices=[
                ActivatedMemorySlice(
                    unit_id=s.unit_id,
                    slice_id=strawberry.ID(s.slice_id),
                    event=Event.from_domain(events[s.slice_id]),
                    date=s.date,
                    timestamp=float(s.timestamp_ms),
                    summary=s.summary,
                    message_count=len(s.messages),
                    _slice=s,
                )
                for s in a.slices
            ],
            _slices=list(a.slices),
        )


@strawberry.type(description="What activate found: the cues, then the memories.")
class Activation:
    cues: list[RecallCue] = strawberry.field(description="Cues found in the lines.")
    memories: list[ActivatedMemory] = strawberry.field(description="The memories, best first.")
    missing: list[LookupMissing] = strawberry.field(
        description="Topics or dates of the cues the index does not hold."
    )
    activated_memory_slices: ActivatedMemorySlices = strawberry.field(
        description="The same memories as Partner's context block (SPEC §2.8)."
    )

    @classmethod
    def from_domain(cls, a: act.Activation) -> Activation:
        return cls(
            cues=[_cue(c) for c in a.cues],
            memories=[ActivatedMemory.from_domain(m, a.cues) for m in a.memories],
            missing=[LookupMissing.from_domain(m) for m in a.missing],
            activated_memory_slices=ActivatedMemorySlices.from_domain(a),
        )
