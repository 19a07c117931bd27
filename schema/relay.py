"""Relay connections: ``PageInfo``, the four paging arguments and cursors bound to their
connection.

Every connection takes ``first``/``after`` (forward) or ``last``/``before`` (backward), the
Relay Cursor Connections spec's arguments, and answers all four ``PageInfo`` fields. A cursor
names the connection that issued it -- the root list with its sort and filter, or the parent
node and field -- so one given to another connection is a ``CURSOR_INVALID`` error, never
silently the first page.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import Annotated, Any

import strawberry

from mnemoql.engine.errors import CursorInvalid, InvalidInput, out_of_range

DEFAULT_FIRST = 20

First = Annotated[
    int | None,
    strawberry.argument(
        description="Page forward: at most this many edges after `after` (0..the max page "
        "size; 20 when neither first nor last is given)."
    ),
]
After = Annotated[
    str | None,
    strawberry.argument(description="Start after this edge cursor (goes with first)."),
]
Last = Annotated[
    int | None,
    strawberry.argument(
        description="Page backward: at most this many edges just before `before` (or the "
        "end), still in the connection's order."
    ),
]
Before = Annotated[
    str | None,
    strawberry.argument(description="End before this edge cursor (goes with last)."),
]


@strawberry.type(description="Where a page of a connection sits (Relay Cursor Connections).")
class PageInfo:
    has_next_page: bool = strawberry.field(description="More edges follow the last one.")
    has_previous_page: bool = strawberry.field(description="More edges precede the first one.")
    start_cursor: str | None = strawberry.field(
        description="Cursor of the first edge (null for an empty page)."
    )
    end_cursor: str | None = strawberry.field(
        description="Cursor of the last edge (null for an empty page)."
    )


def _encode(value: Any) -> str:
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode(cursor: str) -> Any:
    pad = "=" * (-len(cursor) % 4)
    return json.loads(base64.urlsafe_b64decode(cursor + pad).decode())


def digest(value: object) -> str:
    """A short stable fingerprint (of a ``where`` tree, say) for a connection key."""
    return hashlib.sha256(repr(value).encode()).hexdigest()[:12]


@dataclass(frozen=True, slots=True)
class Window:
    """The parsed paging arguments of one connection field."""

    connection: str  # what issued the cursors: "Event by create_time DESC where ..."
    size: int
    backward: bool
    position: Any | None  # decoded from after (forward) or before (backward)

    def cursor(self, position: Any) -> str:
        """The cursor of an edge at ``position`` in this connection."""
        return _encode([self.connection, position])

    def page_info(self, cursors: list[str], more: bool) -> PageInfo:
        """``more``: the store saw edges beyond the page in its direction of travel. The other
        side has edges when the page started from a cursor (that edge, at least)."""
        started = self.position is not None
        return PageInfo(
            has_next_page=started if self.backward else more,
            has_previous_page=more if self.backward else started,
            start_cursor=cursors[0] if cursors else None,
            end_cursor=cursors[-1] if cursors else None,
        )


def window(
    connection: str,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
    max_size: int,
) -> Window:
    """Check the four arguments and decode the cursor.

    Raises:
        InvalidInput: both directions at once.
        OutOfRange: a size outside 0..max_size.
        CursorInvalid: a cursor this connection did not issue.
    """
    backward = last is not None or before is not None
    if backward and (first is not None or after is not None):
        raise InvalidInput(
            "page forward with first/after or backward with last/before, not both at once",
            zh="first/after 与 last/before 不能同时使用",
            argument="last" if last is not None else "before",
        )
    size = last if backward else first
    if size is None:
        size = DEFAULT_FIRST
    if not 0 <= size <= max_size:
        raise out_of_range("last" if backward else "first", 0, max_size, size)
    name, cursor = ("before", before) if backward else ("after", after)
    position = None if cursor is None else _position(connection, cursor, name)
    return Window(connection, size, backward, position)


def _position(connection: str, cursor: str, argument: str) -> Any:
    try:
        issuer, position = _decode(cursor)
    except (ValueError, TypeError, UnicodeDecodeError) as exc:
        raise CursorInvalid(
            f"{argument} is not a cursor this API issued",
            zh="游标无效",
            argument=argument,
        ) from exc
    if issuer != connection:
        raise CursorInvalid(
            f"{argument} is a cursor of another connection ({issuer}), not of this one "
            f"({connection}): page with the cursors this connection returns, or start "
            f"without {argument}",
            zh="游标属于另一个连接",
            argument=argument,
        )
    return position
