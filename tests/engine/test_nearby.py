from __future__ import annotations

import pytest

from mnemoql.engine.errors import NoPosition, OutOfRange
from mnemoql.engine.retrieval.nearby import (
    neighbour_ids,
    parse_position,
    pick_neighbours,
    position_of,
)

CHAPTER = [f"event_ch33_e{r:02d}" for r in range(1, 13)]


def test_parse_position_keeps_the_literal_tokens() -> None:
    pos = parse_position("event_ch33_e06")
    assert (pos.prefix, pos.chapter, pos.record, pos.width) == ("event", "33", 6, 2)
    assert parse_position("book_a_ch003_e7").prefix == "book_a"
    assert parse_position("book_a_ch003_e7").chapter == "003"


@pytest.mark.parametrize("event_id", ["event_123", "event_ch33", "event_ch33_e", "ch1_e2"])
def test_ids_without_position_raise_the_zh_message(event_id: str) -> None:
    assert position_of(event_id) is None
    with pytest.raises(NoPosition) as info:
        parse_position(event_id)
    assert info.value.zh == "该事件 ID 不含章号/记录号，无法补读邻近记录，请用 read"


def test_neighbour_ids_keep_zero_padding() -> None:
    assert neighbour_ids("event_ch33_e06") == [
        "event_ch33_e04",
        "event_ch33_e05",
        "event_ch33_e07",
        "event_ch33_e08",
    ]
    assert neighbour_ids("event_ch33_e1", before=3, after=0) == ["event_ch33_e0"]


def test_pick_neighbours_around_e06() -> None:
    assert pick_neighbours("event_ch33_e06", CHAPTER) == [
        "event_ch33_e04",
        "event_ch33_e05",
        "event_ch33_e07",
        "event_ch33_e08",
    ]


def test_records_compare_as_integers_whatever_the_padding() -> None:
    ids = ["event_ch33_e5", "event_ch33_e007", "event_ch33_e10"]
    assert pick_neighbours("event_ch33_e06", ids, before=2, after=4) == [
        "event_ch33_e5",
        "event_ch33_e007",
        "event_ch33_e10",
    ]


def test_only_same_prefix_and_literal_chapter_qualify() -> None:
    ids = ["event_ch033_e05", "other_ch33_e05", "event_ch34_e05", "event_ch33_e06", "event_5"]
    assert pick_neighbours("event_ch33_e06", ids) == []


def test_quota_picks_nearest_first_preferring_before_then_sorts_by_record() -> None:
    # distance 1: e05, e07; distance 2: e04, e08; quota 3 -> e05, e07, then e04 (before wins)
    assert pick_neighbours("event_ch33_e06", CHAPTER, before=3, after=3, quota=3) == [
        "event_ch33_e04",
        "event_ch33_e05",
        "event_ch33_e07",
    ]
    assert pick_neighbours("event_ch33_e06", CHAPTER, before=10, after=10, quota=1) == [
        "event_ch33_e05"
    ]


def test_quota_is_capped_by_the_caller_and_four_is_the_usual_maximum() -> None:
    picks = pick_neighbours("event_ch33_e06", CHAPTER, before=10, after=10)
    assert picks == ["event_ch33_e04", "event_ch33_e05", "event_ch33_e07", "event_ch33_e08"]
    assert pick_neighbours("event_ch33_e06", CHAPTER, quota=0) == []


def test_excluded_ids_are_skipped_and_the_window_does_not_grow() -> None:
    picks = pick_neighbours("event_ch33_e06", CHAPTER, exclude={"event_ch33_e05"})
    assert picks == ["event_ch33_e04", "event_ch33_e07", "event_ch33_e08"]


def test_before_and_after_bounds() -> None:
    assert pick_neighbours("event_ch33_e06", CHAPTER, before=0, after=1) == ["event_ch33_e07"]
    with pytest.raises(OutOfRange):
        pick_neighbours("event_ch33_e06", CHAPTER, before=11)
    with pytest.raises(OutOfRange):
        pick_neighbours("event_ch33_e06", CHAPTER, after=-1)
