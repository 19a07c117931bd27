"""Partner's MemoryRuntimeTest (SPEC §2.11), adapted: a unit's last slice becomes a SliceRef."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date

import pytest

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.topics import (
    MS_PER_DAY,
    ActivationProfile,
    SliceRef,
    TopicRecall,
    slice_messages,
)

DEFAULT = ActivationProfile(0.55, 0.35, 0.50)
NOW = 20_000 * MS_PER_DAY  # far after every fixture timestamp unless a test says otherwise


@dataclass
class Slice:
    id: str
    start: int
    end: int
    summary: str
    timestamp: int


@dataclass
class Unit:
    id: str
    messages: list[str]
    slices: list[Slice] = field(default_factory=list)


def record(
    recall: TopicRecall,
    unit: Unit,
    topic: str | None,
    related: list[str],
    profile: ActivationProfile = DEFAULT,
) -> None:
    """``MemoryRuntime.recordMemory``: index the unit's last slice, dates in UTC."""
    last = unit.slices[-1]
    recall.record(SliceRef(unit.id, last.id), last.timestamp, topic, related, profile, tz="UTC")


def materialise(units: dict[str, Unit], refs: list[SliceRef]) -> list[tuple[str, list[str]]]:
    """``buildActivatedMemorySlices``: skip missing units/slices, slice the messages."""
    out = []
    for ref in refs:
        unit = units.get(ref.unit_id)
        if unit is None:
            continue
        for piece in unit.slices:
            if piece.id == ref.slice_id:
                out.append((piece.id, slice_messages(unit.messages, piece.start, piece.end)))
    return out


def test_slice_messages_use_left_closed_right_open_ranges() -> None:
    messages = ["m0", "m1", "m2", "m3"]
    assert slice_messages(messages, 1, 3) == ["m1", "m2"]
    assert slice_messages(messages, 2, 2) == []
    assert slice_messages(messages, 3, 1) == []
    assert slice_messages(messages, -5, 99) == messages


def test_binding_goes_to_the_latest_slice_not_the_first() -> None:
    recall = TopicRecall()
    unit = Unit("unit-99", ["m0", "m1", "m2", "m3"])
    unit.slices += [Slice("slice-1", 0, 2, "first", 1), Slice("slice-2", 2, 4, "second", 2)]

    record(recall, unit, "topic/main", ["topic/related"])

    assert recall.query_topic("topic/main", NOW).refs == [SliceRef("unit-99", "slice-2")]
    tree = recall.topic_tree_text()
    assert "topic/main [root]" in tree
    assert "topic/related [root]" in tree
    paths = [item["topic_path"] for item in recall.to_state()["topic_slices"]]
    assert "topic/main" in paths


def test_topic_query_expands_to_the_latest_related_topic_memory() -> None:
    recall = TopicRecall()
    main = Unit(
        "unit-main", ["m0", "m1", "m2", "m3"], [Slice("slice-main", 0, 2, "main", MS_PER_DAY)]
    )
    related = Unit(
        "unit-related", ["r0", "r1"], [Slice("slice-related", 0, 2, "related", 2 * MS_PER_DAY)]
    )

    record(recall, main, "topic/main", ["topic/related"])
    record(recall, related, "topic/related", [])

    result = recall.query_topic("topic/main", NOW)
    assert [ref.slice_id for ref in result.refs] == ["slice-main", "slice-related"]
    assert [c.source for c in result.candidates] == ["PRIMARY", "RELATED"]
    assert result.missing is None


def test_date_index_is_incremental_per_recorded_slice() -> None:
    recall = TopicRecall()
    unit = Unit("unit-100", ["m0", "m1"], [Slice("slice-1", 0, 1, "first", 86_400_000)])
    record(recall, unit, "topic/main", [])
    unit.messages[:] = ["m2", "m3"]
    unit.slices[:] = [Slice("slice-2", 0, 1, "second", 172_800_000)]
    record(recall, unit, "topic/main", [])

    days = {d["date"]: [r["slice_id"] for r in d["refs"]] for d in recall.to_state()["date_index"]}
    assert days == {"1970-01-02": ["slice-1"], "1970-01-03": ["slice-2"]}


def test_date_is_taken_in_the_given_zone_not_the_system_one() -> None:
    recall = TopicRecall()
    ref = SliceRef("u", "s")
    recall.record(ref, 86_400_000, None, tz="America/Los_Angeles")  # 1970-01-01 16:00 local
    assert recall.query_date(date(1970, 1, 1)).refs == (ref,)
    assert recall.query_date(date(1970, 1, 2)).missing is not None
    with pytest.raises(InvalidInput):
        recall.record(ref, 0, None, tz="Mars/Olympus_Mons")


def test_state_round_trip_restores_topic_and_date_indexes() -> None:
    recall = TopicRecall()
    main = Unit("unit-200", ["m0", "m1", "m2", "m3"])
    main.slices += [
        Slice("slice-1", 0, 2, "first", 86_400_000),
        Slice("slice-2", 2, 4, "second", 172_800_000),
    ]
    related = Unit("unit-201", ["r0", "r1"], [Slice("slice-3", 0, 2, "related", 259_200_000)])
    units = {main.id: main, related.id: related}
    record(recall, main, "topic/main", ["topic/related"])
    record(recall, related, "topic/related", [])

    state = json.loads(json.dumps(recall.to_state()))
    topics = state["topic_slices"]
    assert len(topics) == 2
    binding = next(t for t in topics if t["topic_path"] == "topic/main")["bindings"][0]
    assert binding["slice_id"] == "slice-2"
    assert binding["timestamp"] == 172_800_000
    assert binding["related_topic_paths"] == ["topic/related"]
    assert binding["activation_profile"] == {
        "activation_weight": 0.55,
        "diffusion_weight": 0.35,
        "context_independence_weight": 0.5,
    }
    assert [d["date"] for d in state["date_index"]] == ["1970-01-03", "1970-01-04"]
    third = next(d for d in state["date_index"] if d["date"] == "1970-01-04")
    assert third["refs"][0]["slice_id"] == "slice-3"

    restored = TopicRecall.from_state(state)
    topic = materialise(units, restored.query_topic("topic/main", NOW).refs)
    assert [slice_id for slice_id, _ in topic] == ["slice-2", "slice-3"]
    assert topic[0][1] == ["m2", "m3"]
    by_date = restored.query_date(date(1970, 1, 4))
    assert [r.slice_id for r in by_date.refs] == ["slice-3"]
    assert [s.summary for s in related.slices if s.id == by_date.refs[0].slice_id] == ["related"]


