"""Diversification of the fused candidates (SPEC §1.4): MMR over a deduplicated pool, where two
events' redundancy is the larger of their summaries' clipped cosine and their chunk hashes'
overlap. Pure functions over scores, vectors and hash sets; the pool is at most 80 events.

It is separate from ``scoring`` because it answers another question: ``scoring`` fuses the
routes' ranks into one score per candidate (``Scored``); this module reads those scores with the
vectors and chunk hashes to pick, in order, the candidates that do not repeat one another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mnemoql.engine.retrieval.scoring import Scored

MMR_LAMBDA = 0.85

_Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class MmrPick:
    """One MMR selection.

    Attributes:
        scored: The candidate picked.
        step: 1-based order of selection.
        relevance: ``score / max score`` over the pool.
        redundancy: Max redundancy against the events selected before it (0 for the first).
        objective: ``lam * relevance - (1 - lam) * redundancy``, the value it won with.
    """

    scored: Scored
    step: int
    relevance: float
    redundancy: float
    objective: float

    @property
    def id(self) -> str:
        return self.scored.id


def _dims(vectors: Sequence[npt.ArrayLike]) -> int:
    """The one dimension of the vectors (each flattened).

    Raises:
        ValueError: When they do not share one.
    """
    dims = {int(np.size(v)) for v in vectors}
    if len(dims) > 1:
        raise ValueError("MMR vectors must share one dimension")
    return dims.pop()


def unit_rows(vectors: Sequence[npt.ArrayLike | None]) -> _Matrix:
    """The vectors as unit rows (float64); a missing or zero vector is a zero row, so its
    cosine with everything is 0.

    Raises:
        ValueError: When the vectors do not share one dimension.
    """
    present = [i for i, v in enumerate(vectors) if v is not None]
    if not present:
        return np.zeros((len(vectors), 0), dtype=np.float64)
    given = [v for v in vectors if v is not None]
    flat = [v for v in given if isinstance(v, np.ndarray) and v.ndim == 1]
    if len(flat) == len(vectors):  # the usual case: every vector a flat array, one conversion
        if len({v.shape for v in flat}) > 1:
            raise ValueError("MMR vectors must share one dimension")
        mat = np.array(flat, dtype=np.float64)
    else:
        mat = np.zeros((len(vectors), _dims(given)), dtype=np.float64)
        mat[present] = [np.asarray(v, dtype=np.float64).ravel() for v in given]
    norms = np.sqrt(np.add.reduce(mat * mat, axis=1))  # np.linalg.norm's own sum, one copy less
    nonzero = norms > 0
    if nonzero.all():
        mat /= norms[:, None]
    else:
        mat[nonzero] /= norms[nonzero, None]
    return mat


def cosine_matrix(vectors: Sequence[npt.ArrayLike | None]) -> _Matrix:
    """Pairwise raw cosine; a missing or zero vector has cosine 0 with everything.

    Raises:
        ValueError: When the vectors do not share one dimension.
    """
    mat = unit_rows(vectors)
    out: _Matrix = mat @ mat.T
    return out


def _incidence(hash_sets: Sequence[Set[str]]) -> _Matrix:
    """One 0/1 row per set over the union of the sets' hashes."""
    vocab: dict[str, int] = {}
    for hashes in hash_sets:
        for h in hashes:
            vocab.setdefault(h, len(vocab))
    incidence = np.zeros((len(hash_sets), len(vocab)), dtype=np.float64)
    for i, hashes in enumerate(hash_sets):
        incidence[i, [vocab[h] for h in hashes]] = 1.0
    return incidence


def _overlap(inter: _Matrix, sizes: _Matrix, other: _Matrix | float) -> _Matrix:
    smaller = np.minimum(sizes, other)
    out: _Matrix = np.divide(inter, smaller, out=np.zeros_like(inter), where=smaller > 0)
    return out


def overlap_matrix(hash_sets: Sequence[Set[str]]) -> _Matrix:
    """Pairwise overlap coefficient ``|A∩B| / min(|A|,|B|)``; 0 when either set is empty."""
    incidence = _incidence(hash_sets)
    sizes = incidence.sum(axis=1)
    return _overlap(incidence @ incidence.T, sizes[:, None], sizes[None, :])


