"""How a session's ledger and a cursor's state are stored as bytes (``engine.sessions``,
``engine.cursors``).

JSON throughout: rows are shared by processes that may run another version for a while (a
rolling restart), and a row that no longer decodes is treated as missing, never executed.
A cursor's query vector is base64 of its float32 bytes (exact, a quarter of its decimal size).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from mnemoql.engine.models import Filters

if TYPE_CHECKING:
    from mnemoql.engine.cursors import CursorState

Caps = tuple[int, int, int]  # ids, excerpts, pages kept per session
Span = tuple[str, int, int]  # an excerpt's event id, start, end
_UNCAPPED: Caps = (1 << 62,) * 3


class PageCodec(Protocol):
    """Turns a kept page into JSON text and back."""

    def encode(self, page: object) -> str: ...

    def decode(self, text: str) -> object: ...


class _JsonPages:
    """Pages that are plain JSON values (tests, callers without evidence pages)."""

    def encode(self, page: object) -> str:
        return json.dumps(page, ensure_ascii=False)

    def decode(self, text: str) -> object:
        return json.loads(text)


JSON_PAGES: PageCodec = _JsonPages()


@dataclass(slots=True)
class SessionBody:
    """A session's ledger: delivered ids and excerpts (insertion order, oldest first), the
    pages it was given by call, and ``cleared`` when it describes a change that reset first."""

    ids: dict[str, None] = field(default_factory=dict)
    excerpts: dict[str, Span] = field(default_factory=dict)
    pages: dict[str, str] = field(default_factory=dict)  # call key -> the page as JSON text
    cleared: bool = False

    def add(
        self,
        ids: Iterable[str],
        excerpts: Iterable[tuple[str, Span]],
        pages: Iterable[tuple[str, str]],
        caps: Caps,
    ) -> None:
        """Append, keeping each excerpt's first delivery, then drop the oldest past ``caps``."""
        for event_id in ids:
            self.ids.setdefault(event_id, None)
        for text, span in excerpts:
            self.excerpts.setdefault(text, span)
        for key, page in pages:
            self.pages.pop(key, None)
            self.pages[key] = page  # most recent last
        _cap(self.ids, caps[0])
        _cap(self.excerpts, caps[1])
        _cap(self.pages, caps[2])

    def merge(self, change: SessionBody, caps: Caps) -> SessionBody:
        """This (stored) ledger with a call's ``change`` applied."""
        out = SessionBody() if change.cleared else self
        out.add(change.ids, change.excerpts.items(), change.pages.items(), caps)
        return out

    def encode(self) -> bytes:
        """The ledger's ids and excerpts (pages are rows of their own: ``SessionStore``); a
        change that reset first says so (``cleared``)."""
        raw: dict[str, Any] = {
            "ids": list(self.ids),
            "excerpts": [[t, *span] for t, span in self.excerpts.items()],
        }
        if self.cleared:
            raw["cleared"] = True
        return json.dumps(raw, ensure_ascii=False).encode()

    @classmethod
    def decode(cls, data: bytes, caps: Caps | None = None) -> SessionBody:
        """The stored ledger: one JSON line, the base, then one line per call's change not
        folded into it yet (``SharedState``'s deltas), applied in order within ``caps``. A
        line that does not decode (another version's) reads as empty."""
        base, *deltas = data.split(b"\n")
        body = cls._line(base)
        for line in deltas:
            change = cls._line(line)
            body = body.merge(change, caps or _UNCAPPED)
        body.cleared = False
        return body

    @classmethod
    def _line(cls, data: bytes) -> SessionBody:
        try:
            raw = json.loads(data)
            return cls(
                dict.fromkeys(raw["ids"]),
                {t: (e, int(s), int(n)) for t, e, s, n in raw["excerpts"]},
                cleared=raw.get("cleared") is True,
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return cls()


def _cap(table: dict[str, Any], cap: int) -> None:
    for key in list(table)[: max(0, len(table) - cap)]:
        del table[key]


def encode_cursor(state: CursorState) -> bytes:
    vector = state.query_vector
    return json.dumps(
        {
            "session": state.session_id,
            "chain": state.chain_id,
            "count": state.chain_count,
            "query": state.query_text,
            "vector": None
            if vector is None
            else base64.b64encode(np.asarray(vector, dtype=np.float32).tobytes()).decode(),
            "groups": [sorted(g) for g in state.filters.groups],
            "from": state.filters.date_from,
            "to": state.filters.date_to,
            "model": state.model,
            "dims": state.dims,
            "ids": list(state.delivered_ids),
            "concepts": sorted(state.concepts),
            "anchors": sorted(state.anchors),
            "asked": [state.asked[0], list(state.asked[1]), state.asked[2]],
            "created": state.created_at,
        },
        ensure_ascii=False,
    ).encode()


def decode_cursor(data: bytes) -> CursorState | str:
    """The cursor's state, or ``"gone"`` for a row that does not decode (another version's)."""
    from mnemoql.engine.cursors import _GONE, CursorState

    try:
        raw: dict[str, Any] = json.loads(data)
        vector = raw["vector"]
        asked = raw["asked"]
        return CursorState(
            session_id=raw["session"],
            chain_id=raw["chain"],
            chain_count=int(raw["count"]),
            query_text=raw["query"],
            query_vector=None
            if vector is None
            else np.frombuffer(base64.b64decode(vector), dtype=np.float32).copy(),
            filters=Filters(tuple(frozenset(g) for g in raw["groups"]), raw["from"], raw["to"]),
            model=raw["model"],
            dims=int(raw["dims"]),
            delivered_ids=tuple(raw["ids"]),
            concepts=frozenset(raw["concepts"]),
            anchors=frozenset(raw["anchors"]),
            asked=(asked[0], tuple(asked[1]), asked[2]),
            created_at=float(raw["created"]),
        )
    except (ValueError, KeyError, TypeError, IndexError):
        return _GONE
