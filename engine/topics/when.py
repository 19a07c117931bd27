"""Day expressions in conversation lines, resolved to calendar days (offline date cues, SPEC §2.8).

Partner's cue model outputs a date "only when it is resolvable to a concrete day"; this is the
offline stand-in. It reads, in English and Chinese:

- absolute days: ``2026-03-01``, ``2026年3月1日``, and without a year ``3月1日`` / ``3月1号``,
  ``March 1`` / ``1 March`` / ``Mar 1st`` (this year; last year when that day is still ahead);
- relative days: today / yesterday / the day before yesterday, 今天 / 昨天 / 前天 / 大前天,
  ``3 days ago`` / ``three days ago`` / ``a week ago``, ``3天前`` / ``三天前`` / ``一周前``;
- weekdays: ``last Monday`` / 上周一 / 上星期一 / 上礼拜一 (that day of the previous week),
  ``this Monday`` / 这周一 / 本周一 (this week's, only when it is not ahead), and ``on Monday`` /
  bare 周一 / 星期一 (the most recent Monday, today included).

Weeks start on Monday, as in the time_hint grammar (SPEC §1.11). Ranges ("last week", 上个月)
are not days and give nothing. Each hit is ``(position, day)``; impossible days are skipped.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

_NOT_WORD = r"(?<![A-Za-z0-9])"
_END = r"(?![A-Za-z0-9])"

_EN_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}  # fmt: skip
_ZH_DIGITS = dict(zip("一二三四五六七八九", range(1, 10), strict=True)) | {"两": 2}
_EN_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sept", "sep"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}  # fmt: skip

_ISO = re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)")
_CJK_FULL = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")
_CJK_MONTH_DAY = re.compile(r"(?<![\d年])(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")
_MONTH_WORDS = "|".join(sorted(_MONTHS, key=len, reverse=True))
_EN_MONTH_DAY = re.compile(
    rf"{_NOT_WORD}(?:({_MONTH_WORDS})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?"
    rf"|(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_WORDS}))(?:,?\s+(\d{{4}}))?{_END}",
    re.IGNORECASE,
)
# Longest alternatives first, so "day before yesterday" is not also read as "yesterday".
_EN_RELATIVE = re.compile(
    rf"{_NOT_WORD}(?:the\s+)?(day before yesterday|yesterday|today){_END}", re.IGNORECASE
)
_ZH_RELATIVE = re.compile(r"大前天|前天|昨天|今天")
_ZH_RELATIVE_DAYS = {"今天": 0, "昨天": 1, "前天": 2, "大前天": 3}
_EN_AGO = re.compile(
    rf"{_NOT_WORD}(\d{{1,3}}|{'|'.join(_EN_NUMBERS)})\s+(days?|weeks?)\s+ago{_END}", re.IGNORECASE
)
_ZH_AGO = re.compile(r"(\d{1,3}|[一两二三四五六七八九十]{1,3})\s*(天|个?星期|周)(?:以)?前")
_EN_WEEKDAY = re.compile(
    rf"{_NOT_WORD}(last|this|on)\s+({'|'.join(_EN_WEEKDAYS)}){_END}", re.IGNORECASE
)
_ZH_WEEKDAY = re.compile(r"(上个?|这个?|本)?(?:周|星期|礼拜)([一二三四五六日天])")


def _zh_number(text: str) -> int | None:
    """Digits, or a Chinese numeral up to 99 (三, 十, 十二, 二十, 两)."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        if len(text) > 3 or (tens and tens not in _ZH_DIGITS) or (ones and ones not in _ZH_DIGITS):
            return None
        return (_ZH_DIGITS[tens] if tens else 1) * 10 + (_ZH_DIGITS[ones] if ones else 0)
    return _ZH_DIGITS.get(text) if len(text) == 1 else None


def _safe(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None  # 2026-02-30 is not a day


def _this_year(month: int, day: int, today: date) -> date | None:
    found = _safe(today.year, month, day)
    if found is not None and found > today:
        found = _safe(today.year - 1, month, day)
    return found


def _weekday(which: str, weekday: int, today: date) -> date | None:
    monday = today - timedelta(days=today.weekday())
    if which == "last":
        return monday - timedelta(days=7) + timedelta(days=weekday)
    if which == "this":
        found = monday + timedelta(days=weekday)
        return found if found <= today else None
    return today - timedelta(days=(today.weekday() - weekday) % 7)  # the most recent one


def find_days(text: str, today: date) -> list[tuple[int, date]]:
    """Every day expression of ``text`` as ``(start offset, day)``, in no particular order."""
    found: list[tuple[int, date | None]] = []
    for m in _ISO.finditer(text):
        found.append((m.start(), _safe(int(m[1]), int(m[2]), int(m[3]))))
    for m in _CJK_FULL.finditer(text):
        found.append((m.start(), _safe(int(m[1]), int(m[2]), int(m[3]))))
    for m in _CJK_MONTH_DAY.finditer(text):
        found.append((m.start(), _this_year(int(m[1]), int(m[2]), today)))
    for m in _EN_MONTH_DAY.finditer(text):
        month, day = _MONTHS[(m[1] or m[4]).lower()], int(m[2] or m[3])
        dated = _safe(int(m[5]), month, day) if m[5] else _this_year(month, day, today)
        found.append((m.start(), dated))
    for m in _EN_RELATIVE.finditer(text):
        back = {"today": 0, "yesterday": 1}.get(re.sub(r"\s+", " ", m[1].lower()), 2)
        found.append((m.start(), today - timedelta(days=back)))
    for m in _ZH_RELATIVE.finditer(text):
        found.append((m.start(), today - timedelta(days=_ZH_RELATIVE_DAYS[m[0]])))
    for m in _EN_AGO.finditer(text):
        count = int(m[1]) if m[1].isdigit() else _EN_NUMBERS[m[1].lower()]
        unit = 7 if m[2].lower().startswith("week") else 1
        found.append((m.start(), today - timedelta(days=count * unit)))
    for m in _ZH_AGO.finditer(text):
        number = _zh_number(m[1])
        if number is not None:
            unit = 1 if m[2] == "天" else 7
            found.append((m.start(), today - timedelta(days=number * unit)))
    for m in _EN_WEEKDAY.finditer(text):
        day = _EN_WEEKDAYS.index(m[2].lower())
        found.append((m.start(), _weekday(m[1].lower(), day, today)))
    for m in _ZH_WEEKDAY.finditer(text):
        which = "last" if m[1] and m[1].startswith("上") else "this" if m[1] else "on"
        found.append((m.start(), _weekday(which, _ZH_WEEKDAYS[m[2]], today)))
    return [(at, day) for at, day in found if day is not None]
