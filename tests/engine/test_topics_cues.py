"""Cue post-fix and the offline cue matcher (SPEC §2.8)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from engine.topics import Cue, fix_cues, offline_cues

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


def test_three_days_ago_is_not_read_as_the_day_before_yesterday() -> None:
    assert offline_cues(["大前天的事"], [], TODAY) == []


def test_offline_cues_find_nothing_in_plain_text() -> None:
    assert offline_cues(["hello there"], KNOWN, TODAY) == []
    assert offline_cues([], KNOWN, TODAY) == []
