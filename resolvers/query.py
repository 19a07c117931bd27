"""Root queries: thin -- parse arguments, one engine call, map to schema types."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import strawberry

from mnemoql.engine.errors import CursorInvalid, out_of_range
from mnemoql.engine.memory import GRAPH_MAX_NODES, GRAPH_MAX_RELATIONS, READ_DEFAULT
from mnemoql.engine.models import NodeLabel, NodePage, Page, SortSpec, Where
from mnemoql.schema.context import Info
from mnemoql.schema.graph import (
    Concept,
    Connection,
    Edge,
    Event,
    Location,
    Node,
    Person,
    from_node,
    node_by_id,
)
from mnemoql.schema.inputs import EntitySort, EntityWhere, EventSort, EventWhere
from mnemoql.schema.payloads import MemoryIndex
from mnemoql.schema.relay import After, Before, First, Last, digest, window
from mnemoql.schema.snapshot import GraphSnapshot
from mnemoql.schema.text import TextRange

EventFilter = Annotated[
    EventWhere | None, strawberry.argument(description="Only the events that match.")
]
EntityFilter = Annotated[
    EntityWhere | None, strawberry.argument(description="Only the entities that match.")
]
EventOrder = Annotated[
    EventSort | None, strawberry.argument(description="The order (default: newest first).")
]
EntityOrder = Annotated[
    EntitySort | None, strawberry.argument(description="The order (default: by name).")
]
NodeId = Annotated[strawberry.ID, strawberry.argument(description="A node id.")]


async def _connection(
    info: Info,
    field: str,
    label: NodeLabel,
    where: Where | None,
    sort: SortSpec,
    paging: tuple[int | None, str | None, int | None, str | None],
) -> Connection[Any]:
    # the cursor names this list, its sort and its filter: it pages nothing else
    name = f"{field}(sort: {sort[0]} {sort[1]}" + (f", where: {digest(where)})" if where else ")")
    w = window(name, *paging, info.context.memory.settings.limits.max_page_size)
    at = w.position
    if at is not None:
        if not (isinstance(at, list) and len(at) == 2 and all(isinstance(x, str) for x in at)):
            raise CursorInvalid(
                "the cursor does not hold a position", argument="after", zh="游标中没有位置信息"
            )
        at = (at[0], at[1])
    page = Page(0, last=w.size, before=at) if w.backward else Page(w.size, after=at)
    found: NodePage = await info.context.memory.list_nodes(label, where, sort, page)
    edges = [
        Edge(cursor=w.cursor(list(pos)), node=from_node(n))
        for n, pos in zip(found.nodes, found.positions, strict=True)
    ]
    more = found.has_previous if w.backward else found.has_next
    return Connection(
        edges=edges,
        page_info=w.page_info([e.cursor for e in edges], more),
        total_count=found.total,
    )


@strawberry.type
class GraphQuery:
    @strawberry.field(
        description="Any node by id (event_1, person_2, book_ch3_e12, topic:work->mnemoql, ...)."
    )
    async def node(self, info: Info, id: NodeId) -> Node | None:
        return await node_by_id(info, str(id))

    @strawberry.field(description="Several nodes by id, in the order asked (null where unknown).")
    async def nodes(
        self,
        info: Info,
        ids: Annotated[list[strawberry.ID], strawberry.argument(description="Node ids.")],
    ) -> list[Node | None]:
        limit = info.context.memory.settings.limits.max_page_size
        if len(ids) > limit:
            raise out_of_range("ids", 0, limit, len(ids))
        # gathered, so the DataLoader batches every id into one store call
        return list(await asyncio.gather(*(node_by_id(info, str(i)) for i in ids)))

    @strawberry.field(description="Events, paged (Relay), filtered and sorted.")
    async def events(
        self,
        info: Info,
        first: First = None,
        after: After = None,
        where: EventFilter = None,
        sort: EventOrder = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Event]:
        spec = (sort or EventSort()).to_domain()
        paging = (first, after, last, before)
        return await _connection(
            info, "events", "Event", where.to_domain() if where else None, spec, paging
        )

    @strawberry.field(description="Persons, paged (Relay), filtered and sorted.")
    async def persons(
        self,
        info: Info,
        first: First = None,
        after: After = None,
        where: EntityFilter = None,
        sort: EntityOrder = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Person]:
        spec = (sort or EntitySort()).to_domain()
        paging = (first, after, last, before)
        return await _connection(
            info, "persons", "Person", where.to_domain() if where else None, spec, paging
        )

    @strawberry.field(description="Concepts, paged (Relay), filtered and sorted.")
    async def concepts(
        self,
        info: Info,
        first: First = None,
        after: After = None,
        where: EntityFilter = None,
        sort: EntityOrder = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Concept]:
        spec = (sort or EntitySort()).to_domain()
        paging = (first, after, last, before)
        return await _connection(
            info, "concepts", "Concept", where.to_domain() if where else None, spec, paging
        )

    @strawberry.field(description="Locations, paged (Relay), filtered and sorted.")
    async def locations(
        self,
        info: Info,
        first: First = None,
        after: After = None,
        where: EntityFilter = None,
        sort: EntityOrder = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Location]:
        spec = (sort or EntitySort()).to_domain()
        paging = (first, after, last, before)
        return await _connection(
            info, "locations", "Location", where.to_domain() if where else None, spec, paging
        )

    @strawberry.field(description="Read an exact range of an event's original text (SPEC read).")
    async def read(
        self,
        info: Info,
        event_id: Annotated[strawberry.ID, strawberry.argument(description="The event.")],
        start: Annotated[int, strawberry.argument(description="First code point.")] = 0,
        limit: Annotated[
            int, strawberry.argument(description="How many code points (1..10000).")
        ] = READ_DEFAULT,
    ) -> TextRange:
        return TextRange.from_domain(await info.context.memory.read(str(event_id), start, limit))

    @strawberry.field(description="Model, dimensions and counts of this memory.")
    async def memory_index(self, info: Info) -> MemoryIndex:
        return MemoryIndex.from_domain(await info.context.memory.index())

    @strawberry.field(description="A read-only snapshot for graph views (caps 5000 / 30000).")
    async def graph(
        self,
        info: Info,
        max_nodes: Annotated[
            int, strawberry.argument(description="At most this many nodes (1..5000).")
        ] = GRAPH_MAX_NODES,
        max_relationships: Annotated[
            int, strawberry.argument(description="At most this many relationships (0..30000).")
        ] = GRAPH_MAX_RELATIONS,
        include_topics: Annotated[
            bool,
            strawberry.argument(
                description="Also Topic nodes (after the four labels, within maxNodes) with "
                "their SUBTOPIC and BINDS relationships."
            ),
        ] = False,
    ) -> GraphSnapshot:
        return GraphSnapshot.from_domain(
            await info.context.memory.graph(max_nodes, max_relationships, topics=include_topics)
        )

    @strawberry.field(description="A node and its direct neighbours, for expanding a graph view.")
    async def neighbourhood(
        self,
        info: Info,
        id: NodeId,
        first: Annotated[
            int, strawberry.argument(description="At most this many neighbours (1..5000).")
        ] = 100,
    ) -> GraphSnapshot:
        return GraphSnapshot.from_domain(await info.context.memory.neighbourhood(str(id), first))