def test_missing_topic_or_date_returns_empty_with_a_note() -> None:
    recall = TopicRecall()

    topic = recall.query_topic("  topic/missing ", NOW)
    assert topic.candidates == () and topic.refs == []
    assert topic.missing is not None
    assert (topic.missing.target, topic.missing.key) == ("TOPIC", "topic/missing")
    assert topic.missing.message == "Unexisted topic path: topic/missing"

    day = recall.query_date(date(1970, 1, 1))
    assert day.refs == ()
    assert day.missing is not None
    assert (day.missing.target, day.missing.key) == ("DATE_INDEX", "1970-01-01")
    assert day.missing.message == "Unexisted date index: 1970-01-01"


def test_existing_node_without_bindings_is_empty_but_not_missing() -> None:
    recall = TopicRecall()
    recall.record(SliceRef("u", "s"), 0, "a", ["only->related"], tz="UTC")
    result = recall.query_topic("only->related", NOW)
    assert result.candidates == () and result.missing is None


def test_ranking_by_source_and_activation_profile() -> None:
    recall = TopicRecall()
    recall.record(
        SliceRef("unit-primary", "slice-primary"),
        NOW,
        "topic->main",
        ["topic->related"],
        ActivationProfile(0.9, 0.1, 0.9),
        tz="UTC",
    )
    recall.record(
        SliceRef("unit-related-rank", "slice-related-rank"),
        NOW,
        "topic->related",
        [],
        ActivationProfile(1.0, 1.0, 1.0),
        tz="UTC",
    )
    recall.record(
        SliceRef("unit-parent", "slice-parent"),
        NOW,
        "topic",
        [],
        ActivationProfile(1.0, 1.0, 1.0),
        tz="UTC",
    )

    result = recall.query_topic("topic->main", NOW)
    assert [r.slice_id for r in result.refs] == [
        "slice-primary",
        "slice-related-rank",
        "slice-parent",
    ]
    assert [c.score for c in result.candidates] == pytest.approx([2.026, 1.95, 1.59], abs=1e-6)
    assert [c.topic_path for c in result.candidates] == ["topic->main", "topic->related", "topic"]


def test_zero_diffusion_weight_disables_related_expansion() -> None:
    recall = TopicRecall()
    recall.record(
        SliceRef("unit-primary-zero", "slice-primary-zero"),
        NOW,
        "topic->main",
        ["topic->related"],
        ActivationProfile(0.8, 0.0, 0.8),
        tz="UTC",
    )
    recall.record(
        SliceRef("unit-related-zero", "slice-related-zero"),
        NOW,
        "topic->related",
        [],
        ActivationProfile(1.0, 1.0, 1.0),
        tz="UTC",
    )
    assert [r.slice_id for r in recall.query_topic("topic->main", NOW).refs] == [
        "slice-primary-zero"
    ]


def test_rebinding_refreshes_timestamp_and_profile_and_merges_related() -> None:
    recall = TopicRecall()
    ref = SliceRef("unit-refresh", "slice-refresh")
    recall.record(
        ref,
        86_400_000,
        "topic->main",
        ["topic->related"],
        ActivationProfile(0.2, 0.1, 0.2),
        tz="UTC",
    )
    recall.record(
        ref,
        172_800_000,
        "topic->main",
        ["topic->related-2"],
        ActivationProfile(0.9, 0.8, 0.7),
        tz="UTC",
    )

    main = next(t for t in recall.to_state()["topic_slices"] if t["topic_path"] == "topic->main")
    assert len(main["bindings"]) == 1
    binding = main["bindings"][0]
    assert binding["timestamp"] == 172_800_000
    assert binding["activation_profile"] == {
        "activation_weight": 0.9,
        "diffusion_weight": 0.8,
        "context_independence_weight": 0.7,
    }
    assert binding["related_topic_paths"] == ["topic->related", "topic->related-2"]


def test_record_fixes_paths_and_records_date_only_for_a_blank_topic() -> None:
    recall = TopicRecall()
    ref = SliceRef("u", "s")
    assert recall.record(ref, 0, " [noise] ", ["x [1] -> y", "", "x->y"], tz="UTC") is None
    assert recall.query_date("1970-01-01").refs == (ref,)
    assert recall.topic_tree_text() == "x [root]\r\nx->y {slices: 0}"

    binding = recall.record(ref, 0, "a [2]-> b ", None, None, tz="UTC")
    assert binding is not None and binding.profile == ActivationProfile(0.55, 0.35, 0.5)
    assert recall.query_topic("a->b", NOW).refs == [ref]


def test_query_date_rejects_a_malformed_date_string() -> None:
    with pytest.raises(InvalidInput):
        TopicRecall().query_date("2026-3-1")
