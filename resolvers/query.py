"""Root queries: thin -- parse arguments, one engine call, map to schema types."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import strawberry

from engine.errors import out_of_range
from engine.memory import GRAPH_MAX_NODES, GRAPH_MAX_RELATIONS, READ_DEFAULT
from engine.models import NodeLabel, NodePage, SortSpec, Where
from resolvers.topics import is_topic_id, topic_by_id
from schema.context import Info
from schema.graph import (
    DEFAULT_FIRST,
    Concept,
    Connection,
    Edge,
    Event,
    GraphSnapshot,
    Location,
    Node,
    PageInfo,
    Person,
    TextRange,
    decode_cursor,
    encode_cursor,
    from_node,
)
from schema.inputs import EntitySort, EntityWhere, EventSort, EventWhere, decode_after
from schema.payloads import MemoryIndex


async def _connection(
    info: Info, label: NodeLabel, where: Where | None, sort: SortSpec, first: int, after: str | None
) -> Connection[Any]:
    page: NodePage = await info.context.memory.list_nodes(
        label, where, sort, first, decode_after(after, decode_cursor)
    )
    edges = [
        Edge(cursor=encode_cursor(pos), node=from_node(n))
        for n, pos in zip(page.nodes, page.positions, strict=True)
    ]
    return Connection(
        edges=edges,
        page_info=PageInfo(
            has_next_page=page.has_next, end_cursor=edges[-1].cursor if edges else None
        ),
        total_count=page.total,
    )


@strawberry.type
class GraphQuery:
    @strawberry.field(
        description="Any node by id (event_1, person_2, book_ch3_e12, topic:work->mnemoql, ...)."
    )
    async def node(self, info: Info, id: strawberry.ID) -> Node | None:
        if is_topic_id(str(id)):
            return await topic_by_id(info, str(id))
        found = await info.context.loaders.node(str(id))
        return from_node(found) if found is not None else None

    @strawberry.field(description="Several nodes by id, in the order asked (null where unknown).")
    async def nodes(self, info: Info, ids: list[strawberry.ID]) -> list[Node | None]:
        limit = info.context.memory.settings.limits.max_page_size
        if len(ids) > limit:
            raise out_of_range("ids", 0, limit, len(ids))

        async def one(node_id: str) -> Node | None:
            if is_topic_id(node_id):
                return await topic_by_id(info, node_id)
            found = await info.context.loaders.node(node_id)
            return from_node(found) if found is not None else None

        # gathered, so the DataLoader batches every id into one store call
        return list(await asyncio.gather(*(one(str(i)) for i in ids)))

    @strawberry.field
    async def events(
        self,
        info: Info,
        first: int = DEFAULT_FIRST,
        after: str | None = None,
        where: EventWhere | None = None,
        sort: EventSort | None = None,
    ) -> Connection[Event]:
        spec = (sort or EventSort()).to_domain()
        return await _connection(
            info, "Event", where.to_domain() if where else None, spec, first, after
        )

    @strawberry.field
    async def persons(
        self,
        info: Info,
        first: int = DEFAULT_FIRST,
        after: str | None = None,
        where: EntityWhere | None = None,
        sort: EntitySort | None = None,
    ) -> Connection[Person]:
        spec = (sort or EntitySort()).to_domain()
        return await _connection(
            info, "Person", where.to_domain() if where else None, spec, first, after
        )

    @strawberry.field
    async def concepts(
        self,
        info: Info,
        first: int = DEFAULT_FIRST,
        after: str | None = None,
        where: EntityWhere | None = None,
        sort: EntitySort | None = None,
    ) -> Connection[Concept]:
        spec = (sort or EntitySort()).to_domain()
        return await _connection(
            info, "Concept", where.to_domain() if where else None, spec, first, after
        )

    @strawberry.field
    async def locations(
        self,
        info: Info,
        first: int = DEFAULT_FIRST,
        after: str | None = None,
        where: EntityWhere | None = None,
        sort: EntitySort | None = None,
    ) -> Connection[Location]:
        spec = (sort or EntitySort()).to_domain()
        return await _connection(
            info, "Location", where.to_domain() if where else None, spec, first, after
        )

    @strawberry.field(description="Read an exact range of an event's original text (SPEC read).")
    async def read(
        self, info: Info, event_id: strawberry.ID, start: int = 0, limit: int = READ_DEFAULT
    ) -> TextRange:
        return TextRange.from_domain(await info.context.memory.read(str(event_id), start, limit))

    @strawberry.field(description="Model, dimensions and counts of this memory.")
    async def memory_index(self, info: Info) -> MemoryIndex:
        return MemoryIndex.from_domain(await info.context.memory.index())

    @strawberry.field(description="A read-only snapshot for graph views (caps 5000 / 30000).")
    async def graph(
        self,
        info: Info,
        max_nodes: int = GRAPH_MAX_NODES,
        max_relationships: int = GRAPH_MAX_RELATIONS,
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
    async def neighbourhood(self, info: Info, id: strawberry.ID, first: int = 100) -> GraphSnapshot:
        return GraphSnapshot.from_domain(await info.context.memory.neighbourhood(str(id), first))
