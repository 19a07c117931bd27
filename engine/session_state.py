"""Where evidence sessions and cursors live: rows every process of a memory sees (issue 30).

``engine.sessions`` and ``engine.cursors`` keep the rules (what a session remembers, how a chain
counts); this module is the storage underneath, a small table of rows with a time to live and
a size budget:

- a **session** row (``kind="s"``, keyed by the session's name) holds the session's ledger:
  delivered ids, excerpts and the page ledger. It expires ``ttl`` seconds after its last
  commit.
- a **page** row (``kind="p"``, owned by a session) holds one page the session was given, for
  a GraphQL call repeated with the same arguments; rows of their own, so that a call reads
  and writes a small ledger instead of every page again. It expires ``ttl`` after it was kept.
- a **cursor** row (``kind="c"``, keyed by its token, owned by a session) holds a chain's
  state. It expires ``ttl`` seconds after it was issued; its body is then dropped, and the row
  stays as a tombstone for another ``ttl`` so that a late follow-up gets ``CURSOR_EXPIRED``
  rather than ``CURSOR_INVALID``. A cursor evicted for the budget becomes a tombstone too.
- a **delta** row (``kind="d"``, owned by a session, keyed ``<session>\x1f<number>``) holds
  what one call changed in the ledger (``Commit.delta``), so that a call writes what it added
  rather than the whole ledger (~140 KB at its caps). A session reads as its ledger then its
  deltas in order, one JSON line each (``SessionBody.decode``), and lives until ``ttl`` after
  its latest row. A commit runs the ledger's merge instead (``Commit.update``: the merged
  ledger replaces the row, the deltas go) when the session has ``FOLD_AFTER`` deltas or is
  not live. Sweeps and the budget treat a ledger and its deltas as one.

Every adapter (the embedded store's own SQLite file, Neo4j nodes, ``LocalState`` here for a
single process) implements ``SharedState``. A session's update is a read-modify-write inside
one transaction (``update``), so two processes committing to one session both land. A sweep
(``SWEEP_EVERY`` writes of a process, or ``SWEEP_SECONDS`` of its clock) deletes expired
rows and, when the bodies outgrow the budget, drops the least recently used first: memory,
not a count, bounds the state (between two sweeps it may run over by what was written).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

Kind = Literal["s", "c", "p", "d"]
SWEEP_EVERY = 200  # writes between two sweeps of one process
SWEEP_SECONDS = 30.0  # or this much clock time, whichever comes first
DEFAULT_BUDGET = 64 * 1024 * 1024  # bytes of session and cursor bodies per memory space
PAGE_CACHE_BYTES = 16 * 1024 * 1024  # kept pages' bodies a process holds (``PageCache``)
FOLD_AFTER = 16  # a session's deltas before a commit folds them into its ledger


@dataclass(frozen=True, slots=True)
class Row:
    """One stored row. ``body`` is None for a cursor tombstone (expired or evicted)."""

    owner: str
    body: bytes | None
    expires_at: float


Update = Callable[[bytes | None], bytes]
"""Builds a session's new body from its current one (None: missing or expired)."""


@dataclass(slots=True)
class Commit:
    """What one call of a session stores, in one transaction: its ledger merge, its pages and
    the cursors it issued or dropped (``SharedState.commit``)."""

    session: str
    ttl: float
    update: Update | None = None  # the ledger's merge; None when the call changed no ledger
    delta: bytes | None = None  # the call's change alone: a state with deltas appends it
    clear_pages: bool = False  # reset_seen: every page row of the session goes
    drop_pages: list[str] = field(default_factory=list)  # page row keys past the cap
    pages: list[tuple[str, bytes]] = field(default_factory=list)  # (row key, page)
    clear_cursors: bool = False  # reset_seen: every cursor of the session goes
    drop_cursors: list[str] = field(default_factory=list)  # broken chains
    cursors: list[tuple[str, bytes, float]] = field(default_factory=list)  # (token, state, at)

    @property
    def empty(self) -> bool:
        return not (
            self.update or self.clear_pages or self.drop_pages or self.pages
            or self.clear_cursors or self.drop_cursors or self.cursors
        )  # fmt: skip


