"""The time_hint grammar (SPEC §1.11): a phrase to an inclusive range of write dates.

The hint filters ``Event.create_date`` (when a memory was written), never the time an event
happened. ``today`` is injected: the caller computes it in the configured timezone.

>>> import datetime
>>> parse_time_hint("上周", datetime.date(2026, 3, 5))  # a Thursday
('2026-02-23', '2026-03-01')
"""

from __future__ import annotations

import calendar
import re
import unicodedata
from collections.abc import Callable
from datetime import date, timedelta

from mnemoql.engine.checks import clip
from mnemoql.engine.errors import TimeHintInvalid

DateRange = tuple[date, date]

# "A to B" needs spaces so that "today" is never split.
_RANGE = re.compile(r"\s*(?:~|～|\.\.|至|到)\s*|\s+to\s+", re.IGNORECASE)
_DAY = re.compile(r"(\d{4})(?:-(\d{1,2})-(\d{1,2})|/(\d{1,2})/(\d{1,2})|年(\d{1,2})月(\d{1,2})日)")
_MONTH = re.compile(r"(\d{4})(?:-(\d{1,2})|年(\d{1,2})月)")
_YEAR = re.compile(r"(\d{4})年?")
_LAST_DAYS = re.compile(r"(?:最近|近|过去)(\d+)天|last (\d+) days?")
_LAST_WEEK_MONTH = re.compile(r"(?:最近|近|过去)(一周|一个月)")


def _month(year: int, month: int) -> DateRange:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _year(year: int) -> DateRange:
    return date(year, 1, 1), date(year, 12, 31)


def _last_days(today: date, n: int) -> DateRange:
    if n < 1:
        raise ValueError(n)
    return today - timedelta(days=n - 1), today


def _this_week(today: date) -> DateRange:
    return today - timedelta(days=today.weekday()), today


def _last_week(today: date) -> DateRange:
    monday = today - timedelta(days=today.weekday() + 7)
    return monday, monday + timedelta(days=6)


def _last_month(today: date) -> DateRange:
    first = today.replace(day=1) - timedelta(days=1)
    return _month(first.year, first.month)


_WORDS: dict[str, Callable[[date], DateRange]] = {
    "今天": lambda t: (t, t),
    "today": lambda t: (t, t),
    "昨天": lambda t: (t - timedelta(days=1),) * 2,
    "yesterday": lambda t: (t - timedelta(days=1),) * 2,
    "前天": lambda t: (t - timedelta(days=2),) * 2,
    "本周": _this_week,
    "这周": _this_week,
    "this week": _this_week,
    "上周": _last_week,
    "last week": _last_week,
    "本月": lambda t: _month(t.year, t.month),
    "this month": lambda t: _month(t.year, t.month),
    "上个月": _last_month,
    "上月": _last_month,
    "last month": _last_month,
    "今年": lambda t: _year(t.year),
    "this year": lambda t: _year(t.year),
    "去年": lambda t: _year(t.year - 1),
    "last year": lambda t: _year(t.year - 1),
}


def _single(text: str, today: date) -> DateRange:
    """One form of the table; raises ValueError (or OverflowError) when it is none."""
    words = " ".join(text.lower().split())
    if words in _WORDS:
        return _WORDS[words](today)
    compact = "".join(words.split())
    if m := _LAST_DAYS.fullmatch(words) or _LAST_DAYS.fullmatch(compact):
        return _last_days(today, int(m.group(1) or m.group(2)))
    if m := _LAST_WEEK_MONTH.fullmatch(compact):
        return _last_days(today, 7 if m.group(1) == "一周" else 30)
    if m := _DAY.fullmatch(compact):
        y, *rest = m.groups()
        month, day = (int(v) for v in rest if v is not None)
        d = date(int(y), month, day)
        return d, d
    if m := _MONTH.fullmatch(compact):
        return _month(int(m.group(1)), int(m.group(2) or m.group(3)))
    if m := _YEAR.fullmatch(compact):
        return _year(int(m.group(1)))
    raise ValueError(text)


def parse_time_hint(text: str, today: date) -> tuple[str, str]:
    """Parse a time_hint into an inclusive ``(date_from, date_to)`` of ISO dates.

    Forms: ``YYYY-MM-DD``, ``YYYY/MM/DD``, ``YYYY年M月D日``; ``YYYY-MM``, ``YYYY年M月``;
    ``YYYY``, ``YYYY年``; 今天/today, 昨天/yesterday, 前天; 本周/这周/this week (Monday ..
    today); 上周/last week (previous Monday .. Sunday); 本月/this month, 上个月/上月/last month;
    今年/this year, 去年/last year; 最近N天/近N天/过去N天/last N days (today-N+1 .. today);
    最近一周 (7 days), 最近一个月 (30 days); and ranges ``A~B``, ``A～B``, ``A..B``, ``A至B``,
    ``A到B``, ``A to B`` meaning A's first day .. B's last day.

    Args:
        text: The hint; it is trimmed and NFKC-normalised first.
        today: Today's date in the configured timezone.

    Returns:
        ``(date_from, date_to)`` as ``YYYY-MM-DD`` strings, both inclusive.

    Raises:
        TimeHintInvalid: For anything else, including impossible dates and reversed ranges.
    """
    hint = unicodedata.normalize("NFKC", text).strip()
    try:
        parts = _RANGE.split(hint)
        if len(parts) == 1:
            first, last = _single(hint, today)
        elif len(parts) == 2 and all(parts):
            first, last = _single(parts[0], today)[0], _single(parts[1], today)[1]
        else:
            raise ValueError(hint)
        if first > last:
            raise ValueError(hint)
    except (ValueError, OverflowError) as exc:
        shown = clip(text.strip())
        raise TimeHintInvalid(
            f"cannot parse time_hint: {shown}", zh=f"无法解析 time_hint：{shown}"
        ) from exc
    return first.isoformat(), last.isoformat()
