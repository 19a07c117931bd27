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
from engine.errors import CursorInvalid
from engine.models import topic_id
from engine.topics import LookupMiss, TopicNode
from schema.context import Info
from schema.evidence import Quote
from schema.graph import Event, Node, SourceRange
from schema.relay import After, Before, First, Last, PageInfo, window


@strawberry.type(
    description="An event bound to the topic (a BINDS relationship) and its recall weights."
)
class TopicBindingEdge:
    cursor: str = strawberry.field(description="Pass as after/before to page from this edge.")
    node: Event = strawberry.field(description="The bound event.")
    timestamp: float = strawberry.field(description="Binding time, ms since the epoch.")
    activation_weight: float = strawberry.field(description="How readily it is recalled.")
    diffusion_weight: float = strawberry.field(description="How far recall spreads from it.")
    context_independence_weight: float = strawberry.field(
        description="How well it reads without its conversation."
    )
    related_paths: list[str] = strawberry.field(description="Topic paths recalled alongside.")


@strawberry.type(description="The events bound to a topic, in binding order.")
class TopicBindingConnection:
    edges: list[TopicBindingEdge] = strawberry.field(description="The page, in binding order.")
    page_info: PageInfo = strawberry.field(description="Where this page sits in the list.")
    total_count: int = strawberry.field(description="How many events are bound here.")


@strawberry.type(description="A node of the topic tree; its path joins segments with '->'.")
class Topic(Node):
    id: strawberry.ID = strawberry.field(description="topic:<path>, e.g. topic:work->mnemoql.")
    path: str = strawberry.field(description="Segments joined with '->'.")
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
        self,
        info: Info,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> TopicBindingConnection:
        limit = info.context.memory.settings.limits.max_page_size
        w = window(f"{self.id}.bindings", first, after, last, before, limit)
        bindings = self._node.bindings
        at = w.position
        if at is not None and not isinstance(at, int):
            raise CursorInvalid("the cursor does not hold a position", argument="after")
        if w.backward:
            stop = len(bindings) if at is None else max(0, min(at, len(bindings)))
            start = max(0, stop - w.size)
        else:
            start = 0 if at is None else at + 1
            stop = min(start + w.size, len(bindings))
        edges: list[TopicBindingEdge] = []
        for i in range(start, stop):
            b = bindings[i]
            found = await info.context.loaders.node(b.slice_ref.slice_id)
            if found is None:
                continue
            p = b.profile
            edges.append(
                TopicBindingEdge(
                    cursor=w.cursor(i),
                    node=Event.from_domain(found),  # type: ignore[arg-type]
                    timestamp=float(b.timestamp_ms),
                    activation_weight=p.activation_weight,
                    diffusion_weight=p.diffusion_weight,
                    context_independence_weight=p.context_independence_weight,
                    related_paths=list(b.related_paths),
                )
            )
        more = start > 0 if w.backward else stop < len(bindings)
        return TopicBindingConnection(
            edges=edges,
            page_info=w.page_info([e.cursor for e in edges], more),
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


@strawberry.type(description="The whole topic tree.")
class TopicTree:
    text: str = strawberry.field(
        description="Partner's text form: 'path [root]' / 'path {slices: N}' lines, CRLF-joined."
    )
    roots: list[Topic] = strawberry.field(description="The top-level topics.")
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
    PRIMARY = strawberry.enum_value("PRIMARY", description="Bound to the topic asked for.")
    PARENT = strawberry.enum_value("PARENT", description="Bound to a topic above it.")
    RELATED = strawberry.enum_value("RELATED", description="Bound with it as a related path.")
    DATE = strawberry.enum_value("DATE", description="Saved on the day asked for.")
    ENTITY = strawberry.enum_value("ENTITY", description="Mentions an entity of the cues.")


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
    source: RecallSource = strawberry.field(description="Why it was recalled.")
    score: float | None = strawberry.field(description="Topic recall score; null otherwise.")
    timestamp: float = strawberry.field(description="Binding (or save) time, ms since epoch.")
    topic_path: str | None = strawberry.field(description="The topic it was found under.")
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


@strawberry.type(description="What activate found: the cues, then the memories.")
class Activation:
    cues: list[RecallCue] = strawberry.field(description="Cues found in the lines.")
    memories: list[ActivatedMemory] = strawberry.field(description="The memories, best first.")
    missing: list[LookupMissing] = strawberry.field(
        description="Topics or dates of the cues the index does not hold."
    )

    @classmethod
    def from_domain(cls, a: act.Activation) -> Activation:
        return cls(
            cues=[RecallCue(type=RecallCueType(c.type), text=c.text) for c in a.cues],
            memories=[ActivatedMemory.from_domain(m) for m in a.memories],
            missing=[LookupMissing.from_domain(m) for m in a.missing],
        )