def redundancy_matrix(
    vectors: Sequence[npt.ArrayLike | None], hash_sets: Sequence[Set[str]]
) -> _Matrix:
    """``max(clip(raw cosine, 0, 1), chunk-hash overlap)`` for every pair."""
    cos = np.clip(cosine_matrix(vectors), 0.0, 1.0)
    return np.maximum(cos, overlap_matrix(hash_sets))


class Redundancy:
    """``redundancy_matrix`` one row at a time: MMR reads only the rows of its picks (a
    handful), so the whole pool-by-pool matrix is never built. The overlaps of a row are
    counted from the sets that share a hash with its own (few: most events' chunks are their
    own), the same integer counts and quotients the incidence product gives."""

    def __init__(
        self, vectors: Sequence[npt.ArrayLike | None], hash_sets: Sequence[Set[str]]
    ) -> None:
        self._unit = unit_rows(vectors)
        self._sets = hash_sets
        self._sizes = [len(h) for h in hash_sets]
        self._owners: dict[str, list[int]] = {}
        for j, hashes in enumerate(hash_sets):
            for h in hashes:
                self._owners.setdefault(h, []).append(j)

    def row(self, i: int) -> _Matrix:
        """``redundancy_matrix(...)[i]``."""
        cos = (self._unit @ self._unit[i]).clip(0.0, 1.0)
        shared: dict[int, int] = {}
        for h in self._sets[i]:
            for j in self._owners[h]:
                shared[j] = shared.get(j, 0) + 1
        overlap = np.zeros(len(self._sizes), dtype=np.float64)
        mine = self._sizes[i]
        for j, inter in shared.items():  # inter > 0, so both sets are non-empty
            overlap[j] = inter / min(self._sizes[j], mine)
        out: _Matrix = np.maximum(cos, overlap)
        return out


def mmr(
    pool: Sequence[Scored],
    vectors: Mapping[str, npt.ArrayLike | None],
    chunk_hashes: Mapping[str, Set[str]],
    quota: int,
    lam: float = MMR_LAMBDA,
) -> list[MmrPick]:
    """Greedy maximal marginal relevance over a deduplicated pool.

    Each step picks the argmax of ``lam * rel(e) - (1 - lam) * max_{s∈S} red(e, s)`` where
    ``rel = score / max score`` and S holds the events picked in this call. Ties go to the
    higher score, then the smaller id.

    Args:
        pool: Fused, deduplicated candidates (any order).
        vectors: Summary embedding per id; missing or None counts as cosine 0.
        chunk_hashes: ``text_hash`` set of each event's chunks; missing means empty.
        quota: Maximum number of picks.
        lam: The relevance/diversity trade-off.

    Returns:
        The picks in selection order.
    """
    n = len(pool)
    if n == 0 or quota <= 0:
        return []
    scores = np.array([s.score for s in pool], dtype=np.float64)
    top = scores.max()
    rel = scores / top if top > 0 else np.zeros(n)
    red = Redundancy(
        [vectors.get(s.id) for s in pool], [chunk_hashes.get(s.id, frozenset()) for s in pool]
    )
    max_red = np.zeros(n)
    open_ = np.ones(n, dtype=bool)
    picks: list[MmrPick] = []
    lam_rel, share = lam * rel, 1.0 - lam  # the same products every step
    steps = min(quota, n)
    for step in range(1, steps + 1):
        objective = lam_rel - share * max_red
        best_value = objective[open_].max()
        tied = np.flatnonzero(open_ & (objective == best_value)).tolist()
        i = min(tied, key=lambda j: (-pool[j].score, pool[j].id))
        picks.append(MmrPick(pool[i], step, float(rel[i]), float(max_red[i]), float(best_value)))
        open_[i] = False
        if step < steps:  # the last pick's redundancies would serve no later step
            max_red = np.maximum(max_red, red.row(i))
    return picks
