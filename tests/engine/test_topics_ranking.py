"""Ranking activated memories: the cue score and the fusion with the vector list."""

from __future__ import annotations

import pytest

from engine.topics.ranking import (
    COVERAGE_WEIGHT,
    CUE_BONUS,
    MAX_CUE_BONUS,
    CueEvidence,
    fuse,
    rank_cued,
)
from engine.topics.scoring import MS_PER_DAY

NOW = 1_000 * MS_PER_DAY


def ev(
    event_id: str, days_old: int, sim: float | None, cov: float = 0.0, cues: int = 1
) -> CueEvidence:
    return CueEvidence(event_id, NOW - days_old * MS_PER_DAY, list(range(cues)), sim, cov)


def test_without_cues_the_order_is_the_vector_list() -> None:
    fused = fuse(["a", "b", "c"], [])
    assert [f.event_id for f in fused] == ["a", "b", "c"]
    assert [(f.vector_rank, f.cue_rank) for f in fused] == [(1, None), (2, None), (3, None)]


def test_a_memory_both_lists_hold_rises_above_single_list_ones() -> None:
    fused = fuse(["a", "b", "c", "d"], ["c", "x"])
    assert [f.event_id for f in fused] == ["c", "a", "b", "x", "d"]  # b, x tie: vector first
    c = fused[0]
    assert (c.vector_rank, c.cue_rank) == (3, 1)
    assert c.score == 1 / 63 + 1 / 61
    # single-list memories interleave by rank; on a tie the vector list goes first
    assert [f.event_id for f in fuse(["a", "b"], ["c", "x"])] == ["a", "c", "b", "x"]


def test_fusion_weights_and_duplicates() -> None:
    fused = fuse(["a", "a", "b"], ["b"], vector_weight=1.0, cue_weight=0.0)
    assert [f.event_id for f in fused] == ["a", "b"]
    assert fused[1].score == 1 / 62


def test_the_cue_score_adds_similarity_coverage_recency_and_extra_cues() -> None:
    fresh = ev("fresh", 0, 0.5)  # recency 0.30 within a day
    old = ev("old", 40, 0.5)  # 0 after 30 days
    assert fresh.score(NOW) - old.score(NOW) == pytest.approx(0.30)
    covered = ev("covered", 40, 0.5, cov=1.0)
    assert covered.score(NOW) == pytest.approx(0.5 + COVERAGE_WEIGHT)
    assert ev("many", 40, 0.5, cues=9).score(NOW) == pytest.approx(0.5 + CUE_BONUS * MAX_CUE_BONUS)
    assert ev("none", 40, None).score(NOW) == 0.0  # no vectors: similarity counts 0


def test_rank_cued_orders_by_cue_score_then_newer_then_arrival() -> None:
    evidence = [
        ev("date-only", 47, 0.20),
        ev("similar", 40, 0.80),
        ev("recent", 2, 0.70),  # 0.70 + 0.22 beats 0.80
        ev("twin-older", 50, 0.20),
        ev("twin-newer", 45, 0.20),
    ]
    assert rank_cued(evidence, NOW) == [
        "recent",
        "similar",
        "twin-newer",
        "date-only",
        "twin-older",
    ]
