"""The time_hint of a search (SPEC §1.11): a phrase to an inclusive range of write dates.

The grammar is ``engine.dates``, the one activation cues and ``recallByDate`` read too: SPEC's
table and more (``3 days ago``, ``last Friday``, 上周五, ``12月1日``, ``since March 1``...).
The hint filters ``Event.create_date`` (when a memory was written), never the time an event
happened. ``today`` is injected: the caller takes it from the memory's clock.

>>> import datetime
>>> parse_time_hint("上周", datetime.date(2026, 3, 5))  # a Thursday
('2026-02-23', '2026-03-01')
"""

from __future__ import annotations

from datetime import date

from mnemoql.engine.checks import clip
from mnemoql.engine.date_rules import DateRange
from mnemoql.engine.dates import parse_span
from mnemoql.engine.errors import TimeHintInvalid

__all__ = ["DateRange", "parse_time_hint"]


def parse_time_hint(text: str, today: date) -> tuple[str, str]:
    """Parse a time_hint into an inclusive ``(date_from, date_to)`` of ISO dates.

    Args:
        text: The hint; it is trimmed and NFKC-normalised first.
        today: Today's date on the memory's clock.

    Returns:
        ``(date_from, date_to)`` as ``YYYY-MM-DD`` strings, both inclusive.

    Raises:
        TimeHintInvalid: For anything ``engine.dates.parse_span`` does not read, including
            impossible dates and reversed ranges.
    """
    try:
        first, last = parse_span(text, today)
    except (ValueError, OverflowError) as exc:
        shown = clip(text.strip())
        raise TimeHintInvalid(
            f"cannot parse time_hint: {shown}", zh=f"无法解析 time_hint：{shown}"
        ) from exc
    return first.isoformat(), last.isoformat()
