"""One date grammar, English and Chinese, for ``search(timeHint:)``, activation cues and
``recallByDate`` (issue 27 item 6), always relative to the memory's clock (``today`` is passed
in: the caller takes it from the memory's clock in the configured timezone). The expressions it
knows, and what each names, are the rules of engine/date_rules.py; this module reads by them.

- **days**: ``find_days`` finds the day expressions of running text (activation cues);
  ``parse_day`` reads a phrase naming one (``recallByDate``).
- **spans**: an inclusive range of days, ``parse_span`` (``timeHint``): every named span of the
  rules (SPEC §1.11's table among them) and SPEC's ranges (``A~B``, ``A..B``, ``A至B``,
  ``A到B``, ``A to B``), and: ``since A`` / ``A以来`` / ``A至今`` (A's first day .. today),
  ``from A to B``, ``between A and B`` and ``从A到B``.

Parsers raise ``ValueError`` for anything they do not read, impossible days and reversed ranges
included; the callers turn it into their coded error.

``find_spans`` finds the span phrases of running text (a question naming "the past weekend"
or "last Saturday": the time route of ``engine.retrieval.routes``).

``dateparser`` was measured for this and left out (docs/DECISIONS.md, "One date grammar").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from datetime import date

from mnemoql.engine.date_rules import DAYS, SPAN_RULES, DateRange, named_span

# "A to B" needs spaces so that "today" is never split
_RANGE = re.compile(
    r"\s*(?:~|～|\.\.|至|到|—|–)\s*|\s+(?:to|until|till|through|thru)\s+", re.IGNORECASE
)
_BETWEEN = re.compile(r"between\s+(.+?)\s+and\s+(.+)", re.IGNORECASE)
_FROM = re.compile(r"(?:from\s+|从|自)(.+)", re.IGNORECASE)
_SINCE = re.compile(
    r"(?:since\s+(.+)|(?:从|自)?(.+?)(?:以来|至今|到现在|到今天|起)"
    r"|(.+?)\s+(?:until|till|to)\s+(?:now|today))",
    re.IGNORECASE,
)


def _day_matches(text: str, today: date) -> Iterator[tuple[int, int, date]]:
    """Every day expression of running ``text`` as ``(start, end, day)``, in no particular
    order (overlapping forms may both appear; impossible days are skipped)."""
    for pattern, resolve in DAYS:
        for m in pattern.finditer(text):
            try:
                day = resolve(m, today)
            except (ValueError, OverflowError):
                continue  # 9999 years ago is before the calendar
            if day is not None:
                yield m.start(), m.end(), day


def find_days(text: str, today: date) -> list[tuple[int, date]]:
    """Every day expression of running ``text`` as ``(start offset, day)``, in no particular
    order (overlapping forms may both appear; impossible days are skipped)."""
    return [(start, day) for start, _, day in _day_matches(text, today)]


def _one(phrase: str, today: date) -> DateRange:
    found = named_span(phrase.strip(), today)
    if found is None:
        raise ValueError(phrase)
    return found


def normalise(text: str) -> str:
    """NFKC, lower case, single spaces, trimmed: the form every rule reads."""
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def parse_span(text: str, today: date) -> DateRange:
    """The inclusive range of days a phrase names (see the module docstring).

    Raises:
        ValueError: For anything else, impossible days and reversed ranges included.
    """
    hint = normalise(text)
    if not hint:
        raise ValueError(text)
    if (whole := named_span(hint, today)) is not None:
        return whole
    if m := _BETWEEN.fullmatch(hint):
        first, last = _one(m[1], today)[0], _one(m[2], today)[1]
    elif (m := _SINCE.fullmatch(hint)) and not _RANGE.search(m[1] or m[2] or m[3] or ""):
        first, last = _one(m[1] or m[2] or m[3], today)[0], today
    else:
        start = m[1] if (m := _FROM.fullmatch(hint)) else None
        parts = _RANGE.split(start or hint)
        if start is not None and len(parts) == 1:  # "from last week": since
            first, last = _one(start, today)[0], today
        elif len(parts) != 2 or not all(p.strip() for p in parts):
            raise ValueError(text)
        else:
            first, last = _one(parts[0], today)[0], _one(parts[1], today)[1]
    if first > last:
        raise ValueError(text)
    return first, last


def parse_day(text: str, today: date) -> date:
    """The one day a phrase names (``2026-03-01``, ``yesterday``, 上周五, ``12月1日``...).

    Raises:
        ValueError: When the phrase names no day, or a span of several days.
    """
    first, last = parse_span(text, today)
    if first != last:
        raise ValueError(f"{text!r} names {(last - first).days + 1} days, not one")
    return first


def find_spans(text: str, today: date) -> list[DateRange]:
    """The spans of days the time phrases of running ``text`` name ("What did I fix the past
    weekend?": that Saturday and Sunday), in the order they appear; a phrase inside a longer
    one ("last week" in "the week before last") is not read again. Empty without one."""
    hint = normalise(text)
    found: list[tuple[int, int, DateRange]] = []
    for pattern in SPAN_RULES:
        for m in pattern.finditer(hint):
            span = named_span(normalise(m.group(0)), today)
            if span is not None:
                found.append((m.start(), m.end(), span))
    found += [(start, end, (day, day)) for start, end, day in _day_matches(hint, today)]
    found.sort(key=lambda f: (f[0], f[0] - f[1]))  # by start, the longest first
    out: list[DateRange] = []
    end = -1
    for start, stop, span in found:
        if start >= end:  # not inside (or across) the phrase read before it
            out.append(span)
            end = stop
    return out
