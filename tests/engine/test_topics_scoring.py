"""TopicRecallScorer and TopicRecallCollector (SPEC §2.4, §2.5)."""

from __future__ import annotations

import numpy as np
import pytest

from mnemoql.engine.topics import (
    MS_PER_DAY,
    ActivationProfile,
    CandidateSource,
    SliceRef,
    TopicBinding,
    TopicMemoryIndex,
    TopicRecallCollector,
    recency_score,
    score,
)

NOW = 10_000 * MS_PER_DAY


def binding(ts: int = NOW, profile: ActivationProfile | None = None) -> TopicBinding:
    return TopicBinding(SliceRef("u", "s"), ts, (), profile or ActivationProfile())


def f32(x: float) -> float:
    return float(np.float32(x))


def test_worked_example_scores_and_order() -> None:
    primary = score(CandidateSource.PRIMARY, binding(profile=ActivationProfile(0.9, 0.1, 0.9)), NOW)
    related = score(CandidateSource.RELATED, binding(profile=ActivationProfile(1, 1, 1)), NOW)
    parent = score(CandidateSource.PARENT, binding(profile=ActivationProfile(1, 1, 1)), NOW)
    assert primary == pytest.approx(2.026, abs=1e-6)
    assert related == pytest.approx(1.95, abs=1e-6)
    assert parent == pytest.approx(1.59, abs=1e-6)
    assert primary > related > parent


def test_scores_use_java_float_constants_widened_to_double() -> None:
    related = score(CandidateSource.RELATED, binding(profile=ActivationProfile(1, 1, 1)), NOW)
    # (double) 0.65f, then double arithmetic left to right, exactly as Java evaluates it.
    assert related == f32(0.65) + 0.30 + 0.50 * 1.0 + 0.30 * 1.0 + 0.20 * 1.0 * 1.0
    assert related != 0.65 + 0.30 + 0.50 + 0.30 + 0.20
    primary = score(CandidateSource.PRIMARY, binding(profile=ActivationProfile(0.9, 0.1, 0.9)), NOW)
    assert primary == 1.0 + 0.30 + 0.50 * f32(0.9) + 0.30 * f32(0.9) + 0.20 * f32(0.3) * f32(0.1)


@pytest.mark.parametrize(
    ("age_ms", "bonus"),
    [
        (-5 * MS_PER_DAY, 0.30),  # future: age 0
        (0, 0.30),
        (2 * MS_PER_DAY - 1, 0.30),  # 1.99 days is 1 whole day
        (2 * MS_PER_DAY, 0.22),
        (3 * MS_PER_DAY, 0.22),
        (4 * MS_PER_DAY, 0.15),
        (7 * MS_PER_DAY, 0.15),
        (8 * MS_PER_DAY - 1, 0.15),
        (8 * MS_PER_DAY, 0.08),
        (30 * MS_PER_DAY, 0.08),
        (31 * MS_PER_DAY - 1, 0.08),
        (31 * MS_PER_DAY, 0.0),
    ],
)
def test_recency_table_on_whole_days(age_ms: int, bonus: float) -> None:
    assert recency_score(NOW - age_ms, NOW) == bonus


@pytest.mark.parametrize(
    ("days", "bonus"), [(1, 0.30), (3, 0.22), (7, 0.15), (30, 0.08), (31, 0.0)]
)
def test_recency_boundaries_in_days(days: int, bonus: float) -> None:
    b = binding(ts=NOW - days * MS_PER_DAY, profile=ActivationProfile(0, 0, 0))
    assert score(CandidateSource.PRIMARY, b, NOW) == 1.0 + bonus


def bind(
    index: TopicMemoryIndex,
    path: str,
    slice_id: str,
    ts: int = NOW,
    related: list[str] | None = None,
    profile: ActivationProfile | None = None,
    unit: str = "u",
) -> None:
    index.record_binding(path, SliceRef(unit, slice_id), ts, related or [], profile)
    index.ensure_topic_paths(related or [])


def ids(index: TopicMemoryIndex, path: str) -> list[str]:
    return [c.ref.slice_id for c in TopicRecallCollector().collect(index, path, NOW)]


