"""Cue post-fix and the offline cue matcher (SPEC §2.8)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from mnemoql.engine.topics import Cue, fix_cues, offline_cues

TODAY = date(2026, 3, 4)
KNOWN = [
    "work",
    "work->mnemoql",
    "work->mnemoql->recall",
    "life",
    "life->cooking",
    "life->cooking->noodles",
    "AI",
]


@dataclass
class Match:
    type: str | None
    text: str | None


def test_fix_cues_fixes_topics_passes_dates_and_drops_the_rest() -> None:
    raw = [
        None,
        {"type": "topic", "text": " work [1] -> mnemoql {slices: 2} "},
        {"type": "topic", "text": "[x] -> [y]"},
        {"type": "topic", "text": "   "},
        {"type": "date", "text": "not-a-date"},
        {"type": "date", "text": " 2026-03-01"},
        {"type": "Topic", "text": "work"},
        {"type": "person", "text": "Alice"},
        {"type": "topic"},
        {"type": "date", "text": 20260301},
        Match("topic", "life->->cooking"),
        Match(None, "work"),
    ]
    assert fix_cues(raw) == [
        Cue("topic", "work->mnemoql {slices: 2}"),
        Cue("date", "not-a-date"),
        Cue("date", " 2026-03-01"),
        Cue("topic", "life->cooking"),
    ]
    assert fix_cues(None) == [] and fix_cues([]) == []


def test_offline_cues_prefer_the_most_specific_known_path() -> None:
    cues = offline_cues(["How is the RECALL part of mnemoql going?"], KNOWN, TODAY)
    assert cues == [Cue("topic", "work->mnemoql->recall")]


def test_offline_cues_match_chinese_segments_and_several_branches() -> None:
    known = ["生活", "生活->做饭", "生活->做饭->面条", "工作->记忆"]
    cues = offline_cues(["昨天做饭了吗", "记忆系统怎么样"], known, TODAY)
    assert cues == [
        Cue("topic", "生活->做饭"),
        Cue("topic", "工作->记忆"),
        Cue("date", "2026-03-03"),
    ]


def test_offline_cues_need_latin_segments_to_stand_alone() -> None:
    assert offline_cues(["she said so"], KNOWN, TODAY) == []
    assert offline_cues(["about ai, again"], KNOWN, TODAY) == [Cue("topic", "AI")]


def test_offline_cues_resolve_date_expressions() -> None:
    lines = [
        "today and yesterday, also the day before yesterday",
        "2026-02-28 与 2025年12月3日，以及前天和今天",
        "bad: 2026-02-30, 2026年13月1日",
    ]
    assert offline_cues(lines, [], TODAY) == [
        Cue("date", "2026-03-04"),
        Cue("date", "2026-03-03"),
        Cue("date", "2026-03-02"),
        Cue("date", "2026-02-28"),
        Cue("date", "2025-12-03"),
    ]


def test_three_days_ago_is_its_own_day_not_the_day_before_yesterday() -> None:
    assert offline_cues(["大前天的事"], [], TODAY) == [Cue("date", "2026-03-01")]


def test_relative_days_weekdays_and_days_without_a_year() -> None:
    # TODAY is Wednesday 2026-03-04; weeks start on Monday
    def day(text: str) -> list[str]:
        return [c.text for c in offline_cues([text], [], TODAY)]

    assert day("what happened last Monday?") == ["2026-02-23"]
    assert day("上周一开会了吗") == ["2026-02-23"]
    assert day("上个星期天") == ["2026-03-01"]
    assert day("上礼拜五") == ["2026-02-27"]
    assert day("this Monday") == ["2026-03-02"] and day("这周一") == ["2026-03-02"]
    assert day("this Friday") == [] and day("本周五") == []  # still ahead: not a memory day
    assert day("on Friday we met") == ["2026-02-27"] and day("星期三") == ["2026-03-04"]
    assert day("3 days ago") == ["2026-03-01"] and day("three days ago") == ["2026-03-01"]
    assert day("a week ago") == ["2026-02-25"] and day("两周前") == ["2026-02-18"]
    assert day("三天前") == ["2026-03-01"] and day("十天以前") == ["2026-02-22"]
    assert day("3月1日") == ["2026-03-01"] and day("12月25号") == ["2025-12-25"]
    assert day("on March 1st") == ["2026-03-01"] and day("25 December") == ["2025-12-25"]
    assert day("Dec 25, 2023") == ["2023-12-25"]
    assert day("2月30日 and February 30") == []  # not days
    # ranges are not days; "may" without a number is a verb
    assert day("last week, 上个月, you may go") == []


def test_date_cues_keep_the_order_of_appearance_and_drop_repeats() -> None:
    got = offline_cues(["yesterday, i.e. 2026-03-03, and last Monday; 昨天"], [], TODAY)
    assert [c.text for c in got] == ["2026-03-03", "2026-02-23"]


def test_topic_words_take_plurals_and_spaced_segments() -> None:
    known = ["work->team meeting", "life->cat"]
    cues = offline_cues(["two team\nmeetings and some cats"], known, TODAY)
    assert cues == [Cue("topic", "work->team meeting"), Cue("topic", "life->cat")]
    assert offline_cues(["a category"], known, TODAY) == []


def test_offline_cues_find_nothing_in_plain_text() -> None:
    assert offline_cues(["hello there"], KNOWN, TODAY) == []
    assert offline_cues([], KNOWN, TODAY) == []
