"""TopicMemoryIndex, path cleaning and activation profiles (SPEC §2.2, §2.3)."""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest

from mnemoql.engine.topics import (
    ActivationProfile,
    DateMemoryIndex,
    SliceRef,
    TopicMemoryIndex,
    fix_topic_path,
    normalise_related,
    stabilise_profile,
)


def f32(x: float) -> float:
    return float(np.float32(x))


# ---- profiles ----


def test_profile_defaults_and_null_fields() -> None:
    assert ActivationProfile.of() == ActivationProfile(0.55, 0.35, 0.50)
    partial = ActivationProfile.of(None, 0.9, None)
    assert (partial.activation_weight, partial.diffusion_weight) == (f32(0.55), f32(0.9))
    assert partial.context_independence_weight == 0.5


def test_profile_clamps_to_unit_interval_and_rounds_to_float32() -> None:
    p = ActivationProfile(1.5, -0.2, 0.3)
    assert (p.activation_weight, p.diffusion_weight) == (1.0, 0.0)
    assert p.context_independence_weight == f32(0.3) != 0.3
    assert ActivationProfile(float("nan"), 0.1, 0.1).activation_weight == f32(0.55)


def test_stabilise_clamp_case_single_message_without_related() -> None:
    p = stabilise_profile(ActivationProfile.of(1.5, 0.9, -0.2), has_related=False, message_count=1)
    assert p == ActivationProfile(0.95, 0.45, 0.0)
    weights = [p.activation_weight, p.diffusion_weight, p.context_independence_weight]
    assert weights == pytest.approx([0.95, 0.45, 0.0], abs=1e-6)


def test_stabilise_leaves_related_and_multi_message_slices_alone() -> None:
    p = ActivationProfile(0.8, 0.9, 0.4)
    assert stabilise_profile(p, has_related=True, message_count=2) == p
    assert stabilise_profile(None, has_related=True, message_count=5) == ActivationProfile()
    low = stabilise_profile(ActivationProfile(0.02, 0.3, 0.4), has_related=True, message_count=0)
    assert low.activation_weight == 0.0
    assert low.diffusion_weight == f32(0.3)  # under the cap: unchanged


# ---- paths ----


@pytest.mark.parametrize(
    ("raw", "fixed"),
    [
        ("a->b->c", "a->b->c"),
        (" a -> b ", "a->b"),
        ("项目[主要]->记忆 [3]->检索", "项目->记忆->检索"),
        ("a->[only note]->b", "a->b"),
        ("->a->->b->", "a->b"),
        ("a->b {slices: 3}", "a->b {slices: 3}"),
        ("a [root]", "a"),
        ("[x]", ""),
        ("   ", ""),
        ("", ""),
        (None, ""),
    ],
)
def test_fix_topic_path(raw: str | None, fixed: str) -> None:
    assert fix_topic_path(raw) == fixed


def test_normalise_related_trims_drops_blank_and_dedupes_in_order() -> None:
    assert normalise_related([" b ", "a", "", None, "b", "\t", "a ", "c"]) == ["b", "a", "c"]
    assert normalise_related(None) == []


def test_whole_path_is_trimmed_but_segments_are_not() -> None:
    index = TopicMemoryIndex()
    index.ensure("  a -> b  ")
    assert list(index.roots) == ["a "]
    assert index.find("a -> b") is not None
    assert index.find("a->b") is None
    assert index.ensure("   ") is None and index.find("") is None
    assert index.record_binding(" ", SliceRef("u", "s"), 0) is None
    assert list(index.roots) == ["a "]


def test_find_returns_none_when_any_segment_is_missing() -> None:
    index = TopicMemoryIndex()
    node = index.ensure("a->b->c")
    assert node is not None and node.path == "a->b->c"
    assert index.find("a->b->c") is node
    assert index.find("a->x->c") is None
    assert index.find("b") is None
    assert node.parent is index.find("a->b")


def test_record_binding_upserts_by_slice_ref() -> None:
    index = TopicMemoryIndex()
    ref, other = SliceRef("u", "s"), SliceRef("u", "t")
    index.record_binding("a", ref, 1, ["x", " y "], ActivationProfile(0.1, 0.1, 0.1))
    index.record_binding("a", other, 5)
    index.record_binding("a", ref, 9, ["y", "z", "x"], None)
    node = index.find("a")
    assert node is not None
    assert [b.slice_ref for b in node.bindings] == [ref, other]
    first = node.bindings[0]
    assert first.timestamp_ms == 9
    assert first.related_paths == ("x", "y", "z")
    assert first.profile == ActivationProfile()


def test_topic_tree_text_exact() -> None:
    index = TopicMemoryIndex()
    index.record_binding("work->mnemoql", SliceRef("u", "1"), 0)
    index.record_binding("work->mnemoql", SliceRef("u", "2"), 0)
    index.record_binding("life", SliceRef("u", "3"), 0)
    index.ensure("work->mnemoql->topics")
    index.record_binding("work", SliceRef("u", "4"), 0)
    index.ensure("work->partner")
    index.record_binding("life->cooking->noodles", SliceRef("u", "5"), 0)
    assert index.topic_tree_text() == (
        "work [root]\r\n"
        "work->mnemoql {slices: 2}\r\n"
        "work->mnemoql->topics {slices: 0}\r\n"
        "work->partner {slices: 0}\r\n"
        "life [root]\r\n"
        "life->cooking {slices: 0}\r\n"
        "life->cooking->noodles {slices: 1}"
    )
    assert TopicMemoryIndex().topic_tree_text() == ""


# ---- dates ----


def test_date_index_adds_if_absent_in_insertion_order_and_find_copies() -> None:
    dates = DateMemoryIndex()
    day = date(2026, 3, 1)
    a, b = SliceRef("u", "a"), SliceRef("u", "b")
    dates.record(b, day)
    dates.record(a, day)
    dates.record(b, day)
    found = dates.find(day)
    assert found == [b, a]
    assert found is not None
    found.append(SliceRef("x", "y"))
    assert dates.find(day) == [b, a]
    assert dates.find(date(2026, 3, 2)) is None
