"""How the embedded store answers a vector route: exact scan, subset scan, or ANN + rescoring.

* **Subset scan**: when ``restrict`` (expand), an entity filter or a date range leaves at most
  ``SUBSET_MAX`` events, only those rows are scored (exact, and far cheaper than the matrix).
* **ANN**: above ``AnnSettings.min_vectors`` rows, the route asks its HNSW index for
  ``limit x first_overfetch`` candidates (plus room for the excluded ids: at most ``limit``;
  see *Sessions* below), adds every row the index does
  not cover yet, drops what fails the filters, rescores the rest exactly from the float32 mirror
  and cuts the page by (cosine DESC, id ASC), as the exact scan orders it. A fetch that leaves
  fewer than ``limit`` events is repeated once, four times larger, then the exact scan answers.
  A search asks for both routes at once (``pool_hits``): when both come from their indexes,
  each rescores the union of both indexes' candidates, so an event one graph does not reach
  is still found through the other.
* **Adaptive over-fetch** (issue 30): the page is kept when it is *stable*: its last score
  lies at least ``MARGIN`` above the worst candidate the index gave, so every event scoring
  above the page's last was within the index's reach. Otherwise the fetch doubles, up to
  ``limit x overfetch`` (the fixed fetch before this). A page that a larger fetch left
  unchanged is not taken as stable: on the tune queries that rule kept wrong pages from a
  first fetch of 2x (98.0% of searches delivered the exact scan's 4 events).
* **Sessions** (a session excludes what it was given, up to 640 ids): the fetch holds at most
  ``limit`` keys of room for them, not one per id; a session's other questions' events seldom
  lie near this one (640 ids cost every search 2.9x before). When a given event would stand on
  a first call's page (its summary scores at least the last of the summary index's own top
  ``limit``: ``_follows_up``), the page lies deeper and the first fetch starts grown once: the
  fourth call of a question picked the exact scan's 4 events in 95.0% of held-out queries
  before, 99.5% now (bench/results/search_ledger.md; chosen on the tune queries).
* **Exact scan** (``_exact``) everywhere else, and always with ``mode = "exact"``. The exact
  scores of candidate rows (subset or index) are ``_rescore``.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import numpy as np

from mnemoql.engine.models import Filters, Hit, RouteName
from mnemoql.engine.store.embedded._ann import AnnIndexes, rows_of_keys
from mnemoql.engine.store.embedded._exact import chunk_hits, entity_top, event_mask, summary_hits
from mnemoql.engine.store.embedded._hnsw import Hnsw
from mnemoql.engine.store.embedded._index import F32, I64, EntityView, EventView, Mask, date_key
from mnemoql.engine.store.embedded._rescore import (
    Scored,
    dot,
    order_by_score,
    score_rows,
    subset_hits,
)
from mnemoql.engine.store.embedded._rowsets import among, distinct

T = TypeVar("T")
SUBSET_MAX = 20_000
RETRY_FACTOR = 4
# How far the page's last exact score must lie above the worst candidate the index returned
# for the page to be kept without a larger fetch: the int8 graph orders candidates by an
# approximate cosine, this covers its error (chosen on the tune queries of
# bench/results/search_latency_tune.md; docs/DECISIONS.md, "Adaptive over-fetch")
MARGIN = 0.01
GROWTH = 2  # an unstable page is fetched again this many times larger


@dataclass(slots=True)
class Fetched:
    """A route's candidate rows that pass the filters, and which of them the index gave
    (``own``: None when the index gave every key it holds, so nothing lies beyond)."""

    rows: I64
    own: I64 | None


def route_hits(
    route: RouteName,
    view: EventView,
    generation: int,
    ann: AnnIndexes | None,
    query: F32,
    filters: Filters,
    exclude: frozenset[str],
    restrict: frozenset[str] | None,
    allowed: frozenset[str] | None,
    limit: int,
) -> list[Hit]:
    """The route's top ``limit`` events (see the module docstring for the strategy)."""
    if view.n == 0 or query.shape[0] != view.dims:
        return []
    subset, mask = _plan(view, filters, exclude, restrict, allowed)
    if subset is not None:
        return subset_hits(route, view, query, subset, limit)
    hits = _adaptive(
        (route,), view, generation, ann, query, filters, exclude, mask, limit, union=False
    )
    if hits is not None:
        return hits[0]
    return _exact(route, view, query, filters, exclude, restrict, allowed, mask, limit)


