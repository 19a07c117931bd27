"""Partner's ``DateMemoryIndex``: local date -> slice refs, in insertion order (SPEC §2.6)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, timedelta
from types import MappingProxyType
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.topics.profile import SliceRef

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def zone(tz: str | ZoneInfo) -> ZoneInfo:
    """A zoneinfo zone from its IANA name; an unknown name is a caller error."""
    if isinstance(tz, ZoneInfo):
        return tz
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidInput(
            f"unknown time zone {tz!r}: use an IANA name such as 'Asia/Shanghai' or 'UTC'",
            zh=f"未知时区：{tz}",
            argument="tz",
        ) from exc


def local_date(timestamp_ms: int, tz: str | ZoneInfo) -> date:
    """The calendar date of an epoch-millisecond instant in ``tz`` (negative instants too)."""
    return (_EPOCH + timedelta(milliseconds=timestamp_ms)).astimezone(zone(tz)).date()


class DateMemoryIndex:
    """Refs per day, add-if-absent. Not thread-safe; :class:`~engine.topics.TopicRecall` locks."""

    def __init__(self) -> None:
        # each day's refs as the keys of a dict: insertion-ordered like Partner's list, and a
        # membership test in O(1) (a list made loading 100k events of one day quadratic:
        # minutes on the event loop before the first save of a bench corpus)
        self._days: dict[date, dict[SliceRef, None]] = {}

    def record(self, ref: SliceRef, day: date) -> None:
        self._days.setdefault(day, {}).setdefault(ref, None)

    def restore(self, day: date, refs: Iterable[SliceRef]) -> None:
        """Add ``refs`` to ``day`` (deduped), keeping the day even when ``refs`` is empty."""
        self._days.setdefault(day, {})
        for ref in refs:
            self.record(ref, day)

    def remove(self, ref: SliceRef, day: date) -> None:
        """Drop ``ref`` from ``day`` (its event was deleted); a day left empty goes too, as a
        fresh load from the store would not know it."""
        refs = self._days.get(day)
        if refs is not None:
            refs.pop(ref, None)
            if not refs:
                del self._days[day]

    def find(self, day: date) -> list[SliceRef] | None:
        """A copy of the day's refs, or ``None`` if the day was never recorded."""
        refs = self._days.get(day)
        return None if refs is None else list(refs)

    def size(self) -> int:
        """How many refs the index holds over all days."""
        return sum(len(refs) for refs in self._days.values())

    def entries(self) -> Mapping[date, tuple[SliceRef, ...]]:
        """Every day and its refs, in ascending date order."""
        return MappingProxyType({day: tuple(self._days[day]) for day in sorted(self._days)})

    def reset(self) -> None:
        self._days.clear()
