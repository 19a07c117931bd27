"""The embedded store's retrieval routes and entity top-k: which thread does which part.

A route is a catch-up (another process, or a save of this one, may have committed:
``Database.catch_up``), then maths over one snapshot of the vector mirrors (``_search``), inline
when small, else on the compute pool; ``route_pool`` also reads its candidates' rows on that
compute thread (``_pool``) and runs the lexical route beside the vector routes on a side
thread. The catch-up goes to the database thread only when ``Watch`` (``_watch``), asked on a
compute thread, says something was committed since the last one (``caught_up``): a warm search
is one trip, and no route waits behind a save whose transaction is still open (its reads of
rows run on the compute threads' own connections: ``Threads.read_committed``). Kept
apart from ``store.py`` so the store reads as the ``Store`` protocol it implements, and the
trips a search makes to each thread (issue #30) read in one place; the threads themselves are
``_threads``."""

from __future__ import annotations

from collections.abc import Sequence

from mnemoql.engine.errors import InvalidInput
from mnemoql.engine.models import Entity, EntityLabel, Filters, Hit, RouteName, RoutePool, Vector
from mnemoql.engine.store.embedded._exact import event_mask
from mnemoql.engine.store.embedded._idle import spare_core
from mnemoql.engine.store.embedded._index import I64, EventView, normalise
from mnemoql.engine.store.embedded._lexical import hits as lexical_hits
from mnemoql.engine.store.embedded._pool import PoolReader, PoolRows, more_pool_rows
from mnemoql.engine.store.embedded._reads import Reads
from mnemoql.engine.store.embedded._rescore import score_rows
from mnemoql.engine.store.embedded._search import beside, entity_hits, pool_hits, route_hits
from mnemoql.engine.store.embedded._threads import Threads, interruptible, not_open
from mnemoql.engine.store.embedded._txn import read_snapshot
from mnemoql.engine.store.lexical import query_terms as lexical_terms
from mnemoql.engine.store.rules import entity_label


async def entity_top(
    threads: Threads, label: EntityLabel, vector: Vector, k: int, min_cosine: float | None
) -> list[tuple[Entity, float]]:
    """The ``k`` entities of ``label`` nearest ``vector`` (at least ``min_cosine`` when given)."""
    entity_label(label)
    await caught_up(threads)
    db = threads.database
    gen, view = db.generation, db.entities[label]
    q = normalise(vector)
    scored = await threads.compute_on(
        view.n * view.dims, lambda: entity_hits(view, gen, db.ann, label, q, k, min_cosine)
    )
    if not scored:
        return []
    found = await threads.read_committed(Reads.entities_by_ids, [i for i, _ in scored])
    return [(found[i], s) for i, s in scored if i in found]


async def route(
    threads: Threads,
    route: RouteName,
    query: Vector,
    filters: Filters,
    exclude: frozenset[str],
    limit: int,
    restrict: frozenset[str] | None = None,
) -> list[Hit]:
    """One vector route (``summary`` or ``chunk``) over the event mirror."""
    if route not in ("summary", "chunk"):
        raise InvalidInput(
            f"unknown route {route!r}; use summary or chunk",
            zh=f"未知检索路线 {route!r}，可用 summary 或 chunk",
        )
    if limit <= 0:
        return []
    allowed = await allowed_events(threads, filters)
    db = threads.database
    view, gen = db.events, db.generation  # one snapshot for the whole computation
    q = normalise(query)
    cells = (view.n if route == "summary" else view.nc) * view.dims

    def run() -> list[Hit]:
        return route_hits(route, view, gen, db.ann, q, filters, exclude, restrict, allowed, limit)

    return await threads.compute_on(cells, run)


async def lexical_route(
    threads: Threads,
    text: str,
    filters: Filters,
    exclude: frozenset[str],
    limit: int,
    restrict: frozenset[str] | None = None,
) -> list[Hit]:
    """The lexical route alone, on a compute thread's connection after the catch-up."""
    terms = searchable(text, limit, restrict)
    if not terms:
        return []
    rows, compute = threads.rows, threads.compute
    if rows is None or compute is None:
        raise not_open()
    allowed = await allowed_events(threads, filters)
    view = threads.database.events

    return await interruptible(
        rows, compute, lexical_on, rows, view, terms, filters, exclude, restrict, allowed, limit
    )


