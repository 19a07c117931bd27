"""The topic tree and associative recall (SPEC §2) as GraphQL types.

``Topic`` is a node like the others (``node(id: "topic:work->mnemoql")``); its bindings are the
BINDS relationships to events, with the activation profile on the edge. ``recall``,
``recallByDate`` and ``activate`` return memories with why they were recalled.
"""

from __future__ import annotations

from enum import Enum

import strawberry

from engine import activation as act
from engine import recall as rc
from engine.errors import InvalidInput, out_of_range
from engine.models import topic_id
from engine.topics import LookupMiss, TopicNode
from schema.context import Info
from schema.evidence import Quote
from schema.graph import (
    DEFAULT_FIRST,
    Event,
    Node,
    PageInfo,
    SourceRange,
    decode_cursor,
    encode_cursor,
)


@strawberry.type
class TopicBindingEdge:
    """An event bound to the topic (a BINDS relationship) and the recall weights it carries."""

    cursor: str
    node: Event
    timestamp: float = strawberry.field(description="Binding time, ms since the epoch.")
    activation_weight: float
    diffusion_weight: float
    context_independence_weight: float
    related_paths: list[str]


@strawberry.type
class TopicBindingConnection:
    edges: list[TopicBindingEdge]
    page_info: PageInfo
    total_count: int


@strawberry.type(description="A node of the topic tree; its path joins segments with '->'.")
class Topic(Node):
    id: strawberry.ID
    path: str
    name: str = strawberry.field(description="The last segment of the path.")
    slices: int = strawberry.field(description="How many events are bound here.")
    _node: strawberry.Private[TopicNode]

    @strawberry.field(description="The parent topic (one level up); null for a root.")
    def parent(self) -> Topic | None:
        parent = self._node.parent
        return Topic.from_domain(parent) if parent is not None else None

    @strawberry.field(description="Direct subtopics, in creation order.")
    def children(self) -> list[Topic]:
        return [Topic.from_domain(c) for c in self._node.children.values()]

    @strawberry.field(description="Events bound to this topic, in binding order.")
    async def bindings(
        self, info: Info, first: int = DEFAULT_FIRST, after: str | None = None
    ) -> TopicBindingConnection:
        limit = info.context.memory.settings.limits.max_page_size
        if not 0 <= first <= limit:
            raise out_of_range("first", 0, limit, first)
        start = 0
        if after is not None:
            try:
                start = int(decode_cursor(after)) + 1
            except (ValueError, TypeError) as exc:
                raise InvalidInput(
                    "after is not a cursor this API issued", argument="after"
                ) from exc
        bindings = self._node.bindings
        edges: list[TopicBindingEdge] = []
        for i in range(start, min(start + first, len(bindings))):
            b = bindings[i]
            found = await info.context.loaders.node(b.slice_ref.slice_id)
            if found is None:
                continue
            p = b.profile
            edges.append(
                TopicBindingEdge(
                    cursor=encode_cursor(str(i)),
                    node=Event.from_domain(found),  # type: ignore[arg-type]
                    timestamp=float(b.timestamp_ms),
                    activation_weight=p.activation_weight,
                    diffusion_weight=p.diffusion_weight,
                    context_independence_weight=p.context_independence_weight,
                    related_paths=list(b.related_paths),
                )
            )
        end = min(start + first, len(bindings))
        return TopicBindingConnection(
            edges=edges,
            page_info=PageInfo(
                has_next_page=end < len(bindings),
                end_cursor=encode_cursor(str(end - 1)) if end > start else None,
            ),
            total_count=len(bindings),
        )

    @classmethod
    def from_domain(cls, node: TopicNode) -> Topic:
        return cls(
            id=strawberry.ID(topic_id(node.path)),
            path=node.path,
            name=node.segment,
            slices=len(node.bindings),
            _node=node,
        )


@strawberry.type
class TopicTree:
    text: str = strawberry.field(
        description="Partner's text form: 'path [root]' / 'path {slices: N}' lines, CRLF-joined."
    )
    roots: list[Topic]
    nodes: list[Topic] = strawberry.field(description="Every topic, depth first.")

    @classmethod
    def from_domain(cls, t: rc.TopicTree) -> TopicTree:
        return cls(
            text=t.text,
            roots=[Topic.from_domain(n) for n in t.roots],
            nodes=[Topic.from_domain(n) for n in t.nodes],
        )


@strawberry.enum(description="Why a memory was recalled.")
class RecallSource(Enum):
    PRIMARY = "PRIMARY"
    PARENT = "PARENT"
    RELATED = "RELATED"
    DATE = "DATE"
    ENTITY = "ENTITY"


@strawberry.type(description="A topic path or date the index does not hold.")
class LookupMissing:
    target: str = strawberry.field(description="TOPIC or DATE_INDEX.")
    key: str
    message: str

    @classmethod
    def from_domain(cls, m: LookupMiss) -> LookupMissing:
        return cls(target=m.target, key=m.key, message=m.message)


@strawberry.type
class RecalledMemory:
    event: Event
    source: RecallSource
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


@strawberry.type
class Recollection:
    memories: list[RecalledMemory]
    missing: LookupMissing | None

    @classmethod
    def from_domain(cls, r: rc.Recollection) -> Recollection:
        return cls(
            memories=[RecalledMemory.from_domain(m) for m in r.memories],
            missing=LookupMissing.from_domain(r.missing) if r.missing is not None else None,
        )


@strawberry.enum
class RecallCueType(Enum):
    TOPIC = "topic"
    DATE = "date"
    ENTITY = "entity"


@strawberry.type
class RecallCue:
    type: RecallCueType
    text: str


@strawberry.type
class ActivatedMemory:
    event: Event
    summary: str
    source: RecallSource
    score: float | None
    timestamp: float
    topic_path: str | None
    quote: Quote | None = strawberry.field(
        description="An exact excerpt (at most 120 code points) where the cue's terms are."
    )
    ranges: list[SourceRange] = strawberry.field(
        description="The source chunks: exact [start, end) ranges of the original text."
    )

    @classmethod
    def from_domain(cls, a: act.ActivatedMemory) -> ActivatedMemory:
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
        )


@strawberry.type
class Activation:
    cues: list[RecallCue]
    memories: list[ActivatedMemory]
    missing: list[LookupMissing]

    @classmethod
    def from_domain(cls, a: act.Activation) -> Activation:
        return cls(
            cues=[RecallCue(type=RecallCueType(c.type), text=c.text) for c in a.cues],
            memories=[ActivatedMemory.from_domain(m) for m in a.memories],
            missing=[LookupMissing.from_domain(m) for m in a.missing],
        )
