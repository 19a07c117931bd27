"""Domain records shared by the engine and the stores. They carry no persistence.

Store-facing records are slotted dataclasses (they are built by the hundred thousand on the
hot paths); what callers send in (save input, extractions) are pydantic models in
``engine.ingest`` and ``prompts``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from mnemoql.engine.errors import InvalidInput

Vector = npt.NDArray[np.float32]

EntityLabel = Literal["Person", "Concept", "Location"]
NodeLabel = Literal["Event", "Person", "Concept", "Location"]
RelType = Literal["PARTICIPATED_IN", "OCCURRED_AT", "MENTIONS", "HAS_ATTITUDE"]

NODE_LABELS: tuple[NodeLabel, ...] = ("Event", "Person", "Concept", "Location")
ENTITY_LABELS: tuple[EntityLabel, ...] = ("Person", "Concept", "Location")
REL_TYPES: tuple[RelType, ...] = ("PARTICIPATED_IN", "OCCURRED_AT", "MENTIONS", "HAS_ATTITUDE")
ID_PREFIX: dict[NodeLabel, str] = {
    "Event": "event",
    "Person": "person",
    "Concept": "concept",
    "Location": "location",
}
# Partner's topic memory as graph data (SPEC §2): Topic nodes, (:Topic)-[:SUBTOPIC]->(:Topic)
# parent links and (:Topic)-[:BINDS]->(:Event) bindings carrying the activation profile. They
# are not among NODE_LABELS / REL_TYPES: entity queries, neighbours and counts never see them.
TOPIC_LABEL: Final = "Topic"
TOPIC_ID_PREFIX: Final = "topic:"
TOPIC_SEPARATOR: Final = "->"
TopicRelType = Literal["SUBTOPIC", "BINDS"]
TOPIC_REL_TYPES: tuple[TopicRelType, ...] = ("SUBTOPIC", "BINDS")

# Relations that make an Event adjacent to an entity for entity_filter (SPEC §1.4).
ADJACENCY: tuple[RelType, ...] = ("PARTICIPATED_IN", "OCCURRED_AT", "MENTIONS")

# Positional ids from imports, e.g. event_ch33_e06 or book_ch3_e12 (SPEC §1.6 nearby).
POSITIONAL_ID = re.compile(r"^(?P<prefix>.+)_ch(?P<ch>\d+)_e(?P<rec>\d+)$")
# What a caller may choose as an event id: positional ids, or any other safe slug. Never one
# that names another node: the allocator's own label_N ids are refused where ids are checked
# (``label_of``), and ``topic:`` (any case) names Topic nodes, so it may not start one.
CALLER_ID = re.compile(r"^(?![Tt][Oo][Pp][Ii][Cc]:)[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


def label_of(node_id: str) -> NodeLabel | None:
    """The label an allocated id belongs to (``concept_3`` -> Concept), or None."""
    for label, prefix in ID_PREFIX.items():
        if node_id.startswith(prefix + "_") and node_id[len(prefix) + 1 :].isdigit():
            return label
    return None


@dataclass(slots=True)
class MemoryMeta:
    model: str
    dimensions: int
    updated_at: str
    schema_version: int = 1
    # The memory holds events but none of their vectors: it was restored from a dump without
    # them and not re-embedded yet. Semantic search would find nothing, so it counts as a
    # mismatch until ``revectorize`` (which clears it). Not part of a dump: it is derived.
    stale: bool = False


@dataclass(slots=True)
class Chunk:
    """An EventSource: an exact ``[start, end)`` code-point range of an event's content."""

    event_id: str
    chunk_index: int
    start: int
    end: int
    text: str
    text_hash: str
    embedding: Vector | None = None

    @property
    def id(self) -> str:
        return f"{self.event_id}#{self.chunk_index}"


@dataclass(slots=True)
class Event:
    id: str
    summary: str
    content: str
    time: str | None
    create_time: str
    create_date: str
    content_hash: str
    embedding: Vector | None = None
    # Events written before chunks existed (or imported without them) are "legacy".
    has_chunks: bool = True