def lexical_on(
    rows: PoolReader,
    view: EventView,
    terms: Sequence[str],
    filters: Filters,
    exclude: frozenset[str],
    restrict: frozenset[str] | None,
    allowed: frozenset[str] | None,
    limit: int,
) -> list[Hit]:
    """The lexical route's hits among ``view``'s events, on this thread's pool connection."""
    mask = event_mask(view, filters, exclude, restrict, allowed)
    with rows.reading() as conn:
        return lexical_hits(conn, terms, view, mask, limit, restrict)


async def caught_up(threads: Threads) -> None:
    """Catch up with what was committed since the last catch-up (``Database.catch_up``),
    going to the database thread only when ``Watch``, asked on a compute thread, says
    something was: a route then never waits there behind a save still in its transaction."""
    rows, compute, watch = threads.rows, threads.compute, threads.watch
    if rows is None or compute is None or watch is None:
        raise not_open()
    version = await interruptible(rows, compute, watch.stale)
    if version is not None:
        await threads.call(threads.database.catch_up)
        watch.caught_up(version)


async def allowed_events(threads: Threads, filters: Filters) -> frozenset[str] | None:
    """After the catch-up, the events of the entity filter (None without one)."""
    await caught_up(threads)
    if not filters.groups:
        return None
    return await threads.read_committed(Reads.events_in_groups, filters)


async def route_pool(
    threads: Threads,
    query: Vector,
    filters: Filters,
    exclude: frozenset[str],
    limit: int,
    restrict: frozenset[str] | None = None,
    text: str | None = None,
) -> RoutePool:
    """Both vector routes in one computation (``pool_hits``: above the ANN threshold each
    rescores both indexes' candidates), the lexical route beside them when ``text`` is
    given, then the events, chunk hashes and concepts of everything they found, read on
    the compute thread (``_pool``). One trip when nothing was committed since the last
    catch-up (the compute thread asks ``Watch``); else, or with an entity filter, the
    catch-up on the database thread first."""
    if limit <= 0:
        return RoutePool([], [], {}, {})
    db, rows, compute, watch = threads.database, threads.rows, threads.compute, threads.watch
    if rows is None or compute is None or watch is None:
        raise not_open()
    allowed = await allowed_events(threads, filters) if filters.groups else None
    q = normalise(query)
    terms = searchable(text, limit, restrict) if text is not None else []

    def pool() -> RoutePool:
        view, gen = db.events, db.generation  # one snapshot for all of it
        side = threads.side if spare_core() else None  # else both index searches here

        def lexical() -> list[Hit]:
            return lexical_on(rows, view, terms, filters, exclude, restrict, allowed, limit)

        later = None
        if terms and side is not None:
            try:  # beside the vector routes, on a connection of its own
                later = side.submit(rows.run, rows.ticket(), lexical)
            except RuntimeError:  # the store is closing under this search
                later = None
        with rows.reading() as conn, read_snapshot(conn):
            known: PoolRows = ({}, {}, {})

            def early(candidates: I64) -> None:
                """The rows of the summary route's likely page, read while the side thread
                searches the chunk index (this thread would only wait): most of the pool."""
                nonlocal known
                page = score_rows("summary", view, q, candidates, limit).hits
                known = more_pool_rows(conn, view, rows.names, [h.event_id for h in page], known)

            summary, chunk = pool_hits(
                view, gen, db.ann, q, filters, exclude, restrict, allowed, limit, side, early
            )
            found = beside(later, lexical) if later is not None else lexical() if terms else []
            union = list(dict.fromkeys(h.event_id for h in [*summary, *chunk, *found]))
            if not union:
                return RoutePool(summary, chunk, {}, {}, lexical=found)
            events, hashes, concepts = more_pool_rows(conn, view, rows.names, union, known)
        return RoutePool(summary, chunk, events, hashes, concepts, found)

    def checked_pool() -> RoutePool | int:
        version = watch.stale()
        return pool() if version is None else version  # committed since: catch up first

    if not filters.groups:  # else allowed_events caught up just now
        got = await interruptible(rows, compute, checked_pool)
        if isinstance(got, RoutePool):
            return got
        await threads.call(db.catch_up)
        watch.caught_up(got)  # once: a search waits for no later writer
    return await interruptible(rows, compute, pool)


def searchable(text: str, limit: int, restrict: frozenset[str] | None) -> list[str]:
    """The lexical route's terms of ``text``; none when there is nothing to look for (no
    terms, no room, or a restriction to no events)."""
    if limit <= 0 or (restrict is not None and not restrict):
        return []
    return lexical_terms(text)
