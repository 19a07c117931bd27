"""Store contract, part 6: the window route (a positional record scored with its neighbours,
``engine.store.window``), on every store.

Five turns of one conversation, ``talk_ch1_e1`` .. ``e5``, one chunk each: the query is axis 0,
turns 2 and 4 match it, turn 3 (a short reply) is orthogonal to it, turns 1 and 5 are off on
axis 2. With span 1 and alpha 0.5 the window vectors' cosines are, by hand:
e2, e4: (1) / |(1, .5, .5)| = 0.8165; e3: (1) / |(1, 1)| = 0.7071; e1, e5: .5 / |(.5, 1)| = 0.4472.
"""

from __future__ import annotations

import math

import pytest

from mnemoql.engine.drafts import EventDraft
from mnemoql.engine.models import EMPTY_FILTERS, Filters
from mnemoql.engine.store.base import Store
from mnemoql.engine.store.window import window_route_by_parts
from tests.store._builders import axis, event, plan

NONE: frozenset[str] = frozenset()
E = [f"talk_ch1_e{i}" for i in range(6)]  # E[1] .. E[5]
VECTORS = {1: axis(2), 2: axis(0), 3: axis(1), 4: axis(0), 5: axis(2)}
E2 = 1 / math.sqrt(1.5)
E3 = 1 / math.sqrt(2)
E1 = 0.5 / math.sqrt(1.25)


async def _talk(store: Store) -> None:
    """Turns 1-3 saved on March 1st, 4-5 on March 2nd (for the date filter)."""

    def turn(i: int) -> EventDraft:
        return event(f"t{i}", axis(7), given_id=E[i], chunk_vectors=[VECTORS[i]])

    await store.apply_save(plan([turn(i) for i in (1, 2, 3)], day="2026-03-01"))
    await store.apply_save(plan([turn(i) for i in (4, 5)], day="2026-03-02"))


async def _window(store: Store, seeds: list[str], **kw: object) -> list[tuple[str, float]]:
    hits = await store.window_route(
        axis(0),
        seeds,
        kw.pop("filters", EMPTY_FILTERS),  # type: ignore[arg-type]
        kw.pop("exclude", NONE),  # type: ignore[arg-type]
        kw.pop("limit", 10),  # type: ignore[arg-type]
        kw.pop("restrict", None),  # type: ignore[arg-type]
        span=kw.pop("span", 1),  # type: ignore[arg-type]
        alpha=kw.pop("alpha", 0.5),  # type: ignore[arg-type]
    )
    return [(h.event_id, round(h.score, 4)) for h in hits]


def _r(*pairs: tuple[int, float]) -> list[tuple[str, float]]:
    return [(E[i], round(s, 4)) for i, s in pairs]


async def test_a_short_turn_is_found_through_its_neighbours(store: Store) -> None:
    await _talk(store)
    # the seed and its neighbours; turn 3 matches nothing itself, its window does
    assert await _window(store, [E[2]]) == _r((2, E2), (3, E3), (1, E1))
    # ties by id; every candidate once
    assert await _window(store, [E[4], E[2]]) == _r((2, E2), (4, E2), (3, E3), (1, E1), (5, E1))
    assert await _window(store, [E[2]], limit=2) == _r((2, E2), (3, E3))


async def test_window_span_and_alpha(store: Store) -> None:
    await _talk(store)
    # span 2 from turn 1 reaches turn 3; turn 3's window then holds turns 1, 2, 4, 5
    got = dict(await _window(store, [E[1]], span=2))
    assert set(got) == {E[1], E[2], E[3]}
    assert got[E[3]] == round(1.0 / math.sqrt(3), 4)  # v3 + .5 (v1 + v2 + v4 + v5) = (1, 1, 1)
    # alpha 0: the record's own vector alone
    assert await _window(store, [E[2]], alpha=0.0) == _r((2, 1.0), (1, 0.0), (3, 0.0))


async def test_window_route_keeps_the_route_filters(store: Store) -> None:
    await _talk(store)
    # excluded and restricted candidates are left out, but still lend their vectors as context
    assert await _window(store, [E[2]], exclude=frozenset({E[2]})) == _r((3, E3), (1, E1))
    assert await _window(store, [E[2]], restrict=frozenset({E[3]})) == _r((3, E3))
    assert await _window(store, [E[2]], restrict=frozenset()) == []
    march_2 = Filters(date_from="2026-03-02")
    assert await _window(store, [E[4]], filters=march_2) == _r((4, E2), (5, E1))


async def test_window_route_skips_unpositioned_and_missing_records(store: Store) -> None:
    await _talk(store)
    other = await store.apply_save(plan([event("x", axis(0), chunk_vectors=[axis(0)])]))
    assert await _window(store, [other.event_ids[0]]) == []
    assert await _window(store, ["talk_ch9_e1"]) == []  # no such chapter
    assert await _window(store, []) == []
    # a forgotten neighbour adds nothing: turn 3's window is turn 3 and turn 2 only
    await store.forget(E[4])
    got = dict(await _window(store, [E[2]]))
    assert got[E[3]] == round(0.5 / math.sqrt(1.25), 4)


async def test_window_span_is_bounded(store: Store) -> None:
    with pytest.raises(ValueError):
        await window_route_by_parts(store, axis(0), [E[1]], EMPTY_FILTERS, NONE, 5, span=0)
    with pytest.raises(ValueError):
        await window_route_by_parts(store, axis(0), [E[1]], EMPTY_FILTERS, NONE, 5, span=6)
