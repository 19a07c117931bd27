from __future__ import annotations

import numpy as np
import pytest

from mnemoql.engine.retrieval.diversity import (
    Redundancy,
    mmr,
    overlap_matrix,
    redundancy_matrix,
    unit_rows,
)
from mnemoql.engine.retrieval.scoring import Scored, dedup_by_hash, fuse, rrf


def _scored(event_id: str, score: float) -> Scored:
    return Scored(event_id, None, None, score, 0.0, score)


def test_rrf_sums_reciprocal_ranks_with_k60() -> None:
    fused = rrf([["a", "b", "c"], ["b", "d"]])
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)
    assert fused["d"] == pytest.approx(1 / 62)


def test_rrf_takes_k_and_keeps_first_rank_of_a_repeat() -> None:
    assert rrf([["a", "a"]], k=0) == {"a": 1.0}


def test_fuse_adds_ten_percent_coverage_and_sorts_with_id_ties() -> None:
    out = fuse(["a", "b"], ["b", "c"], {"c": 1.0, "a": 0.5})
    assert [s.id for s in out] == ["c", "a", "b"]
    c, a, b = out
    assert c.score == pytest.approx(1 / 62 + 0.10)
    assert a.score == pytest.approx(1 / 61 + 0.05)
    assert b.rrf == pytest.approx(1 / 62 + 1 / 61)
    assert (b.summary_rank, b.chunk_rank, b.coverage) == (2, 1, 0.0)
    assert (c.summary_rank, c.chunk_rank) == (None, 2)


def test_fuse_breaks_equal_scores_by_id() -> None:
    out = fuse(["b"], ["a"], {})
    assert [s.id for s in out] == ["a", "b"]


def test_dedup_keeps_best_per_hash_and_never_groups_empty() -> None:
    ranked = [_scored(i, 1.0 - n / 10) for n, i in enumerate("abcdef")]
    hashes = {"a": "h1", "b": "h2", "c": "h1", "d": "", "e": "", "f": "h2"}
    kept = dedup_by_hash(ranked, lambda s: hashes[s.id])
    assert [s.id for s in kept] == ["a", "b", "d", "e"]


def test_dedup_treats_none_as_empty() -> None:
    assert dedup_by_hash(["x", "y"], lambda _: None) == ["x", "y"]


def test_overlap_coefficient_uses_the_smaller_set() -> None:
    m = overlap_matrix([{"1", "2", "3", "4"}, {"3", "4"}, set(), {"9"}])
    assert m[0, 1] == pytest.approx(1.0)
    assert m[1, 0] == pytest.approx(1.0)
    assert m[0, 2] == 0.0
    assert m[0, 3] == 0.0


def test_redundancy_is_max_of_clipped_cosine_and_overlap() -> None:
    vecs = [np.array([1.0, 0.0]), np.array([-1.0, 0.0]), np.array([0.6, 0.8]), None]
    hashes = [{"x", "y"}, {"x"}, set(), {"x"}]
    red = redundancy_matrix(vecs, hashes)
    assert red[0, 1] == pytest.approx(1.0)  # cosine -1 clipped to 0, overlap 1
    assert red[0, 2] == pytest.approx(0.6)  # cosine
    assert red[2, 3] == 0.0  # a missing vector counts as cosine 0
    assert red[1, 3] == pytest.approx(1.0)


def test_redundancy_rows_are_the_matrix_rows() -> None:
    # MMR reads rows one pick at a time; each must be the pairwise matrix's row
    rng = np.random.default_rng(3)
    vecs: list[np.ndarray | None] = [rng.normal(size=8).astype(np.float32) for _ in range(30)]
    vecs[4], vecs[9] = None, np.zeros(8, dtype=np.float32)
    hashes = [{str(h) for h in rng.integers(0, 12, int(rng.integers(0, 4)))} for _ in range(30)]
    red = Redundancy(vecs, hashes)
    full = redundancy_matrix(vecs, hashes)
    unit, overlap = unit_rows(vecs), overlap_matrix(hashes)
    for i in range(30):
        np.testing.assert_allclose(red.row(i), full[i], rtol=0, atol=1e-12)
        # and the very floats of the row's own products: MMR's picks and scores stay the same
        want = np.maximum(np.clip(unit @ unit[i], 0.0, 1.0), overlap[i])
        assert red.row(i).tobytes() == want.tobytes()
    none = Redundancy([None, None], [set(), set()])
    assert none.row(1).tolist() == [0.0, 0.0]


