"""Fusion of route candidates (SPEC §1.4): RRF + coverage, the neighbour share, exact-duplicate
dedup and the grouping by session. Pure functions over ids and scores; the pool is at most 80
events. MMR over the fused pool is ``diversity``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

RRF_K = 60
COVERAGE_WEIGHT = 0.10

T = TypeVar("T")


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