def pool_hits(
    view: EventView,
    generation: int,
    ann: AnnIndexes | None,
    query: F32,
    filters: Filters,
    exclude: frozenset[str],
    restrict: frozenset[str] | None,
    allowed: frozenset[str] | None,
    limit: int,
    side: Executor | None = None,
    early: Callable[[I64], None] | None = None,
) -> tuple[list[Hit], list[Hit]]:
    """Both routes' top ``limit`` events, as ``route_hits`` gives them, except that when both
    come from their indexes each route rescores the union of both indexes' candidates (the
    chunk index searched on ``side``, a thread that only ever runs such searches, meanwhile).

    Why: an HNSW graph has regions a search does not reach (at 1M text-like events, 8 of 200
    queries lost one of their exact top-4 events that way, some ranked first or second by the
    exact scan), but an event's summary and its chunks are near each other, and every event
    missed by one index was among the other index's candidates (docs/DECISIONS.md, "Holes in
    the graph"). Exact rescoring of a larger set can only move a route closer to
    the exact scan.

    ``early``: given the summary index's candidate rows (that pass the filters) once, while
    the side thread still searches the chunk index, to use this thread's wait."""
    if view.n == 0 or query.shape[0] != view.dims:
        return [], []
    subset, mask = _plan(view, filters, exclude, restrict, allowed)
    if subset is not None:
        return subset_hits("summary", view, query, subset, limit), subset_hits(
            "chunk", view, query, subset, limit
        )
    routes: tuple[RouteName, RouteName] = ("summary", "chunk")
    both = _adaptive(
        routes, view, generation, ann, query, filters, exclude, mask, limit, side=side, early=early
    )
    if both is not None:
        return both[0], both[1]
    # at most one index answered: that route alone (adaptive), the exact scan for the other
    out: list[list[Hit]] = []
    for route in routes:
        one = _adaptive((route,), view, generation, ann, query, filters, exclude, mask, limit)
        if one is None:
            one = [_exact(route, view, query, filters, exclude, restrict, allowed, mask, limit)]
        out.append(one[0])
    return out[0], out[1]


def _adaptive(
    routes: tuple[RouteName, ...],
    view: EventView,
    generation: int,
    ann: AnnIndexes | None,
    query: F32,
    filters: Filters,
    exclude: frozenset[str],
    mask: Mask | None,
    limit: int,
    union: bool = True,
    side: Executor | None = None,
    early: Callable[[I64], None] | None = None,
) -> list[list[Hit]] | None:
    """The routes' pages from their indexes' candidates (each route rescoring the union of
    all of them when ``union``), fetched ``first_overfetch`` x the page and grown by
    ``GROWTH`` up to ``overfetch`` x while a page is unstable (module docstring); the routes
    after the first search their indexes on ``side`` while the first searches its own. None
    when any route's index cannot answer (the caller scans exactly)."""
    if ann is None or not ann.enabled:
        return None
    most = max(1, ann.settings.overfetch)
    per = min(max(1, ann.settings.first_overfetch), most)
    # room for the excluded events the fetch meets, not for the session's whole ledger: its
    # other questions' events seldom lie near this query; a follow-up's page lies deeper
    room = min(len(exclude), limit)
    exclude_rows = view.rows(exclude) if exclude else np.zeros(0, np.int64)  # once a search
    given = _passing(view, exclude_rows, filters, np.zeros(0, np.int64), mask)  # what it was given
    if given.size and _follows_up(view, generation, ann, query, given, limit):
        per = min(most, per * GROWTH)
    while True:
        fetch = limit * per + room

        def fetched(route: RouteName, fetch: int = fetch) -> Fetched | None:
            return _candidates(route, view, generation, ann, query, filters, exclude_rows,
                               mask, fetch, limit)  # fmt: skip

        # the other index searched on the side thread meanwhile (usearch drops the GIL)
        try:
            later = [side.submit(fetched, r) for r in routes[1:]] if side is not None else []
        except RuntimeError:  # the store is closing under this search: all of it here
            later = []
        got = [fetched(routes[0])]
        if early is not None and later and got[0] is not None:
            early(got[0].rows)  # once, while the side thread searches
            early = None
        got += [beside(f, partial(fetched, r)) for f, r in zip(later, routes[1:], strict=False)]
        got += [fetched(r) for r in routes[1 + len(later) :]]
        if any(g is None for g in got):
            return None
        found = [g for g in got if g is not None]
        pool = distinct(found[0].rows, found[1].rows) if union and len(found) == 2 else None
        scored = [
            score_rows(route, view, query, got.rows if pool is None else pool, limit)
            for route, got in zip(routes, found, strict=True)
        ]
        pages = [s.hits for s in scored]
        if per >= most or all(
            _stable(s, got.own, limit) for s, got in zip(scored, found, strict=True)
        ):
            return pages
        per = min(most, per * GROWTH)


