"""The topic tree (SPEC §2) as GraphQL types.

``Topic`` is a node like the others (``node(id: "topic:work->mnemoql")``); its bindings are the
BINDS relationships to events, with the activation profile on the edge. What ``recall``,
``recallByDate`` and ``activate`` return is ``schema.recall``.
"""

from __future__ import annotations

import strawberry

from mnemoql.engine import recall as rc
from mnemoql.engine.errors import CursorInvalid
from mnemoql.engine.models import topic_id
from mnemoql.engine.topics import TopicNode
from mnemoql.schema.context import Info
from mnemoql.schema.graph import Event, Node
from mnemoql.schema.relay import After, Before, First, Last, PageInfo, window


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
            raise CursorInvalid(
                "the cursor does not hold a position", argument="after", zh="游标中没有位置信息"
            )
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
