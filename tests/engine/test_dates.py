"""The one date grammar (issue 27 item 6): the same phrases for timeHint, cues and recallByDate,
in English and Chinese, relative to the memory's clock. Expected ranges are worked out by hand
for Thursday 2026-03-05 (this week: Mon 03-02 .. today; last week: 02-23 .. 03-01)."""

from __future__ import annotations

from datetime import date

import pytest

from mnemoql.engine.dates import find_days, find_spans, parse_day, parse_span
from mnemoql.engine.errors import TimeHintInvalid
from mnemoql.engine.timehint import parse_time_hint

TODAY = date(2026, 3, 5)  # a Thursday

ENGLISH = {
    "today": ("2026-03-05", "2026-03-05"),
    "yesterday": ("2026-03-04", "2026-03-04"),
    "the day before yesterday": ("2026-03-03", "2026-03-03"),
    "day before yesterday": ("2026-03-03", "2026-03-03"),
    "3 days ago": ("2026-03-02", "2026-03-02"),
    "three days ago": ("2026-03-02", "2026-03-02"),
    "10 days ago": ("2026-02-23", "2026-02-23"),
    "a week ago": ("2026-02-26", "2026-02-26"),
    "two weeks ago": ("2026-02-19", "2026-02-19"),
    "a month ago": ("2026-02-05", "2026-02-05"),
    "2 months ago": ("2026-01-05", "2026-01-05"),
    "a year ago": ("2025-03-05", "2025-03-05"),
    "last Friday": ("2026-02-27", "2026-02-27"),
    "last Monday": ("2026-02-23", "2026-02-23"),
    "this Monday": ("2026-03-02", "2026-03-02"),
    "this Tuesday": ("2026-03-03", "2026-03-03"),
    "on Wednesday": ("2026-03-04", "2026-03-04"),
    "Friday": ("2026-02-27", "2026-02-27"),
    "Thursday": ("2026-03-05", "2026-03-05"),
    "Sunday": ("2026-03-01", "2026-03-01"),
    "Friday afternoon": ("2026-02-27", "2026-02-27"),
    "March 1": ("2026-03-01", "2026-03-01"),
    "1 March": ("2026-03-01", "2026-03-01"),
    "Mar 1st": ("2026-03-01", "2026-03-01"),
    "the 1st of March": ("2026-03-01", "2026-03-01"),
    "December 1": ("2025-12-01", "2025-12-01"),  # still ahead this year: last year's
    "Dec 1, 2025": ("2025-12-01", "2025-12-01"),
    "December 1st 2024": ("2024-12-01", "2024-12-01"),
    "2026-03-01": ("2026-03-01", "2026-03-01"),
    "2026/3/1": ("2026-03-01", "2026-03-01"),
    "yesterday morning": ("2026-03-04", "2026-03-04"),
    "last night": ("2026-03-04", "2026-03-04"),
    "this morning": ("2026-03-05", "2026-03-05"),
    "this week": ("2026-03-02", "2026-03-05"),
    "last week": ("2026-02-23", "2026-03-01"),
    "LAST  WEEK": ("2026-02-23", "2026-03-01"),
    "the week before last": ("2026-02-16", "2026-02-22"),
    "last weekend": ("2026-02-28", "2026-03-01"),
    "this month": ("2026-03-01", "2026-03-31"),
    "last month": ("2026-02-01", "2026-02-28"),
    "the month before last": ("2026-01-01", "2026-01-31"),
    "this year": ("2026-01-01", "2026-12-31"),
    "last year": ("2025-01-01", "2025-12-31"),
    "last 7 days": ("2026-02-27", "2026-03-05"),
    "past 3 days": ("2026-03-03", "2026-03-05"),
    "last 2 weeks": ("2026-02-20", "2026-03-05"),
    "the past week": ("2026-02-27", "2026-03-05"),
    "the past month": ("2026-02-04", "2026-03-05"),
    "December": ("2025-12-01", "2025-12-31"),
    "February": ("2026-02-01", "2026-02-28"),
    "Dec 2025": ("2025-12-01", "2025-12-31"),
    "2026-02": ("2026-02-01", "2026-02-28"),
    "2025": ("2025-01-01", "2025-12-31"),
    "since March 1": ("2026-03-01", "2026-03-05"),
    "from Feb 27 to yesterday": ("2026-02-27", "2026-03-04"),
    "between Feb 20 and Feb 25": ("2026-02-20", "2026-02-25"),
    "2026-02-01 to 2026-02-10": ("2026-02-01", "2026-02-10"),
    "last Friday to today": ("2026-02-27", "2026-03-05"),
    "a few days ago": ("2026-02-27", "2026-03-04"),
}

