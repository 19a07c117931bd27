from __future__ import annotations

from datetime import date

import pytest

from mnemoql.engine.errors import TimeHintInvalid
from mnemoql.engine.timehint import parse_time_hint

TODAY = date(2026, 3, 5)  # a Thursday


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        # absolute days, months, years
        ("2026-02-14", ("2026-02-14", "2026-02-14")),
        ("2026/02/14", ("2026-02-14", "2026-02-14")),
        ("2026年2月14日", ("2026-02-14", "2026-02-14")),
        ("2024-02", ("2024-02-01", "2024-02-29")),
        ("2025年2月", ("2025-02-01", "2025-02-28")),
        ("2025", ("2025-01-01", "2025-12-31")),
        ("2025年", ("2025-01-01", "2025-12-31")),
        # relative days
        ("今天", ("2026-03-05", "2026-03-05")),
        ("today", ("2026-03-05", "2026-03-05")),
        ("昨天", ("2026-03-04", "2026-03-04")),
        ("yesterday", ("2026-03-04", "2026-03-04")),
        ("前天", ("2026-03-03", "2026-03-03")),
        # weeks
        ("本周", ("2026-03-02", "2026-03-05")),
        ("这周", ("2026-03-02", "2026-03-05")),
        ("this week", ("2026-03-02", "2026-03-05")),
        ("上周", ("2026-02-23", "2026-03-01")),
        ("last week", ("2026-02-23", "2026-03-01")),
        # months and years
        ("本月", ("2026-03-01", "2026-03-31")),
        ("this month", ("2026-03-01", "2026-03-31")),
        ("上个月", ("2026-02-01", "2026-02-28")),
        ("上月", ("2026-02-01", "2026-02-28")),
        ("last month", ("2026-02-01", "2026-02-28")),
        ("今年", ("2026-01-01", "2026-12-31")),
        ("this year", ("2026-01-01", "2026-12-31")),
        ("去年", ("2025-01-01", "2025-12-31")),
        ("last year", ("2025-01-01", "2025-12-31")),
        # last N days
        ("最近7天", ("2026-02-27", "2026-03-05")),
        ("近3天", ("2026-03-03", "2026-03-05")),
        ("过去1天", ("2026-03-05", "2026-03-05")),
        ("last 10 days", ("2026-02-24", "2026-03-05")),
        ("最近一周", ("2026-02-27", "2026-03-05")),
        ("最近一个月", ("2026-02-04", "2026-03-05")),
    ],
)
def test_each_form_of_the_grammar(hint: str, expected: tuple[str, str]) -> None:
    assert parse_time_hint(hint, TODAY) == expected


@pytest.mark.parametrize(
    "hint",
    [
        "2026-02~2026-03-10",
        "2026-02～2026-03-10",
        "2026-02..2026-03-10",
        "2026-02至2026-03-10",
        "2026-02到2026-03-10",
        "2026-02 to 2026-03-10",
        "2026-02 ~ 2026-03-10",
    ],
)
def test_ranges_run_from_a_start_to_b_end(hint: str) -> None:
    assert parse_time_hint(hint, TODAY) == ("2026-02-01", "2026-03-10")


def test_range_ends_can_be_relative_and_use_the_end_of_b() -> None:
    assert parse_time_hint("上周~今天", TODAY) == ("2026-02-23", "2026-03-05")
    assert parse_time_hint("2025 to 2026-01", TODAY) == ("2025-01-01", "2026-01-31")


def test_input_is_trimmed_nfkc_normalised_and_case_insensitive() -> None:
    assert parse_time_hint("  ２０２６－０２－１４ ", TODAY) == ("2026-02-14", "2026-02-14")
    assert parse_time_hint("Last Week", TODAY) == ("2026-02-23", "2026-03-01")
    assert parse_time_hint("最近 7 天", TODAY) == ("2026-02-27", "2026-03-05")


def test_week_edges_on_a_monday_and_a_sunday() -> None:
    monday, sunday = date(2026, 3, 2), date(2026, 3, 8)
    assert parse_time_hint("本周", monday) == ("2026-03-02", "2026-03-02")
    assert parse_time_hint("本周", sunday) == ("2026-03-02", "2026-03-08")
    assert parse_time_hint("上周", sunday) == ("2026-02-23", "2026-03-01")


def test_last_month_across_a_year_boundary() -> None:
    assert parse_time_hint("上个月", date(2026, 1, 15)) == ("2025-12-01", "2025-12-31")


@pytest.mark.parametrize(
    "hint",
    [
        "",
        "   ",
        "明年春天",
        "2026-13",
        "2026-02-30",
        "最近0天",
        "last 0 days",
        "26-01-01",
        "2026-03-10~2026-03-01",
        "2026~",
        "2026~2027~2028",
        "最近99999999999999天",
        "todayish",
    ],
)
def test_anything_else_is_rejected_with_the_zh_message(hint: str) -> None:
    with pytest.raises(TimeHintInvalid) as info:
        parse_time_hint(hint, TODAY)
    assert info.value.zh == f"无法解析 time_hint：{hint.strip()}"
    assert info.value.code == "TIME_HINT_INVALID"
