"""Neighbour picking for ``nearby`` (SPEC §1.6); the positional ids are ``engine.positions``."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from mnemoql.engine.positions import (
    MAX_SPAN,
    Position,
    check_span,
    neighbour_ids,
    parse_position,
    position_of,
)

__all__ = [
    "MAX_SPAN",
    "Position",
    "neighbour_ids",
    "parse_position",
    "pick_neighbours",
    "position_of",
]


def pick_neighbours(
    anchor_id: str,
    candidate_ids: Iterable[str],
    before: int = 2,
    after: int = 2,
    quota: int = 4,
    exclude: Collection[str] = (),
) -> list[str]:
    """The neighbours of ``anchor_id`` that ``nearby`` delivers.

    Candidates qualify with the same prefix and literal chapter token and a record ``r`` with
    ``rec - before <= r <= rec + after`` and ``r != rec`` (integer comparison). When more
    qualify than ``quota``, the nearest win, the earlier record on equal distance.

    Args:
        anchor_id: The cursor's anchor event.
        candidate_ids: Existing ids (e.g. every id of that chapter).
        before: Records before the anchor, 0..10.
        after: Records after the anchor, 0..10.
        quota: How many to deliver (``min(4, 20 - chain_count)``).
        exclude: Ids already delivered in the session.

    Returns:
        The picks in ascending record order (ties by id).

    Raises:
        NoPosition: ``anchor_id`` has no position.
        OutOfRange: ``before`` or ``after`` outside 0..10.
    """
    check_span("before", before)
    check_span("after", after)
    anchor = parse_position(anchor_id)
    found: dict[str, int] = {}
    for cid in candidate_ids:
        pos = position_of(cid)
        if (
            pos is None
            or cid in exclude
            or (pos.prefix, pos.chapter) != (anchor.prefix, anchor.chapter)
            or pos.record == anchor.record
            or not anchor.record - before <= pos.record <= anchor.record + after
        ):
            continue
        found[cid] = pos.record
    if quota <= 0:
        return []
    nearest = sorted(
        found, key=lambda c: (abs(found[c] - anchor.record), found[c] > anchor.record, found[c], c)
    )[:quota]
    return sorted(nearest, key=lambda c: (found[c], c))
