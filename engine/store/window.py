"""The window route: a positional record seen together with its neighbours (issue #25).

A message saved on its own ("Yes! It was at the park by the lake.") often carries no word of
the question that its neighbours carry. For records with positional ids
(``<prefix>_ch<chapter>_e<record>``: conversation turns, book scenes) the route scores each
candidate by the cosine of the query with its *window vector*

    w_i = normalise(v_i + alpha * sum(v_j for the records j within ``span`` of i))

where ``v`` is a record's content vector (the normalised mean of its chunk vectors, its
summary vector when it has no chunks). Nothing new is embedded: the window is built from the
vectors the store already holds, at query time, for the candidates only. Candidates are the
``seeds`` (the vector routes' hits) and their neighbours within ``span``, under the route's
filters, exclusions and restriction; the record itself is delivered, with its own quote.

``window_route_by_parts`` composes it from the ``Store`` protocol's reads (the routes with
``restrict``, ``get_chunks``, ``get_events``), so every store gives the same ranking; a store
may answer ``Store.window_route`` in fewer round trips.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from mnemoql.engine.models import Filters, Hit, Vector
from mnemoql.engine.positions import neighbour_ids, position_of

if TYPE_CHECKING:
    from mnemoql.engine.store.base import Store

# A window wider than this reads too many records per candidate to be cheap.
MAX_WINDOW_SPAN = 5


def window_candidates(seeds: Sequence[str], span: int) -> list[str]:
    """The positional seeds and their neighbours within ``span``, in first-seen order."""
    out: dict[str, None] = {}
    for seed in seeds:
        if position_of(seed) is None:
            continue
        out.setdefault(seed, None)
        for other in neighbour_ids(seed, span, span):
            out.setdefault(other, None)
    return list(out)


def window_scores(
    query: Vector,
    candidates: Sequence[str],
    vectors: dict[str, Vector],
    span: int,
    alpha: float,
) -> dict[str, float]:
    """Cosine of ``query`` with each candidate's window vector (candidates without a vector
    are left out; missing neighbours add nothing)."""
    q = np.asarray(query, dtype=np.float64).ravel()
    norm = float(np.linalg.norm(q))
    if norm == 0.0:
        return {}
    q /= norm
    out: dict[str, float] = {}
    for cid in candidates:
        own = vectors.get(cid)
        if own is None:
            continue
        w = np.asarray(own, dtype=np.float64).copy()
        for other in neighbour_ids(cid, span, span):
            v = vectors.get(other)
            if v is not None:
                w += alpha * np.asarray(v, dtype=np.float64)
        size = float(np.linalg.norm(w))
        if size > 0.0:
            out[cid] = float(w @ q) / size
    return out


async def record_vectors(store: Store, ids: Sequence[str]) -> dict[str, Vector]:
    """Each record's content vector: the normalised mean of its chunk vectors, else its
    summary vector. Unknown ids are left out."""
    if not ids:
        return {}
    chunks = await store.get_chunks(list(ids), with_vectors=True)
    out: dict[str, Vector] = {}
    for event_id, rows in chunks.items():
        vs = [np.asarray(c.embedding, np.float64) for c in rows if c.embedding is not None]
        if vs:
            mean = np.mean(vs, axis=0)
            size = float(np.linalg.norm(mean))
            if size > 0.0:
                out[event_id] = (mean / size).astype(np.float32)
    rest = [i for i in ids if i not in out]
    if rest:
        for ev in await store.get_events(rest, with_vectors=True):
            if ev.embedding is not None:
                out[ev.id] = np.asarray(ev.embedding, np.float32)
    return out


async def window_route_by_parts(
    store: Store,
    query: Vector,
    seeds: Sequence[str],
    filters: Filters,
    exclude: frozenset[str],
    limit: int,
    restrict: frozenset[str] | None = None,
    *,
    span: int = 1,
    alpha: float = 0.5,
) -> list[Hit]:
    """``Store.window_route`` from the protocol's reads: the seeds' windows (see the module
    docstring), best ``limit`` first, ties by id. Raises ValueError for a span outside
    1..MAX_WINDOW_SPAN."""
    if not 1 <= span <= MAX_WINDOW_SPAN:
        raise ValueError(f"window span must be 1..{MAX_WINDOW_SPAN}, got {span}")
    cands = [c for c in window_candidates(seeds, span) if c not in exclude]
    if restrict is not None:
        cands = [c for c in cands if c in restrict]
    if limit <= 0 or not cands:
        return []
    # which candidates exist and pass the filters: the summary route restricted to them
    passing = await store.route("summary", query, filters, exclude, len(cands), frozenset(cands))
    kept = [h.event_id for h in passing]
    if not kept:
        return []
    context = list(dict.fromkeys([*kept, *(o for c in kept for o in neighbour_ids(c, span, span))]))
    vectors = await record_vectors(store, context)
    scores = window_scores(query, kept, vectors, span, alpha)
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return [Hit(event_id, score) for event_id, score in ranked]
