"""Save plans: what the ingest pipeline (``engine.ingest``, its steps in ``engine.save_plan``)
hands to a store to write in one transaction, and what the store answers. Drafts are records
not written yet: the store allocates their ids and resolves their refs, and writes a plan
whole or not at all. The records a store reads back are ``engine.models``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.models import (
    TOPIC_SEPARATOR,
    Chunk,
    EntityLabel,
    MemoryMeta,
    RelType,
    Vector,
    lineage,
)


@dataclass(slots=True)
class EventDraft:
    ref: str
    summary: str
    content: str
    time: str | None
    content_hash: str
    embedding: Vector | None
    chunks: list[Chunk]  # event_id is filled in by the store once the id is allocated
    given_id: str | None = None  # a caller id such as book_ch3_e12


@dataclass(slots=True)
class EntityDraft:
    ref: str
    label: EntityLabel
    name: str
    aliases: list[str]
    description: str | None
    embedding: Vector | None
    merge_into: str | None = None  # existing id: add aliases instead of creating


@dataclass(slots=True)
class RelationDraft:
    type: RelType
    source: str  # a draft ref or an existing node id
    target: str
    props: dict[str, Any] = field(default_factory=dict)
    # HAS_ATTITUDE carries the id of the event it was stated in; when that event is new in this
    # plan, the store sets props["event_id"] to the id it allocates for this draft ref.
    event_ref: str | None = None


@dataclass(slots=True, frozen=True)
class TopicDraft:
    """The topic binding of one save: every event it creates is bound to ``path``.

    ``path`` and ``related`` are already fixed (``engine.topics.fix_topic_path``) and the
    weights normalised to float32 in [0, 1]; the store writes them as given.
    """

    path: str
    related: list[str]
    activation: float
    diffusion: float
    context_independence: float

    def node_paths(self) -> list[str]:
        """Topic nodes the binding needs, in creation order: the path's lineage from its root,
        then each related path's."""
        return list(dict.fromkeys(p for q in (self.path, *self.related) for p in lineage(q)))

    def check(self) -> None:
        """What every store refuses to write: a blank path or segment, a weight outside [0, 1]."""
        for path in (self.path, *self.related):
            if not isinstance(path, str) or not path or "" in path.split(TOPIC_SEPARATOR):
                raise InvalidInput(
                    f"topic path {path!r} is blank or has an empty segment",
                    zh=f"话题路径 {path!r} 为空或含空段",
                )
        for name, w in (
            ("activation", self.activation),
            ("diffusion", self.diffusion),
            ("context_independence", self.context_independence),
        ):
            if not isinstance(w, float | int) or not math.isfinite(w) or not 0.0 <= w <= 1.0:
                raise InvalidInput(
                    f"topic {name} weight {w!r} is not in [0, 1]",
                    zh=f"话题的 {name} 权重 {w!r} 不在 [0, 1] 内",
                )


@dataclass(slots=True)
class SavePlan:
    events: list[EventDraft]
    entities: list[EntityDraft]
    relations: list[RelationDraft]
    create_time: str
    create_date: str
    meta: MemoryMeta
    idempotency_key: str | None = None
    topic: TopicDraft | None = None  # None: the save is only in the date index


@dataclass(slots=True)
class SaveResult:
    event_ids: list[str]
    created: dict[str, list[str]]  # label -> new ids, e.g. {"Person": ["person_4"]}
    merged: list[tuple[str, list[str]]]  # (existing id, aliases added)
    refs: dict[str, str]  # extraction ref -> id
    replayed: bool = False  # an idempotent replay: nothing new was written
