"""The candidate lists a ranking reads beyond the store's route pool (SPEC §1.4's summary and
chunk routes, and BM25): the window, person and time routes, the routes derived from the
fused order (statements, sessions), and the checks that decide whether a route joins.

They are separate from ``ranking`` because each is a store read or a list over the events,
with no weights: ``ranking.Ranker`` decides which run and how much each counts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Literal

import numpy as np

from mnemoql.engine.dates import find_spans
from mnemoql.engine.models import Entity, Event, Filters, Hit, Vector
from mnemoql.engine.positions import neighbour_ids
from mnemoql.engine.retrieval import scoring
from mnemoql.engine.retrieval.nearby import position_of
from mnemoql.engine.retrieval.speakers import named_people, states_in_first_person
from mnemoql.engine.store.base import Store
from mnemoql.engine.store.window import record_vectors
from mnemoql.engine.text import normalise_name

ROUTE_LIMIT = 40
# The window route (``engine.store.window``) looks around the best hits of each other route.
WINDOW_SEEDS = 20
# How many of a session's latest events tell a search asked again (a follow-up) from a new one.
FOLLOWUP_RECENT = 20
# A token a dense model reads poorly and BM25 finds at once: a part number, an order id, a
# version, an acronym (XK-4471-B, INV-2024-0032, v2.3, GDPR) or a quoted phrase.
_IDENTIFIER = re.compile(
    r"\b(?=[\w.-]*\d)(?=[\w.-]*[A-Za-z])[A-Za-z0-9][\w.-]*[A-Za-z0-9]\b|\b[A-Z]{2,}\d*\b|[\"“「][^\"”」]{2,}[\"”」]"
)


def lexical_route_for(query: str, setting: bool | Literal["auto"]) -> bool:
    """Whether the BM25 route joins this search: always (True), never (False), or with
    ``"auto"`` (the default) when the query holds an identifier-like token or a quoted
    phrase. On whole LongMemEval haystacks the route on every query cost the first call and
    five searches recall (docs/DECISIONS.md, "Lexical route"), while exact identifiers are
    what it exists for."""
    if setting != "auto":
        return bool(setting)
    return _IDENTIFIER.search(query) is not None


def _session_of(event_id: str) -> str | None:
    """The conversation session (prefix and chapter) of a positional id, None without one."""
    pos = position_of(event_id)
    return f"{pos.prefix}_ch{pos.chapter}" if pos is not None else None


def derived_routes(
    fused: Sequence[scoring.Scored],
    events: Mapping[str, Event],
    statement_weight: float,
    session_weight: float,
) -> list[tuple[list[str], float]]:
    """The records' routes read off the other routes' fused order (each with its weight,
    only those weighed above 0): the candidates that state something in the first person,
    and the candidates grouped by session, the sessions with the most fused score first."""
    out: list[tuple[list[str], float]] = []
    if statement_weight > 0:
        ids = [s.id for s in fused if states_in_first_person(events[s.id].content)]
        out.append((ids, statement_weight))
    if session_weight > 0:
        out.append((scoring.by_group(fused, _session_of), session_weight))
    return out


def adjacent(event_id: str) -> list[str]:
    """The records right before and after a positional id (none for other ids)."""
    return neighbour_ids(event_id, 1, 1) if position_of(event_id) is not None else []


async def asked_again(
    store: Store, vector: Vector, filters: Filters, given: Sequence[str], chunk_hits: Sequence[Hit]
) -> bool:
    """Whether a search without a cursor continues an earlier one of its session: some of
    the session's last ``FOLLOWUP_RECENT`` events would rank in this query's chunk route
    (the route's top ``ROUTE_LIMIT`` with nothing excluded). A new question in a session
    that was given other evidence ranks as a first call."""
    recent = frozenset(given[-FOLLOWUP_RECENT:])
    hits = await store.route("chunk", vector, filters, frozenset(), len(recent), recent)
    if not hits:
        return False
    if len(chunk_hits) < ROUTE_LIMIT:  # the route held every event that passes
        return True
    cutoff = chunk_hits[-1].score
    return any(h.score >= cutoff for h in hits)


async def person_route(
    store: Store,
    query: str,
    vector: Vector,
    filters: Filters,
    excluded: frozenset[str],
    restrict: frozenset[str] | None,
) -> list[Hit]:
    """The person route (issue #25, "who in the question"): the events adjacent to a
    Person the query names (a named speaker's own messages, PARTICIPATED_IN, and the
    messages that mention them), ranked by the chunk route under the search's filters
    plus that entity filter; empty when the query names no Person the memory knows."""
    found: set[str] = set()
    for name in named_people(query):
        found |= await store.resolve_terms(normalise_name(name))
    if not found:
        return []
    nodes = await store.get_nodes(sorted(found))
    people = frozenset(n.id for n in nodes if isinstance(n, Entity) and n.label == "Person")
    if not people:
        return []
    theirs = Filters((people, *filters.groups), filters.date_from, filters.date_to)
    return await store.route("chunk", vector, theirs, excluded, ROUTE_LIMIT, restrict)


async def time_route(
    store: Store,
    query: str,
    today: date,
    vector: Vector,
    filters: Filters,
    excluded: frozenset[str],
    restrict: frozenset[str] | None,
) -> list[Hit]:
    """The time route (docs/DECISIONS.md, "The time route"): for a query naming a time
    ("the past weekend", "last Saturday", 上个月), the events written in those days (from
    the first phrase's first day to the last one's last), ranked by the chunk route under
    the search's filters narrowed to them; empty without a time phrase, or when the
    filters' own dates leave no day."""
    spans = find_spans(query, today)
    if not spans:
        return []
    first = max(min(a for a, _ in spans).isoformat(), filters.date_from or "")
    last = min(max(b for _, b in spans).isoformat(), filters.date_to or "9999-12-31")
    if first > last:
        return []
    within = Filters(filters.groups, first, last)
    return await store.route("chunk", vector, within, excluded, ROUTE_LIMIT, restrict)


async def window_route(
    store: Store,
    routes: Sequence[Sequence[Hit]],
    vector: Vector,
    filters: Filters,
    excluded: frozenset[str],
    restrict: frozenset[str] | None,
    *,
    span: int,
    alpha: float,
) -> list[Hit]:
    """The window route around the other routes' best hits (``engine.store.window``); empty
    when no hit has a position."""
    seeds = list(dict.fromkeys(h.event_id for hits in routes for h in hits[:WINDOW_SEEDS]))
    if not any(position_of(s) for s in seeds):
        return []
    return await store.window_route(
        vector, seeds, filters, excluded, ROUTE_LIMIT, restrict, span=span, alpha=alpha
    )


async def with_events(
    store: Store, events: dict[str, Event], hits: Sequence[Hit]
) -> dict[str, Event]:
    """``events`` plus the events of ``hits`` it lacks (read with their vectors)."""
    missing = list(dict.fromkeys(h.event_id for h in hits if h.event_id not in events))
    if not missing:
        return events
    found = await store.get_events(missing, with_vectors=True)
    return {**events, **{e.id: e for e in found}}


async def closest(store: Store, ids: list[str], vector: Vector, quota: int) -> list[str]:
    """The ``quota`` records of ``ids`` nearest the query by content vector (ties by
    position), in their original order: ``nearby`` with ``Ranker.nearby_by_query``."""
    vectors = await record_vectors(store, ids)
    q = vector / (float(np.linalg.norm(vector)) or 1.0)
    score = {i: float(np.dot(vectors[i], q)) if i in vectors else -2.0 for i in ids}
    keep = set(sorted(ids, key=lambda i: (-score[i], ids.index(i)))[:quota])
    return [i for i in ids if i in keep]