CHINESE = {
    "今天": ("2026-03-05", "2026-03-05"),
    "昨天": ("2026-03-04", "2026-03-04"),
    "前天": ("2026-03-03", "2026-03-03"),
    "大前天": ("2026-03-02", "2026-03-02"),
    "昨晚": ("2026-03-04", "2026-03-04"),
    "昨天晚上": ("2026-03-04", "2026-03-04"),
    "今天上午": ("2026-03-05", "2026-03-05"),
    "3天前": ("2026-03-02", "2026-03-02"),
    "三天前": ("2026-03-02", "2026-03-02"),
    "十天前": ("2026-02-23", "2026-02-23"),
    "一周前": ("2026-02-26", "2026-02-26"),
    "两周前": ("2026-02-19", "2026-02-19"),
    "两个星期前": ("2026-02-19", "2026-02-19"),
    "一个月前": ("2026-02-05", "2026-02-05"),
    "三个月前": ("2025-12-05", "2025-12-05"),
    "一年前": ("2025-03-05", "2025-03-05"),
    "上周五": ("2026-02-27", "2026-02-27"),
    "上星期五": ("2026-02-27", "2026-02-27"),
    "上礼拜一": ("2026-02-23", "2026-02-23"),
    "这周一": ("2026-03-02", "2026-03-02"),
    "本周二": ("2026-03-03", "2026-03-03"),
    "周三": ("2026-03-04", "2026-03-04"),
    "星期日": ("2026-03-01", "2026-03-01"),
    "礼拜四": ("2026-03-05", "2026-03-05"),
    "12月1日": ("2025-12-01", "2025-12-01"),
    "12月1号": ("2025-12-01", "2025-12-01"),
    "3月1日": ("2026-03-01", "2026-03-01"),
    "十二月一日": ("2025-12-01", "2025-12-01"),
    "2025年12月1日": ("2025-12-01", "2025-12-01"),
    "2026年3月": ("2026-03-01", "2026-03-31"),
    "2025年": ("2025-01-01", "2025-12-31"),
    "12月": ("2025-12-01", "2025-12-31"),
    "二月": ("2026-02-01", "2026-02-28"),
    "本周": ("2026-03-02", "2026-03-05"),
    "这个星期": ("2026-03-02", "2026-03-05"),
    "上周": ("2026-02-23", "2026-03-01"),
    "上个星期": ("2026-02-23", "2026-03-01"),
    "上上周": ("2026-02-16", "2026-02-22"),
    "上周末": ("2026-02-28", "2026-03-01"),
    "本月": ("2026-03-01", "2026-03-31"),
    "这个月": ("2026-03-01", "2026-03-31"),
    "上个月": ("2026-02-01", "2026-02-28"),
    "上上个月": ("2026-01-01", "2026-01-31"),
    "今年": ("2026-01-01", "2026-12-31"),
    "去年": ("2025-01-01", "2025-12-31"),
    "前年": ("2024-01-01", "2024-12-31"),
    "最近3天": ("2026-03-03", "2026-03-05"),
    "最近三天": ("2026-03-03", "2026-03-05"),
    "近7天": ("2026-02-27", "2026-03-05"),
    "过去两周": ("2026-02-20", "2026-03-05"),
    "最近一周": ("2026-02-27", "2026-03-05"),
    "最近一个月": ("2026-02-04", "2026-03-05"),
    "近三个月": ("2025-12-06", "2026-03-05"),
    "3月1日以来": ("2026-03-01", "2026-03-05"),
    "自上周一以来": ("2026-02-23", "2026-03-05"),
    "3月1日至今": ("2026-03-01", "2026-03-05"),
    "从2月27日到昨天": ("2026-02-27", "2026-03-04"),
    "2月20日至2月25日": ("2026-02-20", "2026-02-25"),
    "前几天": ("2026-02-27", "2026-03-04"),
    "上周一到今天": ("2026-02-23", "2026-03-05"),
}


def test_the_tables_hold_at_least_forty_phrases_a_language() -> None:
    assert len(ENGLISH) >= 40 and len(CHINESE) >= 40


@pytest.mark.parametrize(("phrase", "expected"), [*ENGLISH.items(), *CHINESE.items()])
def test_a_phrase_is_the_same_range_as_a_time_hint(phrase: str, expected: tuple[str, str]) -> None:
    assert parse_time_hint(phrase, TODAY) == expected


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [(p, e[0]) for p, e in [*ENGLISH.items(), *CHINESE.items()] if e[0] == e[1]],
)
def test_a_phrase_naming_one_day_is_that_day_for_recall(phrase: str, expected: str) -> None:
    assert parse_day(phrase, TODAY).isoformat() == expected


# bare weekday names are whole phrases only: in running text "Friday meetings" is no date
WHOLE_PHRASE_ONLY = {"Friday", "Thursday", "Sunday", "Friday afternoon"}


@pytest.mark.parametrize(
    "phrase",
    [p for p, e in [*ENGLISH.items(), *CHINESE.items()] if e[0] == e[1]
     and p not in WHOLE_PHRASE_ONLY],
)  # fmt: skip
def test_the_days_of_the_tables_are_cues_in_running_text(phrase: str) -> None:
    # the same phrase, found inside a conversation line rather than given whole
    found = [d for _, d in find_days(f"我们{phrase}讨论过 / we talked {phrase}, ok", TODAY)]
    assert parse_day(phrase, TODAY) in found, (phrase, found)


