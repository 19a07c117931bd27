"""Ranking activated memories: specificity, the cue score and the ranking with the vector list."""

from __future__ import annotations

import pytest

from mnemoql.engine.topics.ranking import (
    COVERAGE_WEIGHT,
    CUE_BOOST,
    RECENCY_WEIGHT,
    CueEvidence,
    cue_specificity,
    rank,
    specificity,
)
from mnemoql.engine.topics.scoring import MS_PER_DAY

NOW = 1_000 * MS_PER_DAY


def ev(
    event_id: str,
    sim: float | None,
    *,
    days_old: int = 40,
    cues: int = 0,
    spec: float = 0.0,
    cov: float = 0.0,
) -> CueEvidence:
    return CueEvidence(event_id, NOW - days_old * MS_PER_DAY, list(range(cues)), sim, cov, spec)


def test_specificity_is_how_much_a_cue_narrows() -> None:
    assert specificity(1, 100) == 1.0
    assert specificity(10, 100) == pytest.approx(0.5)
    assert specificity(100, 100) == 0.0 and specificity(150, 100) == 0.0
    assert specificity(0, 100) == 0.0 and specificity(1, 1) == 0.0
    assert specificity(2, 100) > specificity(20, 100) > specificity(80, 100) > 0


def test_specificity_adds_up_over_the_cues_that_found_a_memory() -> None:
    got = cue_specificity([["a"], ["a", "b"], ["a", "b", "c", "d"]], 4)
    assert got["a"] == pytest.approx(1 + 0.5 + 0.0)
    assert got["b"] == pytest.approx(0.5) and got["c"] == 0.0
    assert cue_specificity([["a", "a"]], 4)["a"] == pytest.approx(0.5)  # a repeat counts once


def test_without_cues_the_order_is_the_vector_search() -> None:
    evidence = [ev("a", 0.9), ev("b", 0.8), ev("c", 0.7), ev("unlisted", 0.95)]
    got = rank(["a", "b", "c"], evidence, NOW)
    assert [r.event_id for r in got] == ["a", "b", "c"]  # a memory outside both is not ranked
    assert [(r.vector_rank, r.cue_rank) for r in got] == [(1, None), (2, None), (3, None)]
    assert [r.relevance for r in got] == [0.9, 0.8, 0.7]


def test_the_cue_score_adds_specificity_coverage_and_recency_only_with_a_cue() -> None:
    assert ev("x", 0.5, cov=1.0, days_old=0).cue_score(NOW) == 0.0  # no cue found it
    specific = ev("x", 0.5, cues=1, spec=1.0)
    assert specific.cue_score(NOW) == pytest.approx(CUE_BOOST)
    covered = ev("x", 0.5, cues=1, cov=0.5)
    assert covered.cue_score(NOW) == pytest.approx(COVERAGE_WEIGHT * 0.5)
    fresh = ev("x", 0.5, cues=1, days_old=0)  # Partner's tier within a day: 0.30
    assert fresh.cue_score(NOW) == pytest.approx(RECENCY_WEIGHT * 0.30) == pytest.approx(CUE_BOOST)
    assert ev("x", 0.5, cues=1, days_old=5).recency(NOW) == 0.15
    assert ev("x", None, cues=1, spec=1.0).relevance(NOW) == pytest.approx(CUE_BOOST)


def test_a_specific_cue_lifts_a_memory_over_a_slightly_closer_one_but_no_further() -> None:
    evidence = [
        ev("closest", 0.900),
        ev("close", 0.895),
        ev("named", 0.893, cues=1, spec=1.0),  # a cue names only this memory
        ev("far", 0.850, cues=1, spec=1.0),  # named too, but 0.05 further than the others
        ev("vague", 0.880, cues=1, spec=0.0),  # a cue every memory answers to
    ]
    got = rank(["closest", "close", "named", "vague"], evidence, NOW)
    assert [r.event_id for r in got] == ["named", "closest", "close", "vague", "far"]
    by = {r.event_id: r for r in got}
    assert (by["named"].vector_rank, by["named"].cue_rank) == (3, 1)
    assert (by["far"].vector_rank, by["far"].cue_rank) == (None, 3)  # found by its cue alone
    assert by["vague"].cue_rank == 2 and by["closest"].cue_rank is None


def test_ties_go_to_the_vector_rank_then_the_newer_memory() -> None:
    evidence = [ev("old", 0.8, cues=1, days_old=50), ev("new", 0.8, cues=1, days_old=45)]
    assert [r.event_id for r in rank([], evidence, NOW)] == ["new", "old"]
    assert [r.event_id for r in rank(["old"], evidence, NOW)] == ["old", "new"]