def test_primary_takes_all_bindings_and_result_is_limited_to_five() -> None:
    index = TopicMemoryIndex()
    for i in range(7):
        bind(index, "a", f"s{i}", ts=NOW - i * 1000)
    assert ids(index, "a") == ["s0", "s1", "s2", "s3", "s4"]


def test_ties_on_score_break_by_newer_timestamp() -> None:
    index = TopicMemoryIndex()
    bind(index, "a", "old", ts=NOW - 1000)
    bind(index, "a", "new", ts=NOW)
    assert ids(index, "a") == ["new", "old"]


def test_parent_is_one_level_up_and_gives_its_two_newest() -> None:
    index = TopicMemoryIndex()
    bind(index, "root", "grand")
    for i, ts in enumerate([NOW - 3000, NOW - 1000, NOW - 2000]):
        bind(index, "root->mid", f"p{i}", ts=ts)
    bind(index, "root->mid->leaf", "own")
    bind(index, "root->mid->leaf->child", "child")

    result = TopicRecallCollector().collect(index, "root->mid->leaf", NOW)
    assert [c.ref.slice_id for c in result] == ["own", "p1", "p2"]
    assert [c.source for c in result] == ["PRIMARY", "PARENT", "PARENT"]


def test_a_root_has_no_parent_and_children_are_not_searched() -> None:
    index = TopicMemoryIndex()
    bind(index, "root", "r")
    bind(index, "root->kid", "k")
    assert ids(index, "root") == ["r"]


def test_related_takes_two_newest_per_path_in_order() -> None:
    index = TopicMemoryIndex()
    low = ActivationProfile(0.0, 0.5, 0.0)
    bind(index, "main", "m", related=["x", "y"], profile=ActivationProfile(1, 0.5, 1))
    for i in range(3):
        bind(index, "x", f"x{i}", ts=NOW - i, profile=low)
        bind(index, "y", f"y{i}", ts=NOW - i, profile=low)
    result = TopicRecallCollector().collect(index, "main", NOW)
    assert [c.ref.slice_id for c in result] == ["m", "x0", "y0", "x1", "y1"]


def test_related_weight_is_the_max_diffusion_over_primary_bindings() -> None:
    index = TopicMemoryIndex()
    # The newest primary binding declares x with 0.2, an older one with 0: the max (0.2) wins.
    bind(index, "main", "b", related=["x"], profile=ActivationProfile(1, 0.2, 1))
    bind(index, "main", "a", ts=NOW - 1000, related=["x"], profile=ActivationProfile(1, 0.0, 1))
    bind(index, "x", "x0")
    assert "x0" in ids(index, "main")

    zero = TopicMemoryIndex()
    bind(zero, "main", "a", related=["x"], profile=ActivationProfile(1, 0.0, 1))
    bind(zero, "x", "x0")
    assert ids(zero, "main") == ["a"]


def test_dedup_keeps_the_strictly_higher_score() -> None:
    index = TopicMemoryIndex()
    # The same slice bound to the queried node (PRIMARY) and to its parent (PARENT).
    bind(index, "p", "same", profile=ActivationProfile(1, 1, 1))
    bind(index, "p->c", "same", profile=ActivationProfile(0, 0, 0))
    result = TopicRecallCollector().collect(index, "p->c", NOW)
    assert len(result) == 1
    # PARENT with (1,1,1) = 0.45+0.3+0.5+0.3+0.04 beats PRIMARY with zeros = 1.3.
    assert result[0].source == "PARENT"

    # An equal score does not replace: the first related path keeps the candidate.
    equal = TopicMemoryIndex()
    bind(equal, "main", "m", related=["rel1", "rel2"], profile=ActivationProfile(1, 1, 1))
    bind(equal, "rel1", "same", unit="v")
    bind(equal, "rel2", "same", unit="v")
    result = TopicRecallCollector().collect(equal, "main", NOW)
    assert [(c.ref.slice_id, c.topic_path) for c in result] == [("m", "main"), ("same", "rel1")]


def test_missing_node_collects_nothing() -> None:
    assert TopicRecallCollector().collect(TopicMemoryIndex(), "nowhere", NOW) == []
