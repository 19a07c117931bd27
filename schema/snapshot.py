"""Graph views: the explorer's snapshot (``graph``, ``neighbourhood``) and the live feed of
changes (``memoryChanges``).

These are plain records for drawing, not Relay nodes: a node is named by ``nodeId`` and a
relationship by ``relationshipId``, never by an ``id`` field, so a normalising client cache
(Relay, Apollo) never merges them into the ``Node`` records of the same ids. ``node`` gives
the Node itself.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, cast

import strawberry
from strawberry.scalars import JSON

from mnemoql.engine import changes as ch
from mnemoql.engine import models as m
from mnemoql.schema.context import Info
from mnemoql.schema.graph import Node, node_by_id

# relations of the saved events a change lists (a save extracts a few dozen at most)
CHANGE_RELATIONS = 1000


def _json(value: dict[str, Any]) -> JSON:
    """A plain dict as the JSON scalar (the scalar is a NewType for type checkers)."""
    return cast(JSON, value)


@strawberry.type(description="A node as a graph view draws it.")
class GraphNode:
    node_id: strawberry.ID = strawberry.field(description="The node's id (see node).")
    label: str = strawberry.field(description="Event, Person, Concept, Location or Topic.")
    name: str = strawberry.field(description="Display text: the name, or an event's summary.")
    properties: JSON = strawberry.field(description="Every property except vectors.")

    @strawberry.field(description="The node itself.")
    async def node(self, info: Info) -> Node | None:
        return await node_by_id(info, str(self.node_id))

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
                node_id=strawberry.ID(n.id), label="Event", name=n.summary, properties=_json(props)
            )
        props = {
            "name": n.name,
            "aliases": list(n.aliases),
            "description": n.description,
            "create_time": n.create_time,
        }
        return cls(
            node_id=strawberry.ID(n.id), label=n.label, name=n.name, properties=_json(props)
        )

    @classmethod
    def from_topic(cls, t: m.Topic) -> GraphNode:
        props: dict[str, Any] = {"path": t.path, "name": t.name, "parent": t.parent}
        return cls(
            node_id=strawberry.ID(t.id), label=m.TOPIC_LABEL, name=t.name, properties=_json(props)
        )


@strawberry.type(description="A relationship as a graph view draws it.")
class GraphRelationship:
    relationship_id: strawberry.ID = strawberry.field(
        description="source-TYPE-target (HAS_ATTITUDE adds @eventId): stable, unique per graph."
    )
    type: str = strawberry.field(
        description="PARTICIPATED_IN, OCCURRED_AT, MENTIONS, HAS_ATTITUDE, SUBTOPIC or BINDS."
    )
    source: strawberry.ID = strawberry.field(description="The node it starts from.")
    target: strawberry.ID = strawberry.field(description="The node it points to.")
    properties: JSON = strawberry.field(description="Its properties (role, attitude, eventId).")

    @classmethod
    def from_domain(cls, r: m.Relation) -> GraphRelationship:
        rid = f"{r.source}-{r.type}-{r.target}"
        if r.type == "HAS_ATTITUDE":
            rid += f"@{r.properties.get('event_id', '')}"
        return cls(
            relationship_id=strawberry.ID(rid),
            type=r.type,
            source=strawberry.ID(r.source),
            target=strawberry.ID(r.target),
            properties=_json(r.properties),
        )


@strawberry.type(description="A read-only picture of (part of) the graph, for drawing.")
class GraphSnapshot:
    nodes: list[GraphNode] = strawberry.field(description="Nodes by label, then id.")
    relationships: list[GraphRelationship] = strawberry.field(
        description="Relationships between the returned nodes only."
    )
    truncated_nodes: bool = strawberry.field(description="More nodes exist than were returned.")
    truncated_relationships: bool = strawberry.field(
        description="More relationships exist than were returned."
    )

    @classmethod
    def from_domain(cls, g: m.GraphSnapshot) -> GraphSnapshot:
        return cls(
            nodes=[GraphNode.from_domain(n) for n in g.nodes]
            + [GraphNode.from_topic(t) for t in g.topics],
            relationships=[GraphRelationship.from_domain(r) for r in g.relations],
            truncated_nodes=g.truncated_nodes,
            truncated_relationships=g.truncated_relations,
        )


# ---- the live feed ----


@strawberry.enum(description="What kind of change a MemoryChange reports.")
class MemoryChangeKind(Enum):
    READY = strawberry.enum_value(
        "READY", description="First message: the feed is live; load a snapshot now."
    )
    SAVED = strawberry.enum_value("SAVED", description="Events saved, with entities created.")
    MERGED = strawberry.enum_value(
        "MERGED", description="Existing entities a save merged into (aliases, relations)."
    )
    FORGOTTEN = strawberry.enum_value("FORGOTTEN", description="Nodes deleted by a forget.")
    REVECTORIZED = strawberry.enum_value(
        "REVECTORIZED", description="Every vector was replaced; the graph is unchanged."
    )
    RESYNC = strawberry.enum_value(
        "RESYNC", description="Changes were missed (a slow reader, a restore): reload."
    )


@strawberry.type(description="One committed change of this memory space (memoryChanges).")
class MemoryChange:
    sequence: int = strawberry.field(description="Numbers the changes of this space in order.")
    kind: MemoryChangeKind = strawberry.field(description="What happened.")
    event_ids: list[strawberry.ID] = strawberry.field(description="Events saved (SAVED).")
    node_ids: list[strawberry.ID] = strawberry.field(
        description="Entities created (SAVED) or updated (MERGED)."
    )
    deleted_ids: list[strawberry.ID] = strawberry.field(
        description="Ids that no longer exist (FORGOTTEN)."
    )

    @strawberry.field(
        description="The saved events and the created or updated entities, as they are now."
    )
    async def nodes(self, info: Info) -> list[GraphNode]:
        # the store directly, not the connection's DataLoader: it would cache across changes
        ids = [str(i) for i in [*self.event_ids, *self.node_ids]]
        found = await info.context.memory.nodes(ids)
        return [GraphNode.from_domain(n) for n in found if n is not None]

    @strawberry.field(
        description="Every relationship the saved events brought: theirs, and the attitudes "
        "extracted from them."
    )
    async def relationships(self, info: Info) -> list[GraphRelationship]:
        if not self.event_ids:
            return []
        memory, events = info.context.memory, {str(i) for i in self.event_ids}
        rows = await memory.neighbours(sorted(events), None, "both", CHANGE_RELATIONS)
        rels = [r.rel for found in rows.values() for r in found]
        holders = sorted(
            {r.other_id for found in rows.values() for r in found} | {str(i) for i in self.node_ids}
        )
        attitudes = await memory.neighbours(holders, "HAS_ATTITUDE", "out", CHANGE_RELATIONS)
        rels += [
            r.rel
            for found in attitudes.values()
            for r in found
            if r.rel.properties.get("event_id") in events
        ]
        unique = {GraphRelationship.from_domain(r).relationship_id: r for r in rels}
        return [GraphRelationship.from_domain(r) for r in unique.values()]

    @classmethod
    def from_domain(cls, c: ch.Change) -> MemoryChange:
        return cls(
            sequence=c.sequence,
            kind=MemoryChangeKind(c.kind),
            event_ids=[strawberry.ID(i) for i in c.event_ids],
            node_ids=[strawberry.ID(i) for i in c.node_ids],
            deleted_ids=[strawberry.ID(i) for i in c.deleted_ids],
        )
