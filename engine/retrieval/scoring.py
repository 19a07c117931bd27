"""Fusion and diversification of route candidates (SPEC §1.4): RRF + coverage, exact-duplicate
dedup, and MMR. Pure functions over ids, scores and vectors; the pool is at most 80 events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np
import numpy.typing as npt

RRF_K = 60
COVERAGE_WEIGHT = 0.10
MMR_LAMBDA = 0.85

T = TypeVar("T")
_Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Scored:
    """One fused candidate, with everything an "explain" view needs.

    Attributes:
        id: Event id.
        summary_rank: 1-based rank in the summary route, None when absent.
        chunk_rank: 1-based rank in the chunk route, None when absent.
        rrf: Sum of ``1/(k + rank)`` over the routes.
        coverage: Query-term coverage in [0, 1].
        score: ``rrf + weight * coverage``.
        lexical_rank: 1-based rank in the lexical (BM25) route, None when absent or off.
        window_rank: 1-based rank in the window route, None when absent or off.
    """

    id: str
    summary_rank: int | None
    chunk_rank: int | None
    rrf: float
    coverage: float
    score: float
    lexical_rank: int | None = None
    window_rank: int | None = None


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


def _ranks(ids: Iterable[str]) -> dict[str, int]:
    """1-based rank of each id; a repeated id keeps its first (best) rank."""
    ranks: dict[str, int] = {}
    for rank, event_id in enumerate(ids, start=1):
        ranks.setdefault(event_id, rank)
    return ranks


def rrf(
    route_ranks: Sequence[Sequence[str]],
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
) -> dict[str, float]:
    """Reciprocal rank fusion.

    Args:
        route_ranks: One id list per route, best first (ranks are 1-based).
        k: The RRF constant.
        weights: One weight per route (default 1 each).

    Returns:
        ``id -> Σ_routes w/(k + rank)``; a route that lacks an id adds nothing, and a route
        weighed 0 contributes no id.
    """
    return _rrf([_ranks(route) for route in route_ranks], k, weights)


def _rrf(
    ranks: Sequence[Mapping[str, int]], k: int, weights: Sequence[float] | None
) -> dict[str, float]:
    """``rrf`` of routes already ranked (``_ranks`` of each)."""
    fused: dict[str, float] = {}
    for i, route in enumerate(ranks):
        w = 1.0 if weights is None else weights[i]
        if w == 0.0:
            continue  # a route weighed 0 is off: it brings no candidate either
        for event_id, rank in route.items():
            fused[event_id] = fused.get(event_id, 0.0) + w / (k + rank)
    return fused


def fuse(
    summary_ids: Sequence[str],
    chunk_ids: Sequence[str],
    coverage: Mapping[str, float],
    *,
    lexical_ids: Sequence[str] = (),
    k: int = RRF_K,
    weight: float = COVERAGE_WEIGHT,
    lexical_weight: float = 1.0,
    window_ids: Sequence[str] = (),
    window_weight: float = 1.0,
    summary_weight: float = 1.0,
    speaker_ids: Sequence[str] = (),
    speaker_weight: float = 0.0,
    person_ids: Sequence[str] = (),
    person_weight: float = 0.0,
    dated_ids: Sequence[str] = (),
    dated_weight: float = 0.0,
    extra: Sequence[tuple[Sequence[str], float]] = (),
) -> list[Scored]:
    """Score the union of the routes: ``rrf + weight * coverage``.

    Args:
        summary_ids: Summary-route ids, best first.
        chunk_ids: Chunk-route ids, best first.
        coverage: Coverage per id; a missing id counts as 0.
        lexical_ids: Lexical-route (BM25) ids, best first; empty when the route is off.
        k: The RRF constant.
        weight: The coverage weight.
        lexical_weight: The lexical route's weight in the RRF sum (the vector routes' is 1).
        window_ids: Window-route ids (a record with its neighbours), best first; empty when off.
        window_weight: The window route's weight in the RRF sum.
        summary_weight: The summary route's weight in the RRF sum.
        speaker_ids: Speaker-route ids (the asker's own turns), best first; empty when off.
        speaker_weight: The speaker route's weight in the RRF sum.
        person_ids: Person-route ids (messages of or about a person the query names), best
            first; empty when off or no known person is named.
        person_weight: The person route's weight in the RRF sum.
        dated_ids: Dated-route ids (for a "when" question, the candidates that state a day),
            best first; empty when off or the question does not ask when.
        dated_weight: The dated route's weight in the RRF sum.
        extra: More ranked lists, each with its weight in the RRF sum.

    Returns:
        Candidates by score descending, ties by id ascending.
    """
    by_summary, by_chunk = _ranks(summary_ids), _ranks(chunk_ids)
    by_lexical, by_window = _ranks(lexical_ids), _ranks(window_ids)
    fused = _rrf(
        (
            by_summary,
            by_chunk,
            by_lexical,
            by_window,
            _ranks(speaker_ids),
            _ranks(person_ids),
            _ranks(dated_ids),
            *(_ranks(ids) for ids, _ in extra),
        ),
        k,
        (
            summary_weight,
            1.0,
            lexical_weight,
            window_weight,
            speaker_weight,
            person_weight,
            dated_weight,
            *(weight for _, weight in extra),
        ),
    )
    scored = [
        Scored(
            event_id,
            by_summary.get(event_id),
            by_chunk.get(event_id),
            value,
            cov := coverage.get(event_id, 0.0),
            value + weight * cov,
            by_lexical.get(event_id),
            by_window.get(event_id),
        )
        for event_id, value in fused.items()
    ]
    scored.sort(key=lambda s: (-s.score, s.id))
    return scored


def share_with_neighbours(
    scored: Sequence[Scored], share: float, neighbours: Callable[[str], Sequence[str]]
) -> list[Scored]:
    """Each candidate's score plus ``share`` times the best score among its neighbours in the
    pool: a short turn ("Yes, at the park by the lake.") right after the turn that asked is
    lifted by it. Scores are read before any is raised (one step, no chain).

    Returns:
        The candidates rescored, by score descending, ties by id ascending.
    """
    if share <= 0.0:
        return list(scored)
    before = {s.id: s.score for s in scored}
    out = []
    for s in scored:
        near = [before[n] for n in neighbours(s.id) if n in before]
        bonus = share * max(near) if near else 0.0
        out.append(replace(s, score=s.score + bonus) if bonus else s)
    out.sort(key=lambda s: (-s.score, s.id))
    return out


def dedup_by_hash(ranked: Iterable[T], hash_of: Callable[[T], str | None]) -> list[T]:
    """Keep the first (best-ranked) item per non-empty content hash.

    Args:
        ranked: Items in rank order, best first (``fuse`` output, or recency order).
        hash_of: The content hash of an item; ``""`` or None (empty content) is never grouped.

    Returns:
        The surviving items, in their original order.
    """
    seen: set[str] = set()
    kept: list[T] = []
    for item in ranked:
        digest = hash_of(item)
        if digest:
            if digest in seen:
                continue
            seen.add(digest)
        kept.append(item)
    return kept


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


def by_group(
    ranked: Sequence[Scored], group_of: Callable[[str], str | None], top: int = 0
) -> list[str]:
    """The candidates ordered by their group's total score (a group: a conversation session,
    ``top`` best groups only when > 0), each group in ``ranked``'s own order; candidates
    without a group are left out. Ties by the group's best candidate's place."""
    total: dict[str, float] = {}
    first: dict[str, int] = {}
    for place, s in enumerate(ranked):
        g = group_of(s.id)
        if g is None:
            continue
        total[g] = total.get(g, 0.0) + s.score
        first.setdefault(g, place)
    order = sorted(total, key=lambda g: (-total[g], first[g]))
    if top > 0:
        order = order[:top]
    place_of = {g: i for i, g in enumerate(order)}
    kept = [s.id for s in ranked if (g := group_of(s.id)) is not None and g in place_of]
    return sorted(kept, key=lambda i: place_of[group_of(i) or ""])