def beside(later: Future[T], here: Callable[[], T]) -> T:
    """The result of work handed to a side thread, or ``here()`` on this thread when that
    thread has not started it yet (on a busy machine it waits for a core: doing the work
    here then costs less than waiting for it to wake)."""
    return here() if later.cancel() else later.result()


def _follows_up(
    view: EventView, generation: int, ann: AnnIndexes, query: F32, given: I64, limit: int
) -> bool:
    """Whether an event the session was given would stand on a first call's page of this
    query: its summary scores at least the last of the summary index's own top ``limit``.
    The page then lies deeper than a first call's, and its first fetch is grown once."""
    h = ann.index("summary", generation)
    keys = h.search(query, limit) if h is not None else None
    if keys is None:
        return False
    rows = rows_of_keys(view.seqs, view.n, keys)
    rows = rows[view.has_vec[rows]]
    if rows.size < limit:
        return False
    cut = dot(view.vecs, rows, query).min()
    mine = given[view.has_vec[given]]
    return bool(mine.size) and bool((dot(view.vecs, mine, query) >= cut).any())


def _stable(scored: Scored, own: I64 | None, limit: int) -> bool:
    """True when no event beyond the index's fetch can enter the page: the index gave all it
    holds, or the page's last score lies ``MARGIN`` above the worst candidate it gave."""
    if own is None:
        return True
    if len(scored.hits) < limit:
        return False
    given = among(scored.rows, own)
    if not given.any():
        return False
    return scored.hits[-1].score >= float(scored.scores[given].min()) + MARGIN


def _plan(
    view: EventView,
    filters: Filters,
    exclude: frozenset[str],
    restrict: frozenset[str] | None,
    allowed: frozenset[str] | None,
) -> tuple[I64 | None, Mask | None]:
    """``(rows, None)``: narrowing filters leave at most ``SUBSET_MAX`` rows, score exactly
    those; ``(None, mask)``: they leave more, here is their mask over every row; ``(None,
    None)``: no narrowing filter (the mask is built only if the exact scan needs it)."""
    narrowed = restrict is not None or allowed is not None or filters.date_from or filters.date_to
    if not narrowed:
        return None, None
    mask = event_mask(view, filters, exclude, restrict, allowed)
    rows = np.flatnonzero(mask)
    return (rows, None) if rows.size <= SUBSET_MAX else (None, mask)


def _exact(
    route: RouteName,
    view: EventView,
    query: F32,
    filters: Filters,
    exclude: frozenset[str],
    restrict: frozenset[str] | None,
    allowed: frozenset[str] | None,
    mask: Mask | None,
    limit: int,
) -> list[Hit]:
    if mask is None:
        mask = event_mask(view, filters, exclude, restrict, allowed)
    return (summary_hits if route == "summary" else chunk_hits)(view, query, mask, limit)


