"""The memory graph as GraphQL types: Event, Person, Concept, Location implement Node.

Relations are connection fields whose edges carry the relationship properties (``role`` on
PARTICIPATED_IN, ``attitude`` and ``eventId`` on HAS_ATTITUDE). Nested fields go through the
request's DataLoaders, so a page of events with their people costs a few store calls, not one
per event.
"""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any, Generic, TypeVar, cast

import strawberry
from strawberry.scalars import JSON

from engine import models as m
from engine.memory import READ_DEFAULT
from engine.memory import TextRange as TextRangeDomain
from schema.context import Info

T = TypeVar("T")
DEFAULT_FIRST = 20


def encode_cursor(position: tuple[Any, str] | str) -> str:
    raw = json.dumps(position, ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> Any:
    """Inverse of ``encode_cursor``; raises ValueError on garbage."""
    pad = "=" * (-len(cursor) % 4)
    return json.loads(base64.urlsafe_b64decode(cursor + pad).decode())


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None


@strawberry.type
class TextRange:
    """An exact ``[start, end)`` code-point range of an event's original text."""

    event_id: strawberry.ID
    text: str
    start: int
    end: int
    total: int
    next: int | None = strawberry.field(description="Offset to continue reading from, if any.")

    @classmethod
    def from_domain(cls, r: TextRangeDomain) -> TextRange:
        return cls(
            event_id=strawberry.ID(r.event_id),
            text=r.text,
            start=r.start,
            end=r.end,
            total=r.total,
            next=r.next,
        )


@strawberry.type
class SourceRange:
    """An EventSource chunk: where a slice of the original text starts and ends."""

    index: int
    start: int
    end: int


@strawberry.interface
class Node:
    id: strawberry.ID


@strawberry.type
class Edge(Generic[T]):
    cursor: str
    node: T


@strawberry.type
class Connection(Generic[T]):
    edges: list[Edge[T]]
    page_info: PageInfo
    total_count: int | None = None


async def _relation_page(
    info: Info,
    node_id: str,
    rel_type: m.RelType,
    direction: m.Direction,
    first: int,
    after: str | None,
) -> tuple[list[tuple[m.Neighbour, m.Node]], PageInfo]:
    limit = info.context.memory.settings.limits.max_page_size
    if not 0 <= first <= limit:
        from engine.errors import out_of_range

        raise out_of_range("first", 0, limit, first)
    after_id = None
    if after is not None:
        try:
            after_id = str(decode_cursor(after))
        except ValueError as exc:
            from engine.errors import InvalidInput

            raise InvalidInput("after is not a cursor this API issued", argument="after") from exc
    rows = await info.context.loaders.neighbours(node_id, rel_type, direction, first + 1, after_id)
    nodes = [await info.context.loaders.node(r.other_id) for r in rows[:first]]
    pairs = [(r, n) for r, n in zip(rows[:first], nodes, strict=True) if n is not None]
    end = encode_cursor(pairs[-1][0].other_id) if pairs else None
    return pairs, PageInfo(has_next_page=len(rows) > first, end_cursor=end)


@strawberry.type
class ParticipantEdge:
    cursor: str
    node: Person
    role: str | None


@strawberry.type
class ParticipantConnection:
    edges: list[ParticipantEdge]
    page_info: PageInfo


@strawberry.type
class ParticipationEdge:
    cursor: str
    node: Event
    role: str | None


@strawberry.type
class ParticipationConnection:
    edges: list[ParticipationEdge]
    page_info: PageInfo


@strawberry.type
class AttitudeEdge:
    cursor: str
    node: Node
    attitude: str
    event_id: strawberry.ID | None


@strawberry.type
class AttitudeConnection:
    edges: list[AttitudeEdge]
    page_info: PageInfo


async def _plain(
    info: Info, node_id: str, rel: m.RelType, direction: m.Direction, first: int, after: str | None
) -> Connection[Any]:
    pairs, page = await _relation_page(info, node_id, rel, direction, first, after)
    return Connection(
        edges=[Edge(cursor=encode_cursor(r.other_id), node=from_node(n)) for r, n in pairs],
        page_info=page,
    )


async def _attitudes(
    info: Info, node_id: str, direction: m.Direction, first: int, after: str | None
) -> AttitudeConnection:
    pairs, page = await _relation_page(info, node_id, "HAS_ATTITUDE", direction, first, after)
    edges = []
    for r, n in pairs:
        props = r.rel.properties
        event_id = props.get("event_id")
        edges.append(
            AttitudeEdge(
                cursor=encode_cursor(r.other_id),
                node=from_node(n),
                attitude=str(props.get("attitude", "")),
                event_id=strawberry.ID(event_id) if event_id else None,
            )
        )
    return AttitudeConnection(edges=edges, page_info=page)


First = Annotated[int, strawberry.argument(description="Page size (0..max page size).")]


@strawberry.type
class Event(Node):
    """Something that happened, as extracted from one saved text."""

    id: strawberry.ID
    summary: str
    time: str | None = strawberry.field(description="Occurrence time as written in the text.")
    create_time: str = strawberry.field(description="When it was saved (ISO-8601).")
    create_date: str
    content_hash: str
    length: int = strawberry.field(description="Length of the original text in code points.")
    legacy: bool = strawberry.field(description="True when the event has no source chunks yet.")

    @strawberry.field(description="An exact code-point range of the original text.")
    async def content(self, info: Info, start: int = 0, limit: int = READ_DEFAULT) -> TextRange:
        return TextRange.from_domain(await info.context.memory.read(str(self.id), start, limit))

    @strawberry.field(description="The source chunks (800/120 code points) of the original text.")
    async def chunks(self, info: Info) -> list[SourceRange]:
        rows = await info.context.loaders.chunks(str(self.id))
        return [SourceRange(index=c.chunk_index, start=c.start, end=c.end) for c in rows]

    @strawberry.field
    async def participants(
        self, info: Info, first: First = DEFAULT_FIRST, after: str | None = None
    ) -> ParticipantConnection:
        pairs, page = await _relation_page(
            info, str(self.id), "PARTICIPATED_IN", "in", first, after
        )
        return ParticipantConnection(
            edges=[
                ParticipantEdge(
                    cursor=encode_cursor(r.other_id),
                    node=Person.from_domain(n),  # type: ignore[arg-type]
                    role=r.rel.properties.get("role"),
                )
                for r, n in pairs
            ],
            page_info=page,
        )

    @strawberry.field
    async def locations(
        self, info: Info, first: First = DEFAULT_FIRST, after: str | None = None
    ) -> Connection[Location]:
        return await _plain(info, str(self.id), "OCCURRED_AT", "out", first, after)

    @strawberry.field
    async def concepts(
        self, info: Info, first: First = DEFAULT_FIRST, after: str | None = None
    ) -> Connection[Concept]:
        return await _plain(info, str(self.id), "MENTIONS", "out", first, after)

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


@strawberry.interface
class Entity(Node):
    id: strawberry.ID
    name: str
    aliases: list[str]
    description: str | None
    create_time: str


def _entity_kwargs(e: m.Entity) -> dict[str, Any]:
    return {
        "id": strawberry.ID(e.id),
        "name": e.name,
        "aliases": list(e.aliases),
        "description": e.description,
        "create_time": e.create_time,
    }


@strawberry.type
class Person(Entity):
    @strawberry.field(description="Events this person took part in (PARTICIPATED_IN, with role).")
    async def events(
        self, info: Info, first: First = DEFAULT_FIRST, after: str | None = None
    ) -> ParticipationConnection:
        pairs, page = await _relation_page(
            info, str(self.id), "PARTICIPATED_IN", "out", first, after
        )
        return ParticipationConnection(
            edges=[
                ParticipationEdge(
                    cursor=encode_cursor(r.other_id),
                    node=Event.from_domain(n),  # type: ignore[arg-type]
                    role=r.rel.properties.get("role"),
                )
                for r, n in pairs
            ],
            page_info=page,
        )

    @strawberry.field(description="This person's attitudes towards concepts or people.")
    async def attitudes(
        self, info: Info, first: First = DEFAULT_FIRST, after: str | None = None
    ) -> AttitudeConnection:
        return await _attitudes(info, str(self.id), "out", first, after)

    @classmethod
    def from_domain(cls, e: m.Entity) -> Person:
        return cls(**_entity_kwargs(e))


@strawberry.type
class Concept(Entity):
    @strawberry.field(description="Events that mention this concept.")
    async def events(
        self, info: Info, first: First = DEFAULT_FIRST, after: str | None = None
    ) -> Connection[Event]:
        return await _plain(info, str(self.id), "MENTIONS", "in", first, after)

    @strawberry.field(description="People's attitudes towards this concept.")
    async def attitudes(
        self, info: Info, first: First = DEFAULT_FIRST, after: str | None = None
    ) -> AttitudeConnection:
        return await _attitudes(info, str(self.id), "in", first, after)

    @classmethod
    def from_domain(cls, e: m.Entity) -> Concept:
        return cls(**_entity_kwargs(e))


@strawberry.type
class Location(Entity):
    @strawberry.field(description="Events that occurred here.")
    async def events(
        self, info: Info, first: First = DEFAULT_FIRST, after: str | None = None
    ) -> Connection[Event]:
        return await _plain(info, str(self.id), "OCCURRED_AT", "in", first, after)

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


# ---- the explorer's snapshot ----


def _json(value: dict[str, Any]) -> JSON:
    """A plain dict as the JSON scalar (the scalar is a NewType for type checkers)."""
    return cast(JSON, value)


@strawberry.type
class GraphNode:
    id: strawberry.ID
    label: str
    name: str = strawberry.field(description="Display text: the name, or an event's summary.")
    properties: JSON = strawberry.field(description="Every property except vectors.")

    @classmethod
    def from_domain(cls, n: m.Node) -> GraphNode:
        if isinstance(n, m.Event):
            props: dict[str, Any] = {
                "summary": n.summary,
                "time": n.time,
                "create_time": n.create_time,
                "create_date": n.create_date,
                "content_hash": n.content_hash,
                "length": len(n.content),
            }
            return cls(
                id=strawberry.ID(n.id), label="Event", name=n.summary, properties=_json(props)
            )
        props = {
            "name": n.name,
            "aliases": list(n.aliases),
            "description": n.description,
            "create_time": n.create_time,
        }
        return cls(id=strawberry.ID(n.id), label=n.label, name=n.name, properties=_json(props))

    @classmethod
    def from_topic(cls, t: m.Topic) -> GraphNode:
        props: dict[str, Any] = {"path": t.path, "name": t.name, "parent": t.parent}
        return cls(
            id=strawberry.ID(t.id), label=m.TOPIC_LABEL, name=t.name, properties=_json(props)
        )


@strawberry.type
class GraphRelationship:
    id: strawberry.ID
    type: str
    source: strawberry.ID
    target: strawberry.ID
    properties: JSON

    @classmethod
    def from_domain(cls, r: m.Relation) -> GraphRelationship:
        rid = f"{r.source}-{r.type}-{r.target}"
        if r.type == "HAS_ATTITUDE":
            rid += f"@{r.properties.get('event_id', '')}"
        return cls(
            id=strawberry.ID(rid),
            type=r.type,
            source=strawberry.ID(r.source),
            target=strawberry.ID(r.target),
            properties=_json(r.properties),
        )


@strawberry.type
class GraphSnapshot:
    nodes: list[GraphNode]
    relationships: list[GraphRelationship]
    truncated_nodes: bool
    truncated_relationships: bool

    @classmethod
    def from_domain(cls, g: m.GraphSnapshot) -> GraphSnapshot:
        return cls(
            nodes=[GraphNode.from_domain(n) for n in g.nodes]
            + [GraphNode.from_topic(t) for t in g.topics],
            relationships=[GraphRelationship.from_domain(r) for r in g.relations],
            truncated_nodes=g.truncated_nodes,
            truncated_relationships=g.truncated_relations,
        )
