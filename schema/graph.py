"""The memory graph as GraphQL types: Event, Person, Concept, Location implement Node.

Relations are Relay connections whose edges carry the relationship properties (``role`` on
PARTICIPATED_IN, ``attitude`` and ``eventId`` on HAS_ATTITUDE), paged forward or backward
(``schema.relay``). Nested fields go through the request's DataLoaders, so a page of events
with their people costs a few store calls, not one per event.
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, TypeVar

import strawberry

from mnemoql.engine import models as m
from mnemoql.engine.errors import CursorInvalid
from mnemoql.engine.memory import READ_DEFAULT
from mnemoql.schema.context import Info
from mnemoql.schema.relay import After, Before, First, Last, PageInfo, Window, window
from mnemoql.schema.text import SourceRange, TextRange

T = TypeVar("T")


@strawberry.interface(description="Anything with a globally unique id, fetchable by node(id).")
class Node:
    id: strawberry.ID = strawberry.field(
        description="Globally unique: no two nodes of any type share it."
    )


@strawberry.type(description="One edge of a connection: a node and the cursor to page from it.")
class Edge(Generic[T]):
    cursor: str = strawberry.field(description="Pass as after/before to page from this edge.")
    node: T = strawberry.field(description="The node at this edge.")


@strawberry.type(description="A page of a list of nodes (Relay Cursor Connections).")
class Connection(Generic[T]):
    edges: list[Edge[T]] = strawberry.field(description="The page, in the connection's order.")
    page_info: PageInfo = strawberry.field(description="Where this page sits in the list.")
    total_count: int | None = strawberry.field(
        default=None, description="How many nodes the whole list holds (root lists only)."
    )


# ---- relation connections ----


async def _relation_page(
    info: Info,
    node_id: str,
    field: str,
    rel_type: m.RelType,
    direction: m.Direction,
    paging: tuple[int | None, str | None, int | None, str | None],
) -> tuple[Window, list[tuple[m.Neighbour, m.Node]], PageInfo]:
    limit = info.context.memory.settings.limits.max_page_size
    w = window(f"{node_id}.{field}", *paging, limit)
    at = w.position
    if at is not None and not isinstance(at, str):
        raise CursorInvalid(
            "the cursor does not hold a position", argument="after", zh="游标中没有位置信息"
        )
    after, before = (None, at) if w.backward else (at, None)
    loaders = info.context.loaders
    rows = await loaders.neighbours(
        node_id, rel_type, direction, w.size + 1, after, before, w.backward
    )
    more = len(rows) > w.size
    # backward, the store gives the rows nearest `before` last: the extra one is the first
    rows = rows[len(rows) - w.size :] if w.backward else rows[: w.size]
    nodes = [await loaders.node(r.other_id) for r in rows]
    pairs = [(r, n) for r, n in zip(rows, nodes, strict=True) if n is not None]
    return w, pairs, w.page_info([w.cursor(r.other_id) for r, _ in pairs], more)


@strawberry.type(description="A person who took part in the event, with their role.")
class ParticipantEdge:
    cursor: str = strawberry.field(description="Pass as after/before to page from this edge.")
    node: Person = strawberry.field(description="The participant.")
    role: str | None = strawberry.field(description="Their role in the event, if extracted.")


@strawberry.type(description="The participants of an event (PARTICIPATED_IN).")
class ParticipantConnection:
    edges: list[ParticipantEdge] = strawberry.field(description="The page, by person id.")
    page_info: PageInfo = strawberry.field(description="Where this page sits in the list.")


@strawberry.type(description="An event a person took part in, with their role.")
class ParticipationEdge:
    cursor: str = strawberry.field(description="Pass as after/before to page from this edge.")
    node: Event = strawberry.field(description="The event.")
    role: str | None = strawberry.field(description="The person's role in it, if extracted.")


@strawberry.type(description="The events a person took part in (PARTICIPATED_IN).")
class ParticipationConnection:
    edges: list[ParticipationEdge] = strawberry.field(description="The page, by event id.")
    page_info: PageInfo = strawberry.field(description="Where this page sits in the list.")


@strawberry.type(description="An attitude (HAS_ATTITUDE): who feels how about what.")
class AttitudeEdge:
    cursor: str = strawberry.field(description="Pass as after/before to page from this edge.")
    node: Node = strawberry.field(
        description="The other end: the concept or person the attitude is about (for "
        "Person.attitudes), or the person who holds it (for Concept.attitudes)."
    )
    attitude: str = strawberry.field(description="The attitude as extracted, e.g. likes.")
    event_id: strawberry.ID | None = strawberry.field(
        description="The event the attitude was extracted from."
    )


@strawberry.type(description="Attitudes of a person, or towards a concept (HAS_ATTITUDE).")
class AttitudeConnection:
    edges: list[AttitudeEdge] = strawberry.field(description="The page, by the other end's id.")
    page_info: PageInfo = strawberry.field(description="Where this page sits in the list.")


async def _plain(
    info: Info,
    node_id: str,
    field: str,
    rel: m.RelType,
    direction: m.Direction,
    paging: tuple[int | None, str | None, int | None, str | None],
) -> Connection[Any]:
    w, pairs, page = await _relation_page(info, node_id, field, rel, direction, paging)
    return Connection(
        edges=[Edge(cursor=w.cursor(r.other_id), node=from_node(n)) for r, n in pairs],
        page_info=page,
    )


async def _attitudes(
    info: Info,
    node_id: str,
    field: str,
    direction: m.Direction,
    paging: tuple[int | None, str | None, int | None, str | None],
) -> AttitudeConnection:
    w, pairs, page = await _relation_page(info, node_id, field, "HAS_ATTITUDE", direction, paging)
    edges = []
    for r, n in pairs:
        props = r.rel.properties
        event_id = props.get("event_id")
        edges.append(
            AttitudeEdge(
                cursor=w.cursor(r.other_id),
                node=from_node(n),
                attitude=str(props.get("attitude", "")),
                event_id=strawberry.ID(event_id) if event_id else None,
            )
        )
    return AttitudeConnection(edges=edges, page_info=page)


Start = Annotated[int, strawberry.argument(description="First code point to read.")]
Limit = Annotated[int, strawberry.argument(description="How many code points (1..10000).")]


@strawberry.type(description="Something that happened, as extracted from one saved text.")
class Event(Node):
    id: strawberry.ID = strawberry.field(
        description="event_N, or the caller's own id (e.g. book_ch3_e12)."
    )
    summary: str = strawberry.field(description="One-line summary written at extraction.")
    time: str | None = strawberry.field(description="Occurrence time as written in the text.")
    create_time: str = strawberry.field(description="When it was saved (ISO-8601).")
    create_date: str = strawberry.field(description="The day it was saved (yyyy-MM-dd).")
    content_hash: str = strawberry.field(description="SHA-256 of the original text.")
    length: int = strawberry.field(description="Length of the original text in code points.")
    legacy: bool = strawberry.field(description="True when the event has no source chunks yet.")

    @strawberry.field(description="An exact code-point range of the original text.")
    async def content(
        self, info: Info, start: Start = 0, limit: Limit = READ_DEFAULT
    ) -> TextRange:
        return TextRange.from_domain(await info.context.memory.read(str(self.id), start, limit))

    @strawberry.field(description="The source chunks (800/120 code points) of the original text.")
    async def chunks(self, info: Info) -> list[SourceRange]:
        rows = await info.context.loaders.chunks(str(self.id))
        return [SourceRange(index=c.chunk_index, start=c.start, end=c.end) for c in rows]

    @strawberry.field(description="People who took part (PARTICIPATED_IN, with role), by id.")
    async def participants(
        self,
        info: Info,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> ParticipantConnection:
        paging = (first, after, last, before)
        w, pairs, page = await _relation_page(
            info, str(self.id), "participants", "PARTICIPATED_IN", "in", paging
        )
        return ParticipantConnection(
            edges=[
                ParticipantEdge(
                    cursor=w.cursor(r.other_id),
                    node=Person.from_domain(n),  # type: ignore[arg-type]
                    role=r.rel.properties.get("role"),
                )
                for r, n in pairs
            ],
            page_info=page,
        )

    @strawberry.field(description="Where it happened (OCCURRED_AT), by id.")
    async def locations(
        self,
        info: Info,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Location]:
        paging = (first, after, last, before)
        return await _plain(info, str(self.id), "locations", "OCCURRED_AT", "out", paging)

    @strawberry.field(description="Concepts the event mentions (MENTIONS), by id.")
    async def concepts(
        self,
        info: Info,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Concept]:
        paging = (first, after, last, before)
        return await _plain(info, str(self.id), "concepts", "MENTIONS", "out", paging)

    @classmethod
    def from_domain(cls, e: m.Event) -> Event:
        return cls(
            id=strawberry.ID(e.id),
            summary=e.summary,
            time=e.time,
            create_time=e.create_time,
            create_date=e.create_date,
            content_hash=e.content_hash,
            length=len(e.content),
            legacy=not e.has_chunks,
        )


@strawberry.interface(description="A person, concept or location extracted from saved texts.")
class Entity(Node):
    id: strawberry.ID = strawberry.field(description="person_N, concept_N or location_N.")
    name: str = strawberry.field(description="The canonical name.")
    aliases: list[str] = strawberry.field(
        description="Other names merged into this one, in the order they were met."
    )
    description: str | None = strawberry.field(description="A short description, if extracted.")
    create_time: str = strawberry.field(description="When it was first saved (ISO-8601).")


def _entity_kwargs(e: m.Entity) -> dict[str, Any]:
    return {
        "id": strawberry.ID(e.id),
        "name": e.name,
        "aliases": list(e.aliases),
        "description": e.description,
        "create_time": e.create_time,
    }


@strawberry.type(description="A person who appears in saved texts.")
class Person(Entity):
    @strawberry.field(description="Events this person took part in (PARTICIPATED_IN), by id.")
    async def events(
        self,
        info: Info,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> ParticipationConnection:
        w, pairs, page = await _relation_page(
            info, str(self.id), "events", "PARTICIPATED_IN", "out", (first, after, last, before)
        )
        return ParticipationConnection(
            edges=[
                ParticipationEdge(
                    cursor=w.cursor(r.other_id),
                    node=Event.from_domain(n),  # type: ignore[arg-type]
                    role=r.rel.properties.get("role"),
                )
                for r, n in pairs
            ],
            page_info=page,
        )

    @strawberry.field(description="This person's attitudes towards concepts or people.")
    async def attitudes(
        self,
        info: Info,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> AttitudeConnection:
        paging = (first, after, last, before)
        return await _attitudes(info, str(self.id), "attitudes", "out", paging)

    @classmethod
    def from_domain(cls, e: m.Entity) -> Person:
        return cls(**_entity_kwargs(e))


@strawberry.type(description="A concept (a thing, topic or idea) mentioned in saved texts.")
class Concept(Entity):
    @strawberry.field(description="Events that mention this concept, by id.")
    async def events(
        self,
        info: Info,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Event]:
        paging = (first, after, last, before)
        return await _plain(info, str(self.id), "events", "MENTIONS", "in", paging)

    @strawberry.field(description="People's attitudes towards this concept.")
    async def attitudes(
        self,
        info: Info,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> AttitudeConnection:
        paging = (first, after, last, before)
        return await _attitudes(info, str(self.id), "attitudes", "in", paging)

    @classmethod
    def from_domain(cls, e: m.Entity) -> Concept:
        return cls(**_entity_kwargs(e))


@strawberry.type(description="A place where saved events happened.")
class Location(Entity):
    @strawberry.field(description="Events that occurred here, by id.")
    async def events(
        self,
        info: Info,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[Event]:
        paging = (first, after, last, before)
        return await _plain(info, str(self.id), "events", "OCCURRED_AT", "in", paging)

    @classmethod
    def from_domain(cls, e: m.Entity) -> Location:
        return cls(**_entity_kwargs(e))


def from_node(n: m.Node) -> Any:
    """The GraphQL object for a domain node."""
    if isinstance(n, m.Event):
        return Event.from_domain(n)
    if n.label == "Person":
        return Person.from_domain(n)
    if n.label == "Concept":
        return Concept.from_domain(n)
    return Location.from_domain(n)


async def node_by_id(info: Info, node_id: str) -> Node | None:
    """Any node by id -- a Topic too -- through the request's DataLoader."""
    if node_id.startswith(m.TOPIC_ID_PREFIX):
        from mnemoql.schema.topics import Topic

        found_topic = await info.context.memory.topic(node_id[len(m.TOPIC_ID_PREFIX) :])
        return Topic.from_domain(found_topic) if found_topic is not None else None
    found = await info.context.loaders.node(node_id)
    return from_node(found) if found is not None else None
