"""Associative recall: Partner's topic and date indexes (SPEC §2) over the store's graph data.

A memory's *slice* is one saved event: ``SliceRef(unit_id=<space>, slice_id=<event id>)``, its
timestamp the save's ``create_time`` in ms and its day the save's ``create_date`` (in the
configured time zone). The store holds the truth -- Topic nodes, SUBTOPIC links and BINDS
relationships written in the save's own transaction -- and :class:`Recall` keeps Partner's
in-memory ``TopicRecall`` built from it:

- loaded from ``Store.topic_rows`` / ``Store.event_dates`` on first use, under the save lock,
  so no save can slip between the read and the index;
- updated by the save pipeline after each committed save (still under the lock);
- after another process's commit (``Store.changed_elsewhere``) or a ``forget``, brought up to
  date by the rows that changed (``catch_up``: ``engine.topics.changes``) when the store can
  tell them, else dropped and reloaded on next use.

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
from typing import Protocol, runtime_checkable

from mnemoql.engine.drafts import SavePlan, SaveResult, TopicDraft
from mnemoql.engine.models import Binding, Event, Topic, epoch_ms
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
from mnemoql.engine.topics.changes import TopicChanges, TopicMark

log = logging.getLogger(__name__)
# a catch-up that applies more rows than this runs in a thread, as a full load does
THREAD_ROWS = 5_000


@runtime_checkable
class TopicFeed(Protocol):
    """A store that can tell what changed in its topic and date data since a mark (the
    embedded store and Neo4j; another store reloads)."""

    async def topic_changes(self, since: TopicMark | None) -> TopicChanges | None: ...

    def last_write_marks(self) -> tuple[TopicMark, TopicMark] | None: ...


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
        # the store's state the index holds at least (None: unknown, catch-ups reload)
        self._mark: TopicMark | None = None
        self._feed = store if isinstance(store, TopicFeed) else None
        self.full_loads = 0  # times the index was read from the store in full (tests count)
        self.catch_ups = 0  # times it followed the store by what changed

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
        self._mark = None

    async def _load(self) -> TopicRecall:
        # the mark before the rows: whatever commits in between is read again by the next
        # catch-up, which changes nothing it already holds
        start = await self._feed.topic_changes(None) if self._feed is not None else None
        topics, bindings = await self.store.topic_rows()
        dates = await self.store.event_dates()
        # a million events make a million references: built in a thread, so the event loop
        # keeps answering meanwhile (on the loop it answered nothing for ~1 s at 1M events)
        index, self._bound = await asyncio.to_thread(self._build, topics, bindings, dates)
        self._mark = start.mark if start is not None else None
        self.full_loads += 1
        return index

    async def catch_up(self) -> None:
        """Follow what another process (or this one's ``forget``) committed, by the rows that
        changed; called under the save lock. Reloads instead (on next use) when the store
        cannot tell them. Nothing to do while the index is not loaded."""
        index = self._index
        if index is None:
            return
        changes = None
        if self._feed is not None and self._mark is not None:
            changes = await self._feed.topic_changes(self._mark)
        if changes is None:
            self.invalidate()
            return
        if changes.rows > THREAD_ROWS:
            await asyncio.to_thread(self._apply, index, changes)
        else:
            self._apply(index, changes)
        self._mark = changes.mark
        self.catch_ups += 1

    def _apply(self, index: TopicRecall, changes: TopicChanges) -> None:
        """Removals first (an event deleted and then restored under its id ends present),
        then new topics in creation order, bindings in the order written, dated events."""
        for gone in changes.removed:
            ref = self._ref(gone.event_id)
            if gone.path is not None:
                index.topics.unbind(gone.path, ref)
                if self._bound.get(gone.event_id) == gone.path:
                    del self._bound[gone.event_id]
            elif (day := _day(gone.event_id, gone.day or "")) is not None:
                index.dates.remove(ref, day)
        self._fill(index, changes.topics, changes.bindings, changes.dated, self._bound)

    def wrote(self) -> None:
        """After this process's own committed save or binding, already in the index: the mark
        moves past it when the store was at the mark right before (else the next catch-up
        reads it again, harmlessly)."""
        marks = self._feed.last_write_marks() if self._feed is not None else None
        if marks is not None and self._mark is not None and marks[0] == self._mark:
            self._mark = marks[1]

    def _build(
        self, topics: Sequence[Topic], bindings: Sequence[Binding], dates: Sequence[tuple[str, str]]
    ) -> tuple[TopicRecall, dict[str, str]]:
        index = TopicRecall()
        bound: dict[str, str] = {}
        self._fill(index, topics, bindings, dates, bound)
        return index, bound

    def _fill(
        self,
        index: TopicRecall,
        topics: Sequence[Topic],
        bindings: Sequence[Binding],
        dates: Sequence[tuple[str, str]],
        bound: dict[str, str],
    ) -> None:
        """Topics, then bindings (upserts), then events by day (add if absent)."""
        for topic in topics:
            index.topics.ensure(topic.path)
        for b in bindings:
            profile = ActivationProfile(b.activation, b.diffusion, b.context_independence)
            index.topics.record_binding(b.path, self._ref(b.event_id), b.timestamp, b.related,
                                        profile)  # fmt: skip
            bound[b.event_id] = b.path
        days: dict[str, date | None] = {}  # each distinct day parsed once
        for event_id, text in dates:
            if text not in days:
                days[text] = _day(event_id, text)
            day = days[text]
            if day is not None:
                index.dates.record(self._ref(event_id), day)

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
            self._bind(index, plan.topic, result.event_ids, epoch_ms(plan.create_time))
        self.wrote()

    def bound(self, draft: TopicDraft, event_ids: Sequence[str], timestamp: int) -> None:
        """Index committed bindings of ``event_ids`` to ``draft``'s topic."""
        index = self._index
        if index is None:
            return
        self._bind(index, draft, event_ids, timestamp)
        self.wrote()

    def _bind(
        self, index: TopicRecall, draft: TopicDraft, event_ids: Sequence[str], timestamp: int
    ) -> None:
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


def _day(event_id: str, text: str) -> date | None:
    """An event's ``create_date``; None (logged) when it is not a date."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        log.warning("event %s has no usable create_date (%r); not dated", event_id, text)
        return None