def test_mmr_prefers_a_diverse_event_over_a_near_duplicate() -> None:
    pool = [_scored("a", 1.0), _scored("b", 0.95), _scored("c", 0.85)]
    vectors = {"a": np.array([1.0, 0.0]), "b": np.array([1.0, 0.01]), "c": np.array([0.0, 1.0])}
    picks = mmr(pool, vectors, {}, quota=3)
    assert [p.id for p in picks] == ["a", "c", "b"]  # pure score order would be a, b, c
    assert [p.step for p in picks] == [1, 2, 3]
    assert picks[0].objective == pytest.approx(0.85)
    assert picks[1].objective == pytest.approx(0.85 * 0.85)
    assert picks[2].redundancy == pytest.approx(1.0, abs=1e-4)
    assert picks[2].objective == pytest.approx(0.85 * 0.95 - 0.15 * picks[2].redundancy)


def test_mmr_uses_chunk_overlap_as_redundancy() -> None:
    pool = [_scored("a", 1.0), _scored("b", 0.95), _scored("c", 0.85)]
    hashes = {"a": {"h1", "h2"}, "b": {"h2"}, "c": {"h9"}}
    picks = mmr(pool, {}, hashes, quota=2)
    assert [p.id for p in picks] == ["a", "c"]


def test_mmr_stops_at_quota_and_on_empty_pool() -> None:
    pool = [_scored(i, 1.0 - n / 10) for n, i in enumerate("abcdef")]
    assert [p.id for p in mmr(pool, {}, {}, quota=4)] == ["a", "b", "c", "d"]
    assert mmr([], {}, {}, quota=4) == []
    assert mmr(pool, {}, {}, quota=0) == []


def test_mmr_ties_go_to_higher_score_then_id() -> None:
    # With lam=0.5, after a: b scores 0.5*0.5 - 0 = 0.25 and c 0.5*0.75 - 0.5*0.25 = 0.25.
    pool = [_scored("a", 1.0), _scored("b", 0.5), _scored("c", 0.75)]
    hashes = {"a": {"1", "2", "3", "4"}, "b": {"x"}, "c": {"1", "5", "6", "7"}}
    picks = mmr(pool, {}, hashes, quota=2, lam=0.5)
    assert [p.id for p in picks] == ["a", "c"]
    assert picks[1].objective == 0.25
    same = [_scored("z", 0.5), _scored("y", 0.5)]
    assert [p.id for p in mmr(same, {}, {}, quota=2)] == ["y", "z"]


def test_mmr_rejects_vectors_of_mixed_dimensions() -> None:
    pool = [_scored("a", 1.0), _scored("b", 0.5)]
    with pytest.raises(ValueError):
        mmr(pool, {"a": np.ones(2), "b": np.ones(3)}, {}, quota=2)


def test_rrf_weights_each_route() -> None:
    from mnemoql.engine.retrieval.scoring import rrf

    plain = rrf([["a", "b"], ["b"]], k=60)
    weighted = rrf([["a", "b"], ["b"]], k=60, weights=(1.0, 0.5))
    assert plain["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert weighted["b"] == pytest.approx(1 / 62 + 0.5 / 61)
    assert weighted["a"] == plain["a"] == pytest.approx(1 / 61)


def test_fuse_ranks_the_lexical_route_with_its_weight() -> None:
    out = fuse(["a"], ["a"], {}, lexical_ids=["b", "a"], lexical_weight=2.0)
    by_id = {s.id: s for s in out}
    assert by_id["b"].lexical_rank == 1 and by_id["a"].lexical_rank == 2
    assert by_id["b"].rrf == pytest.approx(2 / 61)
    assert by_id["a"].rrf == pytest.approx(2 / 61 + 2 / 62)
    assert [s.id for s in out] == ["a", "b"]