@dataclass(slots=True)
class Entity:
    label: EntityLabel
    id: str
    name: str
    aliases: list[str] = field(default_factory=list)
    description: str | None = None
    create_time: str = ""
    embedding: Vector | None = None


Node = Event | Entity


@dataclass(slots=True, frozen=True)
class Relation:
    type: RelType | TopicRelType  # topic types only in graph snapshots that ask for topics
    source: str
    target: str
    props: tuple[tuple[str, Any], ...] = ()

    @property
    def properties(self) -> dict[str, Any]:
        return dict(self.props)


# ---- reads ----


@dataclass(slots=True, frozen=True)
class Filters:
    """Event filters applied before any top-k cut (SPEC §1.4)."""

    groups: tuple[frozenset[str], ...] = ()  # AND across groups, OR inside one group
    date_from: str | None = None  # inclusive YYYY-MM-DD on create_date
    date_to: str | None = None


@dataclass(slots=True, frozen=True)
class Hit:
    """One candidate of a retrieval route. For the chunk route ``chunk`` is the best chunk."""

    event_id: str
    score: float  # raw cosine
    chunk_index: int | None = None
    start: int | None = None
    end: int | None = None


@dataclass(slots=True, frozen=True)
class RoutePool:
    """The retrieval routes at once (summary, chunk and, when asked for, lexical), with what
    ranking needs of every event they found: the event (with its summary vector) and the text
    hashes of its chunks (MMR's overlap term)."""

    summary: list[Hit]
    chunk: list[Hit]
    events: dict[str, Event]
    chunk_hashes: dict[str, frozenset[str]]
    # (concept id, name) of each event's MENTIONS by concept id, when the store read them on
    # the way (both stores do); None leaves them to the delivery step.
    concepts: dict[str, tuple[tuple[str, str], ...]] | None = None
    # BM25 over chunk texts and summaries (``Store.lexical_route``); empty when not asked for.
    lexical: list[Hit] = field(default_factory=list)


# A tiny filter language for root connections, in the style of the Neo4j GraphQL Library.
WhereOp = Literal["eq", "in", "contains", "starts_with", "gt", "gte", "lt", "lte"]


@dataclass(slots=True, frozen=True)
class Cond:
    field: str
    op: WhereOp
    value: Any


@dataclass(slots=True, frozen=True)
class AllOf:
    items: tuple[Where, ...]


@dataclass(slots=True, frozen=True)
class AnyOf:
    items: tuple[Where, ...]


@dataclass(slots=True, frozen=True)
class Not:
    item: Where


Where = Cond | AllOf | AnyOf | Not

# Fields a `where`/`sort` may name, per label. Stores must reject anything else (allow-list).
QUERYABLE_FIELDS: dict[NodeLabel, tuple[str, ...]] = {
    "Event": ("id", "summary", "content", "time", "create_time", "create_date"),
    "Person": ("id", "name", "description", "create_time"),
    "Concept": ("id", "name", "description", "create_time"),
    "Location": ("id", "name", "description", "create_time"),
}


@dataclass(slots=True, frozen=True)
class Page:
    """A keyset page, forward or backward (Relay's first/after and last/before).

    Forward: the ``first`` rows after position ``after``. Backward (``last`` set): the ``last``
    rows just before position ``before``, still returned in sort order. A position is the
    ``(sort value, id)`` of a row already seen.
    """

    first: int
    after: tuple[Any, str] | None = None  # (sort value, id)
    last: int | None = None
    before: tuple[Any, str] | None = None

    @property
    def backward(self) -> bool:
        return self.last is not None

    @property
    def size(self) -> int:
        return self.last if self.last is not None else self.first

    @property
    def position(self) -> tuple[Any, str] | None:
        """The keyset position the page starts from, in its direction of travel."""
        return self.before if self.backward else self.after

    def check(self) -> None:
        """What every store checks before paging (raises ``InvalidInput``)."""
        for name, size in (("first", self.first), ("last", self.last)):
            if size is not None and (not isinstance(size, int) or size < 0):
                raise InvalidInput(
                    f"{name} must be a non-negative integer (got {size!r})",
                    zh=f"{name} 须为非负整数（收到 {size!r}）",
                )
        for name, at in (("after", self.after), ("before", self.before)):
            if at is not None and not (
                isinstance(at, tuple) and len(at) == 2 and all(isinstance(x, str) for x in at)
            ):
                raise InvalidInput(
                    f"{name} must be a (sort value, id) pair of strings",
                    zh=f"{name} 须为由字符串组成的（排序值, id）对",
                )
        if (self.backward and self.after is not None) or (
            not self.backward and self.before is not None
        ):
            raise InvalidInput(
                "after goes with first, before with last",
                zh="after 与 first 搭配，before 与 last 搭配",
            )