class SharedState(Protocol):
    """The rows of one memory space. ``now`` is the caller's clock (wall seconds: processes
    compare it), ``ttl`` the lifetime a row gets from ``now``."""

    async def session(self, key: str, now: float) -> tuple[bytes | None, list[tuple[str, bytes]]]:
        """One read for a call: the session's body (None when missing or expired) and its
        live page rows (``owned("p", key)``, none without a body)."""

    async def commit(self, commit: Commit, now: float) -> None:
        """Store what a call of ``commit.session`` recorded, all or nothing."""

    async def get(self, kind: Kind, key: str, now: float) -> Row | None:
        """The row, or None when there is none. Expired sessions read as None; an expired
        cursor reads as a tombstone (``body`` None) until its tombstone goes too."""

    async def put(
        self, kind: Kind, key: str, owner: str, body: bytes, now: float, ttl: float
    ) -> None:
        """Insert or replace a row."""

    async def update(self, kind: Kind, key: str, fn: Update, now: float, ttl: float) -> None:
        """Replace the row's body by ``fn(current body)`` in one transaction, renewing its TTL."""

    async def owned(self, kind: Kind, owner: str, now: float) -> list[tuple[str, bytes]]:
        """``(key, body)`` of the live rows of ``owner``, oldest first."""

    async def drop(self, kind: Kind, *, key: str | None = None, owner: str | None = None) -> None:
        """Delete rows of ``kind``: by key, by owner, or all with neither. A dropped cursor
        (reset_seen, a broken chain, revectorize) is then unknown: ``CURSOR_INVALID``."""

    async def sweep(self, now: float) -> None:
        """Delete expired rows, then drop the least recently used live ones past the budget
        (cursors become tombstones). Writes call it now and then (``Sweeper``)."""

    async def close(self) -> None: ...


@dataclass(slots=True)
class Sweeper:
    """When a process sweeps: every ``every`` writes or ``seconds`` of clock time."""

    every: int = SWEEP_EVERY
    seconds: float = SWEEP_SECONDS
    _writes: int = 0
    _last: float | None = None

    def due(self, now: float) -> bool:
        self._writes += 1
        if self._last is None:
            self._last = now
        if self._writes >= self.every or now - self._last >= self.seconds:
            self._writes, self._last = 0, now
            return True
        return False


async def read_session(
    state: SharedState, key: str, now: float
) -> tuple[bytes | None, list[tuple[str, bytes]]]:
    """``SharedState.session`` from ``get`` and ``owned``, for adapters without a single read
    of their own (two trips: a page kept between them is read or not, either is right)."""
    row = await state.get("s", key, now)
    if row is None or row.body is None:
        return None, []
    return row.body, await state.owned("p", key, now)


PageStamp = tuple[str, float, int]  # a page row's key, used_at and size


class PageCache:
    """Bodies of kept pages this process has read or written, least recently used out past
    ``limit`` bytes. A page row is written once per key and time (``used_at``, the writer's
    clock) and never changed, so a body found under its row's stamp is the row's body: a
    session's read lists its pages without their bodies (``held``), fetches only the bodies
    missing here and hands them to ``filled``. A page kept again (after reset_seen) has a new
    stamp, so the held one is not used. Not thread-safe: one store's state uses it from one
    thread (or one event loop)."""

    def __init__(self, limit: int = PAGE_CACHE_BYTES) -> None:
        self.limit = limit
        self.fetched = 0  # bodies read from the store (tests)
        self._bodies: OrderedDict[PageStamp, tuple[str, bytes]] = OrderedDict()  # (owner, body)
        self._owned: dict[str, set[PageStamp]] = {}
        self._bytes = 0

    def get(self, stamp: PageStamp) -> bytes | None:
        found = self._bodies.get(stamp)
        if found is None:
            return None
        self._bodies.move_to_end(stamp)
        return found[1]

    def owned(self, owner: str) -> list[PageStamp]:
        """The stamps of ``owner``'s pages held here (a store that can skip their bodies in
        the listing itself asks for them)."""
        return sorted(self._owned.get(owner, ()))

    def put(self, stamp: PageStamp, body: bytes, owner: str) -> None:
        self._forget(stamp)
        if len(body) > self.limit:
            return
        self._bodies[stamp] = (owner, body)
        self._owned.setdefault(owner, set()).add(stamp)
        self._bytes += len(body)
        while self._bytes > self.limit:
            self._forget(next(iter(self._bodies)))

    def _forget(self, stamp: PageStamp) -> None:
        found = self._bodies.pop(stamp, None)
        if found is None:
            return
        owner, body = found
        self._bytes -= len(body)
        stamps = self._owned[owner]
        stamps.discard(stamp)
        if not stamps:
            del self._owned[owner]

    def held(self, listed: Iterable[PageStamp]) -> tuple[dict[PageStamp, bytes | None], list[str]]:
        """The listed pages (oldest first) with the bodies held here, and the keys of those
        to fetch."""
        held = {stamp: self.get(stamp) for stamp in listed}
        return held, [stamp[0] for stamp, body in held.items() if body is None]

    def filled(
        self,
        held: dict[PageStamp, bytes | None],
        fetched: Iterable[tuple[PageStamp, bytes]],
        owner: str,
    ) -> list[tuple[str, bytes]]:
        """``(key, body)`` of ``owner``'s pages once the missing bodies are ``fetched``. A page
        gone or kept again between the listing and the fetch is left out or read as it is
        now."""
        for stamp, body in fetched:
            held[stamp] = body
            self.put(stamp, body, owner)
            self.fetched += 1
        return [(stamp[0], body) for stamp, body in held.items() if body is not None]


