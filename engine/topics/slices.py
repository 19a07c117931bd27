"""Materialising recalled slices: message ranges and the projection windows (SPEC §2.7, §2.8).

Pure list functions over any message type; rendering them (XML, GraphQL) is the caller's job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

T = TypeVar("T")

Projection = Literal["full", "compact", "abstract"]
WINDOW_THRESHOLD = 10  # up to this many messages are shown whole


def slice_messages(messages: Sequence[T], start: int, end: int) -> list[T]:
    """``messages[start:end)`` with both ends clamped into range; inverted ranges are empty."""
    size = len(messages)
    lo = min(max(start, 0), size)
    hi = min(max(end, lo), size)
    return list(messages[lo:hi])


@dataclass(frozen=True, slots=True)
class Omitted:
    """A placeholder for ``count`` messages left out of a projection."""

    count: int

    @property
    def text(self) -> str:
        return f"省略了 {self.count} 条消息"


def window_messages(messages: Sequence[T], projection: Projection = "full") -> list[T | Omitted]:
    """The ``source_messages`` of one slice in the ``activated_memory_slices`` block.

    ``full``: up to 10 messages whole; otherwise the first 2, an omitted note (``ms - 2``), the
    middle 4 from ``ms = max(2, (n-4)//2)`` to ``me = min(n-2, ms+4)``, a second note when
    ``(n-2) - me > 0``, and the last 2. ``compact``: the same without the first 2 messages.
    ``abstract`` shows no messages (only the summary).
    """
    if projection == "abstract":
        return []
    n = len(messages)
    if n <= WINDOW_THRESHOLD:
        return list(messages)
    ms = max(2, (n - 4) // 2)
    me = min(n - 2, ms + 4)
    window: list[T | Omitted] = [] if projection == "compact" else list(messages[:2])
    window.append(Omitted(ms - 2))
    window.extend(messages[ms:me])
    if (n - 2) - me > 0:
        window.append(Omitted((n - 2) - me))
    window.extend(messages[n - 2 :])
    return window