def _passing(
    view: EventView, rows: I64, filters: Filters, exclude_rows: I64, mask: Mask | None
) -> I64:
    """The candidate rows that pass the filters (live, dates, not excluded)."""
    if mask is not None:
        return rows[mask[rows]]
    ok = view.live[rows].copy()
    if filters.date_from is not None:
        ok &= view.dates[rows] >= date_key(filters.date_from)
    if filters.date_to is not None:
        ok &= view.dates[rows] <= date_key(filters.date_to)
    if exclude_rows.size:
        ok &= ~among(rows, exclude_rows)
    out: I64 = rows[ok]
    return out


def _candidates(
    route: RouteName,
    view: EventView,
    generation: int,
    ann: AnnIndexes | None,
    query: F32,
    filters: Filters,
    exclude_rows: I64,
    mask: Mask | None,
    fetch: int,
    limit: int,
) -> Fetched | None:
    """The event rows the route's index proposes among its best ``fetch`` keys (and the rows
    it does not cover yet) that pass the filters, at least ``limit`` of them; None when the
    exact scan must answer (no index, the index busy, or too few candidates even after a
    larger fetch)."""
    h = ann.index(route, generation) if ann is not None and ann.enabled else None
    if h is None:
        return None
    n = view.n
    covered = min(h.covered, view.nc if route == "chunk" else n)
    if route == "chunk":  # the uncovered chunks' events, then the index's
        tail = distinct(view.crow[covered : view.nc])
    else:
        tail = np.arange(covered, n, dtype=np.int64)
    for _attempt in range(2):
        keys = h.search(query, fetch)
        if keys is None:
            return None
        own = rows_of_keys(view.seqs, n, keys)
        rows = distinct(own, tail)
        if route == "summary":
            rows = rows[view.has_vec[rows]]
        cand = _passing(view, rows, filters, exclude_rows, mask)
        if cand.size >= limit:
            return Fetched(cand, None if keys.size < fetch else own)
        if keys.size < fetch:  # the index gave all it has: too few pass, scan exactly
            return None
        fetch *= RETRY_FACTOR
    return None


def entity_hits(
    view: EntityView,
    generation: int,
    ann: AnnIndexes | None,
    kind: str,
    query: F32,
    k: int,
    min_cosine: float | None,
) -> list[tuple[str, float]]:
    """Top ``k`` entities by exact cosine (>= ``min_cosine``), candidates from the index when
    the label has one; the exact scan when the index cannot vouch for the answer."""
    n = view.n
    if n == 0 or k <= 0 or query.shape[0] != view.dims:
        return []
    h = ann.index(kind, generation) if ann is not None and ann.enabled else None
    if h is not None:
        assert ann is not None
        found = _entities_by_index(view, h, query, k, min_cosine, ann.settings.overfetch)
        if found is not None:
            return found
    return entity_top(view, query, k, min_cosine)


def _entities_by_index(
    view: EntityView, h: Hnsw, query: F32, k: int, min_cosine: float | None, overfetch: int
) -> list[tuple[str, float]] | None:
    n = view.n
    fetch = k * overfetch
    keys = h.search(query, fetch)
    if keys is None:
        return None
    rows = rows_of_keys(view.seqs, n, keys)
    rows = distinct(rows, np.arange(min(h.covered, n), n, dtype=np.int64))
    rows = rows[view.has_vec[rows]]
    scores = dot(view.vecs, rows, query)
    if min_cosine is not None:
        keep = scores >= np.float32(min_cosine)
        # every candidate passing: more may lie beyond the fetch, unless it was all there is
        if keep.all() and keys.size >= fetch:
            return None
        rows, scores = rows[keep], scores[keep]
    elif rows.size < k and keys.size >= fetch:
        return None
    order = order_by_score(scores, rows, view.ids, k)
    return [(view.ids[int(rows[i])], float(scores[i])) for i in order]
