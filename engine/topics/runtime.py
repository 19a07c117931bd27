"""``TopicRecall``: both indexes behind one lock, as Partner's ``MemoryRuntime`` (SPEC §2.3).

A lookup that finds nothing does not raise: it returns an empty result whose ``missing`` note is
the equivalent of Partner's reported ``MemoryLookupException`` (target ``TOPIC`` or
``DATE_INDEX``). Clocks and time zones are parameters; nothing here reads the system's.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal
from zoneinfo import ZoneInfo

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.topics.codec import load_state, to_state
from mnemoql.engine.topics.dates import DateMemoryIndex, local_date
from mnemoql.engine.topics.profile import ActivationProfile, SliceRef
from mnemoql.engine.topics.scoring import ScoredCandidate, TopicRecallCollector
from mnemoql.engine.topics.tree import (
    TopicBinding,
    TopicMemoryIndex,
    fix_topic_path,
    is_blank,
    normalise_related,
)

LookupTarget = Literal["TOPIC", "DATE_INDEX"]
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True, slots=True)
class LookupMiss:
    """A lookup key the index does not hold (Partner's ``MemoryLookupException``)."""

    target: LookupTarget
    key: str

    @property
    def message(self) -> str:
        noun = "topic path" if self.target == "TOPIC" else "date index"
        return f"Unexisted {noun}: {self.key}"


@dataclass(frozen=True, slots=True)
class TopicLookup:
    """Ranked candidates of a topic query; empty with ``missing`` set for an unknown path."""

    candidates: tuple[ScoredCandidate, ...]
    missing: LookupMiss | None = None

    @property
    def refs(self) -> list[SliceRef]:
        return [candidate.ref for candidate in self.candidates]


@dataclass(frozen=True, slots=True)
class DateLookup:
    """A day's refs in insertion order (unscored, unlimited); ``missing`` for an unknown day."""

    refs: tuple[SliceRef, ...]
    missing: LookupMiss | None = None


def parse_date(text: str) -> date:
    """A strict ``yyyy-MM-dd`` date, as Java's ``LocalDate.parse``."""
    try:
        if _ISO_DATE.match(text):
            return date.fromisoformat(text)
    except ValueError:
        pass
    raise InvalidInput(
        f"invalid date {text!r}: use yyyy-MM-dd, e.g. 2026-03-01",
        zh=f"日期格式无效：{text}（应为 yyyy-MM-dd）",
        argument="date",
    )


class TopicRecall:
    """The topic index and the date index of one memory, guarded by one lock."""

    def __init__(self, collector: TopicRecallCollector | None = None) -> None:
        self.topics = TopicMemoryIndex()
        self.dates = DateMemoryIndex()
        self.collector = collector or TopicRecallCollector()
        self._lock = threading.RLock()

    def record(
        self,
        ref: SliceRef,
        timestamp_ms: int,
        topic_path: str | None,
        related: Iterable[str | None] | None = None,
        profile: ActivationProfile | None = None,
        *,
        tz: str | ZoneInfo,
    ) -> TopicBinding | None:
        """Index a slice: always by its local date in ``tz``, by topic when one is given.

        ``ref`` and ``timestamp_ms`` are those of the unit's last slice. The topic and related
        paths go through :func:`fix_topic_path` (as Partner's extractor does before recording);
        a topic that is blank after fixing records the date only. Related paths become nodes
        even when there is no topic. Returns the binding as stored, or ``None``.
        """
        day = local_date(timestamp_ms, tz)
        topic = fix_topic_path(topic_path)
        related_paths = normalise_related(fix_topic_path(p) for p in related or ())
        with self._lock:
            self.dates.record(ref, day)
            binding = None
            if not is_blank(topic):
                binding = self.topics.record_binding(
                    topic, ref, timestamp_ms, related_paths, profile
                )
            self.topics.ensure_topic_paths(related_paths)
            return binding

    def query_topic(self, path: str | None, now_ms: int, limit: int | None = None) -> TopicLookup:
        """Recall by topic path (fixed like a cue) at time ``now_ms``.

        ``limit`` replaces Partner's 5 results (activation ranks a larger pool itself); the
        parent and related limits stay Partner's.
        """
        fixed = fix_topic_path(path)
        collector = self.collector
        if limit is not None:
            collector = TopicRecallCollector(
                collector.scorer,
                result_limit=limit,
                parent_limit=collector.parent_limit,
                related_limit=collector.related_limit,
            )
        with self._lock:
            node = self.topics.find(fixed)
            if node is None:
                return TopicLookup((), LookupMiss("TOPIC", fixed))
            return TopicLookup(tuple(collector.collect_node(self.topics, node, now_ms)))

    def query_date(self, day: date | str) -> DateLookup:
        """Recall every slice recorded on ``day`` (a date or ``yyyy-MM-dd``)."""
        when = parse_date(day) if isinstance(day, str) else day
        with self._lock:
            refs = self.dates.find(when)
        if refs is None:
            return DateLookup((), LookupMiss("DATE_INDEX", when.isoformat()))
        return DateLookup(tuple(refs))

    def dated_slices(self) -> int:
        """How many slices the date index holds: every recorded slice, once per day."""
        with self._lock:
            return self.dates.size()

    def topic_tree_text(self) -> str:
        with self._lock:
            return self.topics.topic_tree_text()

    def to_state(self) -> dict[str, Any]:
        """The ``topic_based_memory.json`` document (SPEC §2.9)."""
        with self._lock:
            return to_state(self.topics, self.dates)

    def load_state(self, state: Mapping[str, Any]) -> list[str]:
        """Replace both indexes with ``state``; returns the warnings of skipped entries."""
        with self._lock:
            return load_state(state, self.topics, self.dates)

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> TopicRecall:
        recall = cls()
        recall.load_state(state)
        return recall
