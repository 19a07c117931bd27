"""Positional ids (SPEC §1.6): where a record sits, and the ids around it.

Imported records carry their position in the id, ``<prefix>_ch<chapter>_e<record>``
(``event_ch33_e06``). Neighbours share the prefix and the literal chapter token; records are
compared as integers, and generated ids keep the anchor's zero padding. Below both retrieval
(``nearby``) and the stores (the window route), so neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemoql.engine.errors import NoPosition, out_of_range
from mnemoql.engine.models import POSITIONAL_ID

MAX_SPAN = 10  # before/after range 0..10


@dataclass(frozen=True, slots=True)
class Position:
    """Where a positional id sits: ``prefix``, literal ``chapter`` token, record number."""

    prefix: str
    chapter: str
    record: int
    width: int  # digits of the record token, for zero padding

    def id_for(self, record: int) -> str:
        """The id of another record in the same chapter, padded like this one."""
        return f"{self.prefix}_ch{self.chapter}_e{record:0{self.width}d}"


def position_of(event_id: str) -> Position | None:
    """The position in ``event_id``, or None for ids such as ``event_123``."""
    m = POSITIONAL_ID.match(event_id)
    if m is None:
        return None
    rec = m.group("rec")
    return Position(m.group("prefix"), m.group("ch"), int(rec), len(rec))


def parse_position(event_id: str) -> Position:
    """The position in ``event_id``.

    Raises:
        NoPosition: The id has no chapter/record (use read instead).
    """
    position = position_of(event_id)
    if position is None:
        raise NoPosition(
            f"event id {event_id!r} has no chapter/record number, so it has no neighbours; "
            "use read",
            zh="该事件 ID 不含章号/记录号，无法补读邻近记录，请用 read",
            id=event_id,
        )
    return position


def check_span(name: str, value: int) -> None:
    if not 0 <= value <= MAX_SPAN:
        raise out_of_range(name, 0, MAX_SPAN, value)


def neighbour_ids(anchor_id: str, before: int = 2, after: int = 2) -> list[str]:
    """Ids of the records around ``anchor_id`` with its padding, ascending (e06 -> e04, e05,
    e07, e08); records below 0 are skipped. Useful to look the candidates up by id.

    Raises:
        NoPosition: ``anchor_id`` has no position.
        OutOfRange: ``before`` or ``after`` outside 0..10.
    """
    check_span("before", before)
    check_span("after", after)
    pos = parse_position(anchor_id)
    lows = range(max(0, pos.record - before), pos.record)
    highs = range(pos.record + 1, pos.record + after + 1)
    return [pos.id_for(r) for r in (*lows, *highs)]


