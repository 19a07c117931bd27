"""The topic_based_memory.json codec (SPEC §2.9)."""

from __future__ import annotations

import json
import logging
from datetime import date
from typing import Any

import pytest

from mnemoql.engine.topics import (
    ActivationProfile,
    SliceRef,
    TopicRecall,
    from_state,
    to_state,
)


def build() -> TopicRecall:
    recall = TopicRecall()
    recall.record(SliceRef("u1", "s1"), 5 * 86_400_000, "b->x", ["a->deep->leaf"], tz="UTC")
    recall.record(
        SliceRef("u1", "s2"), 86_400_000, "a", [], ActivationProfile(0.9, 0.1, 0.7), tz="UTC"
    )
    recall.record(SliceRef("u2", "s3"), 3 * 86_400_000, None, ["c"], tz="UTC")
    return recall


def test_to_state_lists_every_node_depth_first_and_dates_ascending() -> None:
    state = build().to_state()
    assert [t["topic_path"] for t in state["topic_slices"]] == [
        "b",
        "b->x",
        "a",
        "a->deep",
        "a->deep->leaf",
        "c",
    ]
    assert [len(t["bindings"]) for t in state["topic_slices"]] == [0, 1, 1, 0, 0, 0]
    assert state["topic_slices"][1]["bindings"][0] == {
        "unit_id": "u1",
        "slice_id": "s1",
        "timestamp": 432_000_000,
        "activation_profile": {
            "activation_weight": 0.55,
            "diffusion_weight": 0.35,
            "context_independence_weight": 0.5,
        },
        "related_topic_paths": ["a->deep->leaf"],
    }
    assert [d["date"] for d in state["date_index"]] == ["1970-01-02", "1970-01-04", "1970-01-06"]
    assert state["date_index"][1]["refs"] == [{"unit_id": "u2", "slice_id": "s3"}]


def test_round_trip_is_lossless_through_json() -> None:
    original = build()
    state = json.loads(json.dumps(original.to_state()))
    restored = TopicRecall.from_state(state)
    assert restored.to_state() == original.to_state()
    assert restored.topic_tree_text() == original.topic_tree_text()
    topics, dates, warnings = from_state(state)
    assert warnings == []
    assert to_state(topics, dates) == state
    node = topics.find("a")
    assert node is not None
    assert node.bindings[0].profile == ActivationProfile(0.9, 0.1, 0.7)


def test_load_replaces_previous_content() -> None:
    recall = build()
    recall.load_state({"topic_slices": [{"topic_path": "only", "bindings": []}]})
    assert recall.to_state() == {
        "topic_slices": [{"topic_path": "only", "bindings": []}],
        "date_index": [],
    }


def test_tolerant_load_skips_bad_entries_with_warnings(caplog: pytest.LogCaptureFixture) -> None:
    good_ref = {"unit_id": "u", "slice_id": "s"}
    state: dict[str, Any] = {
        "topic_slices": [
            None,
            {"bindings": []},
            {"topic_path": 42},
            {
                "topic_path": "t",
                "bindings": [
                    None,
                    {"slice_id": "s", "timestamp": 1},
                    {"unit_id": "u", "slice_id": "no-ts"},
                    {"unit_id": "u", "slice_id": "bad-ts", "timestamp": "soon"},
                    {
                        "unit_id": "u",
                        "slice_id": "s",
                        "timestamp": "7",
                        "activation_profile": {"activation_weight": 3, "diffusion_weight": None},
                        "related_topic_paths": [" r ", "", 5, "r"],
                    },
                ],
            },
        ],
        "date_index": [
            {"date": "1970-13-01", "refs": [good_ref]},
            {"date": "19700102", "refs": [good_ref]},
            {"refs": [good_ref]},
            {"date": "1970-01-02", "refs": [good_ref, good_ref, {"unit_id": "u"}, None]},
            {"date": "1970-01-03"},
        ],
    }
    with caplog.at_level(logging.WARNING, logger="mnemoql.engine.topics.codec"):
        topics, dates, warnings = from_state(state)

    assert topics.paths() == ["t", "r"]
    node = topics.find("t")
    assert node is not None
    [binding] = node.bindings
    assert (binding.slice_ref, binding.timestamp_ms) == (SliceRef("u", "s"), 7)
    assert binding.profile == ActivationProfile(1.0, 0.35, 0.5)
    assert binding.related_paths == ("r",)
    assert dates.find(date(1970, 1, 2)) == [SliceRef("u", "s")]
    assert dates.find(date(1970, 1, 3)) == []
    assert len(warnings) == 12
    assert any("without timestamp: u:no-ts" in w for w in warnings)
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == len(warnings)


def test_load_of_an_empty_document_gives_empty_indexes() -> None:
    topics, dates, warnings = from_state({})
    assert topics.paths() == [] and dict(dates.entries()) == {} and warnings == []
