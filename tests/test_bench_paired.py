"""The message bench's paired comparison (bench/_paired.py): counts and interval."""

from __future__ import annotations

import pytest

from bench._paired import paired


def test_counts_and_mean_of_per_question_differences() -> None:
    p = paired([1.0, 0.5, 0.0, 1.0], [0.0, 0.5, 1.0, 0.5])
    assert (p.wins, p.losses, p.ties, p.n) == (2, 1, 1, 4)
    assert p.diff == pytest.approx(0.125)
    assert p.lo <= p.diff <= p.hi


def test_one_question_is_not_a_settled_difference() -> None:
    # one question of twenty gains a whole turn: the interval must reach zero
    p = paired([1.0] + [0.5] * 19, [0.0] + [0.5] * 19)
    assert p.diff == pytest.approx(0.05)
    assert p.lo == pytest.approx(0.0)
    # every question gains: the interval stays clear of zero
    q = paired([1.0] * 20, [0.5] * 20)
    assert q.lo == pytest.approx(0.5) and q.hi == pytest.approx(0.5)


def test_same_seed_same_interval_and_cell_format() -> None:
    a, b = [0.0, 1.0, 0.5, 1.0, 0.0], [0.5, 0.5, 0.5, 0.0, 0.0]
    assert paired(a, b) == paired(a, b)
    assert paired(a, b).cell().endswith(" 2/1/2")


def test_mismatched_or_empty_inputs_are_refused() -> None:
    with pytest.raises(ValueError):
        paired([1.0], [1.0, 0.0])
    with pytest.raises(ValueError):
        paired([], [])
