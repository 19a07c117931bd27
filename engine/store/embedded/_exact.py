"""The exact scan over the embedded store's mirror views: a search's filter mask and the top rows.

Every stored vector is L2-normalised, so a route's cosine is one matrix-vector product over the
view's first ``n`` rows; the page is cut by (cosine DESC, id ASC). The views themselves are
``_index``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mnemoql.engine.models import Filters, Hit
from mnemoql.engine.store.embedded._index import F32, I64, EntityView, EventView, Mask, date_key


def _top(scores: F32, mask: Mask, keys: Sequence[str], key_rows: I64 | None, limit: int) -> I64:
    """Positions of the best ``limit`` masked scores, ordered by (score DESC, key ASC).

    Masked-out scores become -inf (filters apply before the cut); ``argpartition`` finds the
    cut score, everything tied with it is kept so the id tie-break is exact, and only that
    short list is sorted.
    """
    n = scores.shape[0]
    count = int(np.count_nonzero(mask))
    if limit <= 0 or count == 0:
        return np.zeros(0, dtype=np.int64)
    if count < n:
        scores = np.where(mask, scores, np.float32(-np.inf))
    k = min(limit, count)
    if count > k:
        cut = scores[np.argpartition(scores, n - k)[n - k :]].min()
        cand = np.flatnonzero(scores >= cut)
    else:
        cand = np.flatnonzero(mask)

    def order_key(i: int) -> tuple[float, str]:
        pos = int(cand[i])
        return -float(scores[pos]), keys[int(key_rows[pos]) if key_rows is not None else pos]

    order = sorted(range(cand.size), key=order_key)[:k]
    return cand[np.asarray(order, dtype=np.int64)]


def event_mask(
    view: EventView,
    filters: Filters,
    exclude: frozenset[str],
    restrict: frozenset[str] | None,
    allowed: frozenset[str] | None,
) -> Mask:
    """Rows passing restrict, entity groups (pre-resolved to ``allowed``), dates and exclusions."""
    n = view.n
    if restrict is not None:
        mask = np.zeros(n, dtype=np.bool_)
        mask[view.rows(restrict)] = True
    else:
        mask = np.ones(n, dtype=np.bool_)
    if allowed is not None:
        ok = np.zeros(n, dtype=np.bool_)
        ok[view.rows(allowed)] = True
        mask &= ok
    if filters.date_from is not None:
        mask &= view.dates[:n] >= date_key(filters.date_from)
    if filters.date_to is not None:
        mask &= view.dates[:n] <= date_key(filters.date_to)
    if exclude:
        mask[view.rows(exclude)] = False
    return mask & view.live[:n]


def summary_hits(view: EventView, query: F32, mask: Mask, limit: int) -> list[Hit]:
    n = view.n
    if n == 0 or query.shape[0] != view.dims:
        return []
    scores = view.vecs[:n] @ query
    top = _top(scores, mask & view.has_vec[:n], view.ids, None, limit)
    return [Hit(view.ids[int(r)], float(scores[r])) for r in top]


def chunk_hits(view: EventView, query: F32, mask: Mask, limit: int) -> list[Hit]:
    """Each event scored by its best chunk (first chunk on a tie)."""
    nc, ng = view.nc, view.ng
    if ng == 0 or query.shape[0] != view.dims:
        return []
    cscores = view.cvecs[:nc] @ query
    starts = view.gstart[:ng]
    best = np.maximum.reduceat(cscores, starts)
    gevent = view.gevent[:ng]
    top = _top(best, mask[gevent], view.ids, gevent, limit)
    hits: list[Hit] = []
    for g in top:
        lo = int(starts[g])
        hi = int(starts[g + 1]) if g + 1 < ng else nc
        c = lo + int(np.argmax(cscores[lo:hi]))
        hits.append(
            Hit(
                view.ids[int(gevent[g])],
                float(best[g]),
                int(view.cidx[c]),
                int(view.cstart[c]),
                int(view.cend[c]),
            )
        )
    return hits


def entity_top(
    view: EntityView, query: F32, k: int, min_cosine: float | None
) -> list[tuple[str, float]]:
    n = view.n
    if n == 0 or k <= 0 or query.shape[0] != view.dims:
        return []
    scores = view.vecs[:n] @ query
    mask = view.has_vec[:n].copy()
    if min_cosine is not None:
        mask &= scores >= np.float32(min_cosine)
    top = _top(scores, mask, view.ids, None, k)
    return [(view.ids[int(r)], float(scores[r])) for r in top]
