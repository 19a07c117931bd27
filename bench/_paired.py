"""Paired comparisons on few questions: what a difference of means is worth (issue #25).

The message bench has 20 questions a half and about two gold turns a question, so one question
flipping moves a half's turn recall by up to 0.05. A table of means cannot tell a lever from
noise; this module gives, for two methods run on the same questions, the questions one wins,
loses and ties against the other, and a bootstrap interval of the mean per-question difference
(questions resampled with replacement, a fixed seed, so a rerun prints the same interval).

An interval that holds 0 says the bench cannot separate the two methods; a win/loss count
says how many questions a difference rests on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DRAWS = 10_000
LEVEL = 0.90
_EPS = 1e-9


@dataclass(frozen=True)
class Paired:
    """Method a against method b over the same ``n`` questions."""

    n: int
    diff: float  # mean of a - b per question
    lo: float  # bootstrap interval of that mean, at LEVEL
    hi: float
    wins: int  # questions where a > b
    losses: int  # questions where a < b
    ties: int

    def cell(self) -> str:
        """``+0.050 [-0.03, +0.13] 3/1/16`` (difference, interval, wins/losses/ties)."""
        return (
            f"{self.diff:+.3f} [{self.lo:+.2f}, {self.hi:+.2f}] "
            f"{self.wins}/{self.losses}/{self.ties}"
        )


def paired(a: Sequence[float], b: Sequence[float], *, draws: int = DRAWS, seed: int = 0) -> Paired:
    """Compare per-question scores ``a`` and ``b`` (same questions, same order)."""
    if len(a) != len(b):
        raise ValueError(f"paired scores differ in length: {len(a)} and {len(b)}")
    if not a:
        raise ValueError("no questions to compare")
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n = len(d)
    means = d[np.random.default_rng(seed).integers(0, n, size=(draws, n))].mean(axis=1)
    tail = (1.0 - LEVEL) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    return Paired(
        n=n,
        diff=float(d.mean()),
        lo=float(lo),
        hi=float(hi),
        wins=int((d > _EPS).sum()),
        losses=int((d < -_EPS).sum()),
        ties=int((np.abs(d) <= _EPS).sum()),
    )
