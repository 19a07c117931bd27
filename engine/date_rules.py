"""The rules of the date grammar (engine/dates.py reads by them): every expression it knows,
English and Chinese, as a pattern and what it names relative to ``today``.

- **days**: one calendar day. Absolute (``2026-03-01``, ``2026/3/1``, ``2026年3月1日``,
  ``3月1日`` / ``3月1号`` / ``十二月一日``, ``March 1`` / ``1 March`` / ``Mar 1st, 2025`` /
  ``the 1st of March``: without a year this year's, or last year's when still ahead) and
  relative (today / yesterday / the day before yesterday / last night, 今天 / 昨天 / 昨晚 /
  前天 / 大前天, ``3 days ago`` / ``two weeks ago`` / ``a month ago``, ``3天前`` / ``三天前`` /
  ``两周前`` / ``一个月前``, weekdays ``last Friday`` / ``this Monday`` / ``on Monday`` /
  ``Friday``, 上周五 / 上星期五 / 这周一 / 周五 / 星期五 / 礼拜五): ``DAYS``.
- **named spans**: an inclusive range of days one expression names, ``named_span``: every day
  expression, plus SPEC §1.11's table (``YYYY-MM``, ``YYYY``, this / last week, month and year,
  最近N天 / last N days, 最近一周, 最近一个月), and: last / past N weeks, months and years
  (最近两周, 近三个月, 近一年, a month counting 30 days as SPEC's 最近一个月 does), the past
  week / month / year, the week before last (上上周), last / this / the past weekend (上周末,
  本周末), the month before last (上上个月), the year before last (前年), a month by name
  (``December``, ``Dec 2025``, ``12月``, 十二月), a few days ago / 前几天 (the six days before
  today). ``SPAN_RULES`` finds them in running text.

Weeks start on Monday. A time of day after a day ("yesterday morning", 昨天晚上) is dropped:
the grammar resolves days. Impossible days are not days (2026-02-30).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import date, timedelta

DateRange = tuple[date, date]

_NOT_WORD = r"(?<![a-z0-9])"
_END = r"(?![a-z0-9])"
_ZH_NUM = r"[一二两三四五六七八九十〇零]{1,3}"
_NUM = rf"(?:\d{{1,4}}|{_ZH_NUM})"

_EN_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_EN_NUMBER = rf"(?:\d{{1,4}}|{'|'.join(_EN_NUMBERS)})"
_ZH_DIGITS = dict(zip("一二三四五六七八九", range(1, 10), strict=True)) | {"两": 2}
_EN_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_EN_WEEKDAY = "|".join(_EN_WEEKDAYS)
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
_MONTH_WORDS = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORDINAL = r"(?:st|nd|rd|th)?"


def _number(text: str) -> int | None:
    """Digits, an English number word, or a Chinese numeral up to 99 (三, 十, 十二, 二十, 两)."""
    if text.isdigit():
        return int(text)
    if text in _EN_NUMBERS:
        return _EN_NUMBERS[text]
    if "十" in text:
        tens, _, ones = text.partition("十")
        if len(text) > 3 or (tens and tens not in _ZH_DIGITS) or (ones and ones not in _ZH_DIGITS):
            return None
        return (_ZH_DIGITS[tens] if tens else 1) * 10 + (_ZH_DIGITS[ones] if ones else 0)
    return _ZH_DIGITS.get(text) if len(text) == 1 else None


def _safe(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except (ValueError, OverflowError):
        return None  # 2026-02-30 is not a day


def _this_year(month: int, day: int, today: date) -> date | None:
    """The day in this year, or last year's when this year's is still ahead."""
    found = _safe(today.year, month, day)
    if found is not None and found > today:
        found = _safe(today.year - 1, month, day)
    return found


def _months_back(today: date, n: int) -> date:
    month = today.year * 12 + today.month - 1 - n
    year, month = divmod(month, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(today.day, last))


def _weekday(which: str, weekday: int, today: date) -> date | None:
    monday = today - timedelta(days=today.weekday())
    if which == "last":
        return monday - timedelta(days=7) + timedelta(days=weekday)
    if which == "this":
        found = monday + timedelta(days=weekday)
        return found if found <= today else None
    return today - timedelta(days=(today.weekday() - weekday) % 7)  # the most recent one


# ---- days: (pattern, resolver) ----

Match = re.Match[str]
DayRule = tuple[re.Pattern[str], Callable[[Match, date], date | None]]


def _iso(m: Match, today: date) -> date | None:
    return _safe(int(m[1]), int(m[2]), int(m[3]))


def _zh_full(m: Match, today: date) -> date | None:
    month, day = _number(m[2]), _number(m[3])
    return _safe(int(m[1]), month, day) if month and day else None


def _zh_month_day(m: Match, today: date) -> date | None:
    month, day = _number(m[1]), _number(m[2])
    return _this_year(month, day, today) if month and day else None


def _en_month_day(m: Match, today: date) -> date | None:
    month, day = _MONTHS[(m[1] or m[4]).lower()], int(m[2] or m[3])
    return _safe(int(m[5]), month, day) if m[5] else _this_year(month, day, today)


_EN_BACK = {
    "today": 0, "tonight": 0, "this morning": 0, "this afternoon": 0, "this evening": 0,
    "yesterday": 1, "last night": 1, "day before yesterday": 2, "tomorrow": -1,
}  # fmt: skip
_ZH_BACK = {
    "今天": 0, "今日": 0, "今早": 0, "今晨": 0, "今晚": 0, "昨天": 1, "昨日": 1, "昨晚": 1,
    "前天": 2, "大前天": 3, "明天": -1,
}  # fmt: skip


def _en_relative(m: Match, today: date) -> date:
    return today - timedelta(days=_EN_BACK[" ".join(m[1].lower().split())])


def _zh_relative(m: Match, today: date) -> date:
    return today - timedelta(days=_ZH_BACK[m[0]])


def _ago(count: int | None, unit: str, today: date) -> date | None:
    """The day ``count`` days / weeks / months / years before today (a month back keeps the
    day of the month, or the month's last day)."""
    if count is None:
        return None
    if "month" in unit or "月" in unit:
        return _months_back(today, count)
    if "year" in unit or "年" in unit:
        return _months_back(today, 12 * count)
    weeks = unit.startswith("week") or any(w in unit for w in ("周", "星期", "礼拜"))
    return today - timedelta(days=count * (7 if weeks else 1))


def _en_ago(m: Match, today: date) -> date | None:
    return _ago(_number(m[1].lower()), m[2].lower(), today)


def _zh_ago(m: Match, today: date) -> date | None:
    return _ago(_number(m[1]), m[2], today)


def _en_weekday(m: Match, today: date) -> date | None:
    return _weekday((m[1] or "on").lower(), _EN_WEEKDAYS.index(m[2].lower()), today)


def _zh_weekday(m: Match, today: date) -> date | None:
    which = "last" if m[1] and m[1].startswith("上") else "this" if m[1] else "on"
    return _weekday(which, _ZH_WEEKDAYS[m[2]], today)


DAYS: list[DayRule] = [
    (re.compile(r"(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)"), _iso),
    (re.compile(rf"(\d{{4}})\s*年\s*(\d{{1,2}}|{_ZH_NUM})\s*月\s*(\d{{1,2}}|{_ZH_NUM})\s*[日号]"),
     _zh_full),
    (re.compile(rf"(?<![\d年])(\d{{1,2}}|{_ZH_NUM})\s*月\s*(\d{{1,2}}|{_ZH_NUM})\s*[日号]"),
     _zh_month_day),
    (re.compile(
        rf"{_NOT_WORD}(?:the\s+)?(?:({_MONTH_WORDS})\.?\s+(\d{{1,2}}){_ORDINAL}"
        rf"|(\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?({_MONTH_WORDS})\.?)(?:,?\s+(\d{{4}}))?{_END}",
        re.IGNORECASE,
    ), _en_month_day),
    # longest first, so "day before yesterday" is not also read as "yesterday"
    (re.compile(
        rf"{_NOT_WORD}(?:the\s+)?(day\s+before\s+yesterday|yesterday|today|tonight|tomorrow"
        rf"|last\s+night|this\s+(?:morning|afternoon|evening)){_END}",
        re.IGNORECASE,
    ), _en_relative),
    (re.compile(r"大前天|前天|昨天|昨日|昨晚|今天|今日|今早|今晨|今晚|明天"), _zh_relative),
    (re.compile(rf"{_NOT_WORD}({_EN_NUMBER})\s+(days?|weeks?|months?|years?)\s+ago{_END}",
                re.IGNORECASE), _en_ago),
    # at most three digits: "2025年前" is "before 2025", not 2025 years ago
    (re.compile(rf"(?<!\d)(\d{{1,3}}|{_ZH_NUM})\s*(天|个?星期|个?礼拜|周|个月|年)(?:以)?前"),
     _zh_ago),
    (re.compile(rf"{_NOT_WORD}(last|this|on)\s+({_EN_WEEKDAY}){_END}", re.IGNORECASE),
     _en_weekday),
    (re.compile(r"(上个?|这个?|本)?(?:周|星期|礼拜)([一二三四五六日天])"), _zh_weekday),
]  # fmt: skip
# Whole phrases only: a bare weekday name in running text is too often no date ("Friday
# meetings"), but as a whole time hint it means the most recent one.
_BARE_WEEKDAY: DayRule = (
    re.compile(rf"()({_EN_WEEKDAY})", re.IGNORECASE),
    _en_weekday,
)
_TIME_OF_DAY = re.compile(
    r"\s*(?:(?:in\s+the\s+|at\s+)?(?:morning|afternoon|evening|night|noon)"
    r"|上午|下午|早上|早晨|中午|晚上|傍晚|夜里|凌晨)$",
    re.IGNORECASE,
)


def _day(phrase: str, today: date) -> date | None:
    """The day a whole (normalised) phrase names, or None."""
    bare = _TIME_OF_DAY.sub("", phrase).strip()
    for candidate in dict.fromkeys((phrase, bare or phrase)):
        for pattern, resolve in [*DAYS, _BARE_WEEKDAY]:
            if m := pattern.fullmatch(candidate):
                return resolve(m, today)
    return None


# ---- spans ----


def _month(year: int, month: int) -> DateRange:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _year(year: int) -> DateRange:
    return date(year, 1, 1), date(year, 12, 31)


def _last_days(today: date, n: int) -> DateRange:
    if n < 1:
        raise ValueError(n)
    return today - timedelta(days=n - 1), today


def _week(today: date, back: int) -> DateRange:
    monday = today - timedelta(days=today.weekday() + 7 * back)
    return (monday, today) if back == 0 else (monday, monday + timedelta(days=6))


def _weekend(today: date, back: int) -> DateRange:
    saturday = today - timedelta(days=today.weekday() + 7 * back) + timedelta(days=5)
    return saturday, saturday + timedelta(days=1)


def _past_weekend(today: date) -> DateRange:
    """The latest Saturday and Sunday whose Saturday is before today."""
    saturday = today - timedelta(days=(today.weekday() - 5) % 7 or 7)
    return saturday, saturday + timedelta(days=1)


def _month_back(today: date, back: int) -> DateRange:
    first = _months_back(today.replace(day=1), back)
    return _month(first.year, first.month)


_WORDS: dict[str, Callable[[date], DateRange]] = {
    "本周": lambda t: _week(t, 0),
    "这周": lambda t: _week(t, 0),
    "这个星期": lambda t: _week(t, 0),
    "这星期": lambda t: _week(t, 0),
    "本星期": lambda t: _week(t, 0),
    "这个礼拜": lambda t: _week(t, 0),
    "this week": lambda t: _week(t, 0),
    "earlier this week": lambda t: _week(t, 0),
    "上周": lambda t: _week(t, 1),
    "上个星期": lambda t: _week(t, 1),
    "上星期": lambda t: _week(t, 1),
    "上个礼拜": lambda t: _week(t, 1),
    "上礼拜": lambda t: _week(t, 1),
    "last week": lambda t: _week(t, 1),
    "上上周": lambda t: _week(t, 2),
    "上上个星期": lambda t: _week(t, 2),
    "the week before last": lambda t: _week(t, 2),
    "上周末": lambda t: _weekend(t, 1),
    "last weekend": lambda t: _weekend(t, 1),
    "the past weekend": _past_weekend,
    "this past weekend": _past_weekend,
    "past weekend": _past_weekend,
    "本周末": lambda t: _weekend(t, 0),
    "这周末": lambda t: _weekend(t, 0),
    "this weekend": lambda t: _weekend(t, 0),
    "本月": lambda t: _month_back(t, 0),
    "这个月": lambda t: _month_back(t, 0),
    "this month": lambda t: _month_back(t, 0),
    "earlier this month": lambda t: _month_back(t, 0),
    "上个月": lambda t: _month_back(t, 1),
    "上月": lambda t: _month_back(t, 1),
    "last month": lambda t: _month_back(t, 1),
    "上上个月": lambda t: _month_back(t, 2),
    "the month before last": lambda t: _month_back(t, 2),
    "今年": lambda t: _year(t.year),
    "this year": lambda t: _year(t.year),
    "去年": lambda t: _year(t.year - 1),
    "last year": lambda t: _year(t.year - 1),
    "前年": lambda t: _year(t.year - 2),
    "the year before last": lambda t: _year(t.year - 2),
    "最近一周": lambda t: _last_days(t, 7),
    "the past week": lambda t: _last_days(t, 7),
    "past week": lambda t: _last_days(t, 7),
    "this past week": lambda t: _last_days(t, 7),
    "最近一个月": lambda t: _last_days(t, 30),
    "the past month": lambda t: _last_days(t, 30),
    "past month": lambda t: _last_days(t, 30),
    "the past year": lambda t: _last_days(t, 365),
    "past year": lambda t: _last_days(t, 365),
    "前几天": lambda t: (t - timedelta(days=6), t - timedelta(days=1)),
    "几天前": lambda t: (t - timedelta(days=6), t - timedelta(days=1)),
    "a few days ago": lambda t: (t - timedelta(days=6), t - timedelta(days=1)),
}
_UNITDAYS = {
    "天": 1, "日": 1, "周": 7, "星期": 7, "个星期": 7, "礼拜": 7, "个礼拜": 7, "个月": 30,
    "月": 30, "年": 365, "day": 1, "week": 7, "month": 30, "year": 365,
}  # fmt: skip
_LAST_N_ZH = re.compile(rf"(?:最近|近|过去)({_NUM})(天|日|个?星期|个?礼拜|周|个月|年)")
_LAST_N_EN = re.compile(
    rf"(?:the\s+)?(?:last|past)\s+({_EN_NUMBER})\s+(day|week|month|year)s?", re.IGNORECASE
)
_YEAR_MONTH = re.compile(rf"(\d{{4}})(?:[-/.](\d{{1,2}})|\s*年\s*(\d{{1,2}}|{_ZH_NUM})\s*月)")
_YEAR = re.compile(r"(\d{4})\s*年?")
_MONTH_NAME = re.compile(rf"({_MONTH_WORDS})\.?(?:,?\s+(\d{{4}}))?", re.IGNORECASE)
_ZH_MONTH = re.compile(rf"(\d{{1,2}}|{_ZH_NUM})\s*月份?")


def _month_this_year(month: int, today: date) -> DateRange:
    year = today.year if month <= today.month else today.year - 1
    return _month(year, month)


def named_span(phrase: str, today: date) -> DateRange | None:
    """A span named by one expression (no ``A to B``), or None."""
    compact = "".join(phrase.split())
    if phrase in _WORDS:
        return _WORDS[phrase](today)
    if compact in _WORDS:
        return _WORDS[compact](today)
    if m := _LAST_N_ZH.fullmatch(compact):
        n = _number(m[1])
        return _last_days(today, n * _UNITDAYS[m[2]]) if n is not None else None
    if m := _LAST_N_EN.fullmatch(phrase):
        n = _number(m[1].lower())
        return _last_days(today, n * _UNITDAYS[m[2].lower()]) if n is not None else None
    if (day := _day(phrase, today)) is not None:
        return day, day
    if m := _YEAR_MONTH.fullmatch(compact):
        month = _number(m[2] or m[3])
        return _month(int(m[1]), month) if month else None
    if m := _YEAR.fullmatch(compact):
        return _year(int(m[1]))
    if m := _MONTH_NAME.fullmatch(phrase):
        month = _MONTHS[m[1].lower()]
        return _month(int(m[2]), month) if m[2] else _month_this_year(month, today)
    if m := _ZH_MONTH.fullmatch(compact):
        month = _number(m[1])
        return _month_this_year(month, today) if month else None
    return None


# ---- spans in running text ----

# The span phrases a question may hold, found in running text: the named spans above ("last
# week", "the past weekend", 上个月), "the last N days" forms, and every day expression
# (``DAYS``: "yesterday", "last Saturday", "3 days ago", 3月1日). Month and weekday names on
# their own are left out: "May" and "march" are too often no date in a sentence.
_NAMED_IN_TEXT = re.compile(
    rf"{_NOT_WORD}(?:"
    + "|".join(
        re.escape(w).replace(r"\ ", r"\s+")
        for w in sorted((w for w in _WORDS if w.isascii()), key=len, reverse=True)
    )
    + rf"){_END}|"
    + "|".join(sorted((w for w in _WORDS if not w.isascii()), key=len, reverse=True)),
    re.IGNORECASE,
)
SPAN_RULES: list[re.Pattern[str]] = [
    _NAMED_IN_TEXT,
    re.compile(rf"{_NOT_WORD}{_LAST_N_EN.pattern}{_END}", re.IGNORECASE),
    _LAST_N_ZH,
]