@dataclass(slots=True)
class NodePage:
    """One page in sort order. ``has_next`` / ``has_previous``: more rows exist past the last /
    before the first row, as far as the store looked: in the direction of travel only (the
    other flag is False)."""

    nodes: list[Node]
    has_next: bool
    positions: list[tuple[Any, str]]  # keyset position of each node, for edge cursors
    total: int | None = None
    has_previous: bool = False


@dataclass(slots=True)
class Neighbour:
    """One relationship seen from ``node_id``: the other end and the edge's properties."""

    node_id: str
    rel: Relation
    other_id: str
    direction: Literal["out", "in"]


@dataclass(slots=True)
class GraphSnapshot:
    nodes: list[Node]
    relations: list[Relation]
    truncated_nodes: bool
    truncated_relations: bool
    topics: list[Topic] = field(default_factory=list)  # after ``nodes``, within the same cap


# ---- topics (SPEC §2) ----


def topic_id(path: str) -> str:
    """The node id of a topic path: ``topic:a->b``."""
    return TOPIC_ID_PREFIX + path


def lineage(path: str) -> list[str]:
    """``a``, ``a->b``, ``a->b->c`` for ``a->b->c`` (a fixed path: no empty segments)."""
    parts = path.split(TOPIC_SEPARATOR)
    return [TOPIC_SEPARATOR.join(parts[: i + 1]) for i in range(len(parts))]


def epoch_ms(iso: str) -> int:
    """Milliseconds since the epoch of an ISO-8601 instant with an offset (a create_time)."""
    return int(datetime.fromisoformat(iso).timestamp() * 1000)


@dataclass(slots=True, frozen=True)
class Topic:
    """A node of the topic tree. ``parent`` is the parent's path (None for a root); ``seq``
    orders nodes by creation, which is the tree's sibling order."""

    path: str
    name: str
    parent: str | None
    seq: int

    @property
    def id(self) -> str:
        return topic_id(self.path)

    def subtopic_relation(self) -> Relation | None:
        """``(parent)-[:SUBTOPIC]->(this)``; None for a root."""
        if self.parent is None:
            return None
        return Relation("SUBTOPIC", topic_id(self.parent), self.id)


@dataclass(slots=True, frozen=True)
class Binding:
    """A BINDS relationship: the event bound to a topic, with the save's time and profile."""

    path: str
    event_id: str
    timestamp: int  # ms since the epoch
    activation: float
    diffusion: float
    context_independence: float
    related: tuple[str, ...]

    def properties(self) -> dict[str, Any]:
        return {
            "timestamp": self.timestamp,
            "activation_weight": self.activation,
            "diffusion_weight": self.diffusion,
            "context_independence_weight": self.context_independence,
            "related_paths": list(self.related),
        }

    def relation(self) -> Relation:
        return Relation(
            "BINDS", topic_id(self.path), self.event_id, tuple(sorted(self.properties().items()))
        )


@dataclass(slots=True)
class Counts:
    events: int = 0
    persons: int = 0
    concepts: int = 0
    locations: int = 0
    chunks: int = 0
    relations: int = 0


@dataclass(slots=True)
class VectorSet:
    """Every vector of a memory, for revectorize's swap (computed fully before writing)."""

    events: dict[str, Vector]
    entities: dict[str, Vector]
    chunks: list[Chunk]
    meta: MemoryMeta


EMPTY_FILTERS = Filters()
RouteName = Literal["summary", "chunk"]  # the vector routes; lexical has its own call
SortDir = Literal["ASC", "DESC"]
SortSpec = tuple[str, SortDir]
Direction = Literal["out", "in", "both"]
