"""Associative recall: Partner's topic and date indexes (SPEC §2) over the store's graph data.

A memory's *slice* is one saved event: ``SliceRef(unit_id=<space>, slice_id=<event id>)``, its
timestamp the save's ``create_time`` in ms and its day the save's ``create_date`` (in the
configured time zone). The store holds the truth -- Topic nodes, SUBTOPIC links and BINDS
relationships written in the save's own transaction -- and :class:`Recall` keeps Partner's
in-memory ``TopicRecall`` built from it:

- loaded from ``Store.topic_rows`` / ``Store.event_dates`` on first use, under the save lock,
  so no save can slip between the read and the index;
- updated by the save pipeline after each committed save (still under the lock);
- dropped after ``forget`` and reloaded on next use (bindings of deleted events are gone).

Lookups follow Partner exactly (``engine.topics``): scores of SPEC §2.5, the limits of §2.4,
dates unscored in insertion order, and a missing topic or date is an empty result with a
``missing`` note rather than an error. Events that no longer exist are skipped (§2.7).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime

from mnemoql.engine.models import Binding, Event, SavePlan, SaveResult, Topic, TopicDraft, epoch_ms
from mnemoql.engine.store.base import Store
from mnemoql.engine.topics import (
    ActivationProfile,
    LookupMiss,
    ScoredCandidate,
    SliceRef,
    TopicNode,
    TopicRecall,
    parse_date,
)

log = logging.getLogger(__name__)

Now = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class RecalledMemory:
    """One recalled event and why: its source (PRIMARY / PARENT / RELATED / DATE / ENTITY),
    its topic score (None for date and entity recall), its binding time and topic path."""

    event: Event
    source: str
    score: float | None
    timestamp_ms: int
    topic_path: str | None


@dataclass(frozen=True, slots=True)
class Recollection:
    memories: list[RecalledMemory]
    missing: LookupMiss | None = None


@dataclass(frozen=True, slots=True)
class TopicTree:
    """The forest: Partner's text form (``getTopicTree``), the roots, and every node depth
    first in insertion order."""

    text: str
    roots: list[TopicNode]
    nodes: list[TopicNode]


class TopicContext:
    """What a save needs of the tree: the known paths, and the text for the model (built only
    when asked for)."""

    def __init__(self, index: TopicRecall) -> None:
        self._index = index
        self.paths = index.topics.paths()

    @property
    def tree_text(self) -> str:
        return self._index.topic_tree_text()


class Recall:
    """The topic and date index of one memory space.

    Args:
        store: the space's store.
        lock: the space's save lock (shared with the save pipeline and ``forget``).
        now: the clock recall scores against (tz-aware).
    """

    def __init__(self, store: Store, lock: asyncio.Lock, *, now: Now) -> None:
        self.store = store
        self.lock = lock
        self.now = now
        self._index: TopicRecall | None = None
        self._bound: dict[str, str] = {}  # event id -> the topic path it was last bound to

    # ---- lifecycle ----

    async def index(self) -> TopicRecall:
        """The loaded index (loading it under the save lock on first use)."""
        if self._index is None:
            async with self.lock:
                if self._index is None:
                    self._index = await self._load()
        return self._index

    def invalidate(self) -> None:
        """Forget the in-memory index; the next use reloads it from the store."""
        self._index = None
        self._bound = {}

    async def _load(self) -> TopicRecall:
        topics, bindings = await self.store.topic_rows()
        dates = await self.store.event_dates()
        # a million events make a million references: built in a thread, so the event loop
        # keeps answering meanwhile (on the loop it answered nothing for ~1 s at 1M events)
        index, self._bound = await asyncio.to_thread(self._build, topics, bindings, dates)
        return index

    def _build(
        self, topics: Sequence[Topic], bindings: Sequence[Binding], dates: Sequence[tuple[str, str]]
    ) -> tuple[TopicRecall, dict[str, str]]:
        index = TopicRecall()
        for topic in topics:
            index.topics.ensure(topic.path)
        bound: dict[str, str] = {}
        for b in bindings:
            profile = ActivationProfile(b.activation, b.diffusion, b.context_independence)
            index.topics.record_binding(b.path, self._ref(b.event_id), b.timestamp, b.related,
                                        profile)  # fmt: skip
            bound[b.event_id] = b.path
        days: dict[str, date | None] = {}  # each distinct day parsed once
        for event_id, text in dates:
            if text not in days:
                try:
                    days[text] = date.fromisoformat(text)
                except ValueError:
                    days[text] = None
            day = days[text]
            if day is None:
                log.warning("event %s has no usable create_date (%r); not dated", event_id, text)
                continue
            index.dates.record(self._ref(event_id), day)
        return index, bound

    def _ref(self, event_id: str) -> SliceRef:
        return SliceRef(self.store.space, event_id)

    # ---- updates (called under the save lock, after the write committed) ----

    def saved(self, plan: SavePlan, result: SaveResult) -> None:
        """Index what a committed save wrote: every event by day, and bound to its topic."""
        index = self._index
        if index is None or result.replayed:
            return  # not loaded yet: the next load reads it from the store
        day = date.fromisoformat(plan.create_date)
        for event_id in result.event_ids:
            index.dates.record(self._ref(event_id), day)
        if plan.topic is not None:
            self.bound(plan.topic, result.event_ids, epoch_ms(plan.create_time))

    def bound(self, draft: TopicDraft, event_ids: Sequence[str], timestamp: int) -> None:
        """Index committed bindings of ``event_ids`` to ``draft``'s topic."""
        index = self._index
        if index is None:
            return
        profile = ActivationProfile(draft.activation, draft.diffusion, draft.context_independence)
        for event_id in event_ids:
            index.topics.record_binding(
                draft.path, self._ref(event_id), timestamp, draft.related, profile
            )
            self._bound[event_id] = draft.path
        index.topics.ensure_topic_paths(draft.related)

    # ---- reads ----

    async def context(self) -> TopicContext:
        return TopicContext(await self.index())

    async def tree(self) -> TopicTree:
        index = await self.index()
        nodes = list(index.topics.walk())
        return TopicTree(index.topic_tree_text(), [n for n in nodes if n.is_root], nodes)

    async def topic(self, path: str) -> TopicNode | None:
        """The node at exactly ``path`` (not fixed), or None."""
        return (await self.index()).topics.find(path)

    def topic_of(self, event_id: str) -> str | None:
        """The topic path ``event_id`` was last bound to, as of the loaded index."""
        return self._bound.get(event_id)

    def now_ms(self) -> int:
        return int(self.now().timestamp() * 1000)

    async def by_topic(self, path: str) -> Recollection:
        """Recall by topic path (SPEC §2.4, §2.5): at most 5, best first."""
        index = await self.index()
        lookup = index.query_topic(path, self.now_ms())
        return Recollection(await self.materialise(lookup.candidates), lookup.missing)

    async def by_date(self, day: str | date) -> Recollection:
        """Every memory saved on ``day`` (yyyy-MM-dd; InvalidInput otherwise), in save order."""
        when = parse_date(day) if isinstance(day, str) else day
        index = await self.index()
        lookup = index.query_date(when)
        events = await self.store.get_events([r.slice_id for r in lookup.refs])
        memories = [
            RecalledMemory(e, "DATE", None, epoch_ms(e.create_time), self._bound.get(e.id))
            for e in events
        ]
        return Recollection(memories, lookup.missing)

    async def materialise(self, candidates: Sequence[ScoredCandidate]) -> list[RecalledMemory]:
        """The candidates' events in order; candidates whose event is gone are skipped."""
        found = await self.store.get_events([c.ref.slice_id for c in candidates])
        events = {e.id: e for e in found}
        return [
            RecalledMemory(
                events[c.ref.slice_id], c.source.value, c.score, c.timestamp_ms, c.topic_path
            )
            for c in candidates
            if c.ref.slice_id in events
        ]