def test_the_issue_phrases_are_cues_and_time_hints_alike() -> None:
    line = "3 days ago we met, last Friday too; 上周五见过，12月1日也见过"
    cues = sorted(d.isoformat() for _, d in find_days(line, TODAY))
    assert cues == ["2025-12-01", "2026-02-27", "2026-02-27", "2026-03-02"]
    for phrase in ("3 days ago", "last Friday", "上周五", "12月1日"):
        first, last = parse_span(phrase, TODAY)
        assert first == last and first.isoformat() in cues


def test_a_year_before_is_no_cue() -> None:
    assert find_days("2025年前的事", TODAY) == []
    assert [d for _, d in find_days("10年前的事", TODAY)] == [date(2016, 3, 5)]


def test_ranges_are_never_days() -> None:
    for phrase in ("last week", "上个月", "最近3天", "since March 1"):
        with pytest.raises(ValueError, match="names"):
            parse_day(phrase, TODAY)
    assert find_days("last week and 上个月", TODAY) == []


def test_weeks_start_on_monday_on_the_week_edges() -> None:
    monday, sunday = date(2026, 3, 2), date(2026, 3, 8)
    assert parse_time_hint("last Friday", monday) == ("2026-02-27", "2026-02-27")
    assert parse_time_hint("this week", monday) == ("2026-03-02", "2026-03-02")
    assert parse_time_hint("上周日", sunday) == ("2026-03-01", "2026-03-01")
    assert parse_time_hint("周日", sunday) == ("2026-03-08", "2026-03-08")


def test_months_back_keep_the_day_or_the_months_last() -> None:
    assert parse_time_hint("a month ago", date(2026, 3, 31)) == ("2026-02-28", "2026-02-28")
    assert parse_time_hint("一个月前", date(2026, 1, 15)) == ("2025-12-15", "2025-12-15")


@pytest.mark.parametrize(
    "phrase",
    ["", "明年春天", "2026-02-30", "2月30日", "最近0天", "someday", "Friday meetings",
     "last Friday to last Monday", "上上上周", "9999 years ago", "from", "between today"],
)  # fmt: skip
def test_anything_else_is_refused(phrase: str) -> None:
    with pytest.raises(TimeHintInvalid):
        parse_time_hint(phrase, TODAY)
    with pytest.raises((ValueError, OverflowError)):
        parse_day(phrase, TODAY)


# ---- spans in running text (the time route) ----

TUESDAY = date(2023, 3, 21)


@pytest.mark.parametrize(
    ("question", "spans"),
    [
        ("Which bike did I fix the past weekend?", [("2023-03-18", "2023-03-19")]),
        ("What did I do this past weekend?", [("2023-03-18", "2023-03-19")]),
        ("Who came to the concert last Saturday?", [("2023-03-18", "2023-03-18")]),
        ("What did we discuss the week before last?", [("2023-03-06", "2023-03-12")]),
        ("What did I say 3 days ago about the budget?", [("2023-03-18", "2023-03-18")]),
        ("What have I read in the last two weeks?", [("2023-03-08", "2023-03-21")]),
        ("上周末我去了哪里？", [("2023-03-18", "2023-03-19")]),
        ("我最近3天吃了什么", [("2023-03-19", "2023-03-21")]),
        ("I saw her yesterday and last week", [("2023-03-20", "2023-03-20"), ("2023-03-13", "2023-03-19")]),
    ],
)  # fmt: skip
def test_find_spans_reads_the_time_phrases_of_a_question(
    question: str, spans: list[tuple[str, str]]
) -> None:
    got = [(a.isoformat(), b.isoformat()) for a, b in find_spans(question, TUESDAY)]
    assert got == spans


@pytest.mark.parametrize(
    "question",
    [
        "How many days ago did I buy a smoker?",  # asks for a distance, names no day
        "What day of the week did I meet Juan?",
        "May I ask what you recommended in March?",  # month names alone are not read
        "What did the weekend warriors club decide?",
        "Which Friday meetings did I skip?",  # a bare weekday in running text
    ],
)
def test_find_spans_leaves_questions_without_a_time_phrase(question: str) -> None:
    assert find_spans(question, TUESDAY) == []


def test_the_past_weekend_is_the_latest_one_begun_before_today() -> None:
    saturday, sunday = date(2023, 3, 18), date(2023, 3, 19)
    assert parse_time_hint("the past weekend", saturday) == ("2023-03-11", "2023-03-12")
    assert parse_time_hint("the past weekend", sunday) == ("2023-03-18", "2023-03-19")
    assert parse_time_hint("past weekend", TUESDAY) == ("2023-03-18", "2023-03-19")