def evictable(
    rows: Sequence[tuple[str, str, int, float]], total: int, budget: int
) -> list[tuple[str, str]]:
    """``(kind, key)`` of the least recently used rows to drop so that ``total`` bytes fit
    ``budget``. ``rows``: ``(kind, key, size, used_at)`` of the live rows."""
    out: list[tuple[str, str]] = []
    for kind, key, size, _ in sorted(rows, key=lambda r: r[3]):
        if total <= budget:
            break
        out.append((kind, key))
        total -= size
    return out


@dataclass(slots=True)
class _Local:
    owner: str
    body: bytes | None
    expires_at: float
    ttl: float


class LocalState:
    """``SharedState`` in this process only (a store without shared session state, tests)."""

    def __init__(self, budget: int = DEFAULT_BUDGET) -> None:
        self.budget = budget
        self._rows: dict[tuple[Kind, str], _Local] = {}
        self._sweeper = Sweeper()

    async def session(self, key: str, now: float) -> tuple[bytes | None, list[tuple[str, bytes]]]:
        return await read_session(self, key, now)

    async def commit(self, commit: Commit, now: float) -> None:
        sid, ttl = commit.session, commit.ttl
        if commit.update is not None:
            await self.update("s", sid, commit.update, now, ttl)
        if commit.clear_pages:
            await self.drop("p", owner=sid)
        for key in commit.drop_pages:
            await self.drop("p", key=key)
        for key, body in commit.pages:
            await self.put("p", key, sid, body, now, ttl)
        if commit.clear_cursors:
            await self.drop("c", owner=sid)
        for token in commit.drop_cursors:
            await self.drop("c", key=token)
        for token, body, at in commit.cursors:
            await self.put("c", token, sid, body, at, ttl)

    async def get(self, kind: Kind, key: str, now: float) -> Row | None:
        row = self._rows.get((kind, key))
        if row is None or (kind != "c" and row.expires_at <= now):
            return None
        if row.expires_at + row.ttl <= now:
            return None  # past its tombstone window
        body = row.body if row.expires_at > now else None
        return Row(row.owner, body, row.expires_at)

    async def put(
        self, kind: Kind, key: str, owner: str, body: bytes, now: float, ttl: float
    ) -> None:
        self._rows[(kind, key)] = _Local(owner, body, now + ttl, ttl)
        self._maybe_sweep(now)

    async def update(self, kind: Kind, key: str, fn: Update, now: float, ttl: float) -> None:
        row = self._rows.get((kind, key))
        current = row.body if row is not None and row.expires_at > now else None
        self._rows[(kind, key)] = _Local(key, fn(current), now + ttl, ttl)
        self._maybe_sweep(now)

    async def owned(self, kind: Kind, owner: str, now: float) -> list[tuple[str, bytes]]:
        rows = [
            (r.expires_at, key, r.body)
            for (k, key), r in self._rows.items()
            if k == kind and r.owner == owner and r.body is not None and r.expires_at > now
        ]
        return [(key, body) for _, key, body in sorted(rows)]

    async def drop(self, kind: Kind, *, key: str | None = None, owner: str | None = None) -> None:
        for (k, rkey), row in list(self._rows.items()):
            if k != kind or (key is not None and rkey != key):
                continue
            if owner is None or row.owner == owner:
                del self._rows[(k, rkey)]

    async def close(self) -> None:
        self._rows.clear()

    def _maybe_sweep(self, now: float) -> None:
        if self._sweeper.due(now):
            self._sweep(now)

    async def sweep(self, now: float) -> None:
        self._sweep(now)

    def _sweep(self, now: float) -> None:
        for k, row in list(self._rows.items()):
            if row.expires_at <= now:
                if k[0] != "c" or row.expires_at + row.ttl <= now:
                    del self._rows[k]
                else:
                    row.body = None
        live = [
            (k[0], k[1], len(r.body), r.expires_at - r.ttl)
            for k, r in self._rows.items()
            if r.body is not None
        ]
        for kind, key in evictable(live, sum(r[2] for r in live), self.budget):
            if kind == "c":
                self._rows[("c", key)].body = None
            else:
                del self._rows[("s" if kind == "s" else "p", key)]
