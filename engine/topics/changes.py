"""What changed in a store's topic and date data since a mark (issue 30, "Other writers cost
what they write").

A process keeps its topic and date index in memory (``engine.recall``). When another process
commits to the same memory, the index follows it by these rows only, instead of reading every
topic, binding and event again (8 s at 100k events, after each of the other's commits).

:class:`TopicMark` names a state of the store: its change clock (moved by every binding written
or removed), its highest node seq and its highest topic seq. A store that can tell what
changed since a mark answers with :class:`TopicChanges`, read in one snapshot; applying them in
order (removals, topics, bindings, dated events) to an index that held the mark's state gives
the state of the new mark. Re-applying a change the index already holds changes nothing (a
binding's upsert, a date's add-if-absent, a removal of what is gone), so a mark may lag behind
the index, never run ahead of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mnemoql.engine.models import Binding, Topic


@dataclass(frozen=True, slots=True)
class TopicMark:
    """A state of the store's topic and date data: the change clock, the highest node seq and
    the highest topic seq."""

    clock: int
    seq: int
    topic_seq: int


@dataclass(frozen=True, slots=True)
class Removed:
    """A binding removed (``path`` set) or an event deleted (``path`` None, with its day)."""

    event_id: str
    path: str | None
    day: str | None = None


@dataclass(slots=True)
class TopicChanges:
    """Everything the index lacks between two marks, each list in the order it happened."""

    mark: TopicMark
    removed: list[Removed] = field(default_factory=list)
    topics: list[Topic] = field(default_factory=list)
    bindings: list[Binding] = field(default_factory=list)
    dated: list[tuple[str, str]] = field(default_factory=list)  # (event id, create_date)

    @property
    def rows(self) -> int:
        return len(self.removed) + len(self.topics) + len(self.bindings) + len(self.dated)
