"""What a search reads of its candidates, on the thread that found them (issue #30, "a search
near its index").

``EmbeddedStore.route_pool`` used to go to the database thread three times: the catch-up, the
lexical route, then the candidates' rows. Here the compute thread that rescored the vector
routes reads the rows itself, through a read-only connection of its own (``PoolReader``: one
per thread, memory-mapped, so every connection shares the OS page cache instead of warming a
page cache each), and the lexical route runs beside the vector routes on such a connection
too. A search is then two trips: the catch-up on the database thread, and the computation
(one, the computation, when nothing was committed since the last catch-up: ``_watch``).

SQLite in WAL mode lets these connections read while the writer writes; the pool's reads run
in one read transaction, so the events, their chunk hashes and their concepts come from one
snapshot. Summary vectors are copied from the mirror the routes scored (the same bytes as the
BLOBs: both are the normalised float32 vector the save wrote), never read from the rows.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from mnemoql.engine.errors import StoreUnavailable
from mnemoql.engine.models import Event
from mnemoql.engine.store.embedded._index import EventView
from mnemoql.engine.store.embedded._query import IN_SET, json_set
from mnemoql.engine.store.embedded._schema import blob_vec, event_of

# Memory-mapped reads: the database file is shared through the OS page cache by every
# connection (SQLite caps it at its SQLITE_MAX_MMAP_SIZE, 2 GB by default).
MMAP_BYTES = 1 << 31
# read from the covering index chunks_hash, never from the chunk rows (_schema); an event has
# chunks exactly when it has a row here
CHUNK_HASHES_SQL = f"SELECT event_id, text_hash FROM chunks WHERE event_id IN {IN_SET}"
# the events without their vectors (the mirror has them) nor a chunk check (the hashes tell)
POOL_EVENTS_SQL = (
    "SELECT id, summary, content, time, create_time, create_date, content_hash "
    f"FROM nodes WHERE +label = 'Event' AND id IN {IN_SET}"
)
# the BLOBs of events the mirror holds no vector for (none, or one of another width)
POOL_BLOBS_SQL = f"SELECT id, embedding FROM nodes WHERE +label = 'Event' AND id IN {IN_SET}"
# Each event's MENTIONS as ``neighbours(ids, "MENTIONS", "out", CONCEPTS_PER_EVENT)`` orders
# them: what ``Delivery._concepts`` (engine/retrieval/delivery.py) would read in two more trips
# after ranking. The ids drive the join through relations_source (on the primary key's
# ``type`` the planner scanned every MENTIONS). The cap is applied while reading (a ROW_NUMBER
# window cost twice the CPU of the query).
POOL_CONCEPTS_SQL = (
    "SELECT r.source, r.target FROM json_each(?) q CROSS JOIN relations r "
    "ON r.source = q.value AND r.type = 'MENTIONS' ORDER BY r.source, r.target, r.event_key"
)
# The name ``get_nodes`` gives a concept (its id for anything but an entity), for the targets
# ``Names`` does not hold yet
NAMES_SQL = (
    "SELECT id, CASE WHEN label IN ('Person', 'Concept', 'Location') "
    f"THEN coalesce(name, '') ELSE id END FROM nodes WHERE id IN {IN_SET}"
)
CONCEPTS_PER_EVENT = 50
T = TypeVar("T")
# events, chunk text hashes and (concept id, name) MENTIONS of a search's candidates
PoolRows = tuple[
    dict[str, Event], dict[str, frozenset[str]], dict[str, tuple[tuple[str, str], ...]]
]


class Names:
    """The names of the nodes a search's events MENTIONS, by id, held across searches: a node
    never changes its label or name, and an id is never given to another node, not even after
    the node was forgotten (``id_marks``), so a name once read stays right. Reading them with
    the MENTIONS joined every concept's row in again (a third of the rows' reads, cold, at
    40 events: bench/results/search_latency_100k_s23.md). Emptied when it holds ``MOST``."""

    MOST = 200_000

    def __init__(self) -> None:
        self._names: dict[str, str] = {}

    def of(self, conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, str]:
        """The names of those of ``ids`` that exist (``NAMES_SQL``), read when not held."""
        held = self._names  # shared by the compute threads: each step is one dict operation
        got = {i: name for i in ids if (name := held.get(i)) is not None}
        missing = [i for i in dict.fromkeys(ids) if i not in got]
        if missing:
            read = dict(conn.execute(NAMES_SQL, (json_set(missing),)).fetchall())
            if len(held) + len(read) > self.MOST:
                held.clear()
            held.update(read)
            got.update(read)
        return got


class PoolReader:
    """Read-only connections to one database file, one per thread that asks, all closed by
    ``close``. Each connection is only ever used by the thread that opened it. ``run`` and
    ``interrupt`` are ``OwnThread``'s protocol (``_reader``): a caller that gives up stops the
    statements its call is running on any of these connections, never a later call's."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: list[sqlite3.Connection] = []
        self._using: dict[object, list[sqlite3.Connection]] = {}
        self._closed = False
        self.names = Names()  # the names of MENTIONS' targets, across searches
        self.opened = 0  # connections opened so far (tests count them)
        self.interrupted = 0  # statements stopped because their caller gave up

    def run(self, ticket: object, fn: Callable[[], T]) -> T:
        """``fn()`` on this thread under ``ticket``: the connections it reads through
        (``reading``) are interrupted by ``interrupt(ticket)`` while it reads."""
        before = getattr(self._local, "ticket", None)
        self._local.ticket = ticket
        try:
            return fn()
        finally:
            self._local.ticket = before

    def ticket(self) -> object | None:
        """The ticket this thread runs under (``run``), to hand to another thread's work."""
        return getattr(self._local, "ticket", None)

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection, opened on first use, interruptible under the thread's
        ticket meanwhile."""
        conn = self._conn()
        ticket = self.ticket()
        if ticket is not None:
            with self._lock:
                self._using.setdefault(ticket, []).append(conn)
        try:
            yield conn
        finally:
            if ticket is not None:
                with self._lock:
                    mine = self._using.get(ticket, [])
                    mine.remove(conn)
                    if not mine:
                        self._using.pop(ticket, None)

    def interrupt(self, ticket: object) -> None:
        with self._lock:
            for conn in self._using.get(ticket, ()):
                conn.interrupt()
                self.interrupted += 1

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreUnavailable("the embedded store is closed", zh="存储已关闭")
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        with self._lock:
            if self._closed:
                raise StoreUnavailable("the embedded store is closed", zh="存储已关闭")
            # check_same_thread off only so that ``close`` can close it from another thread
            conn = sqlite3.connect(str(self.file), isolation_level=None, check_same_thread=False)
            try:
                conn.execute("PRAGMA busy_timeout = 10000")
                conn.execute("PRAGMA query_only = ON")
                conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            except BaseException:
                conn.close()
                raise
            self._open.append(conn)
            self.opened += 1
        self._local.conn = conn
        return conn

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns, self._open = self._open, []
        for conn in conns:
            conn.close()


def more_pool_rows(
    conn: sqlite3.Connection, view: EventView, names: Names, ids: Sequence[str], known: PoolRows
) -> PoolRows:
    """What ranking and delivery read of the events a search found, in the order of ``ids``:
    the events with their summary vectors (from ``view``), the text hashes of their chunks,
    and the concepts each one MENTIONS as the evidence page shows them. Only the ids ``known``
    lacks are read (``known``: rows read earlier in the caller's ``read_snapshot``)."""
    events, hashes, concepts = known
    rest = [i for i in ids if i not in events]
    if rest:
        more = _pool_rows(conn, view, names, rest)
        events, hashes, concepts = (
            {**events, **more[0]},
            {**hashes, **more[1]},
            {**concepts, **more[2]},
        )
    kept = [i for i in ids if i in events]
    return (
        {i: events[i] for i in kept},
        {i: hashes[i] for i in kept},
        {i: concepts[i] for i in kept},
    )


def _pool_rows(
    conn: sqlite3.Connection, view: EventView, names: Names, ids: Sequence[str]
) -> PoolRows:
    found = {r[0]: r for r in conn.execute(POOL_EVENTS_SQL, (json_set(ids),))}
    order = [i for i in ids if i in found]  # as the routes found them
    known = json_set(order)
    hashes: dict[str, set[str]] = {i: set() for i in order}
    for event_id, text_hash in conn.execute(CHUNK_HASHES_SQL, (known,)):
        hashes[event_id].add(text_hash)
    targets: dict[str, list[str]] = {i: [] for i in order}
    for event_id, concept_id in conn.execute(POOL_CONCEPTS_SQL, (known,)):
        mine = targets[event_id]
        if len(mine) < CONCEPTS_PER_EVENT:
            mine.append(concept_id)
    name = names.of(conn, [c for mine in targets.values() for c in mine])
    concepts = {i: [(c, name.get(c, c)) for c in mine] for i, mine in targets.items()}
    rows = [view.row_of.get(i, -1) for i in order]
    mirrored = [0 <= r < view.n and bool(view.has_vec[r]) for r in rows]
    vecs = view.vecs[[r for r, ok in zip(rows, mirrored, strict=True) if ok]]
    blobs: dict[str, bytes | None] = {}
    if not all(mirrored):
        missing = [i for i, ok in zip(order, mirrored, strict=True) if not ok]
        blobs = dict(conn.execute(POOL_BLOBS_SQL, (json_set(missing),)).fetchall())
    events: dict[str, Event] = {}
    k = 0
    for event_id, ok in zip(order, mirrored, strict=True):
        r = found[event_id]
        if ok:
            embedding = vecs[k]
            k += 1
        else:
            embedding = blob_vec(blobs.get(event_id))
        events[event_id] = event_of(r, embedding, bool(hashes[event_id]))
    return (
        events,
        {i: frozenset(h) for i, h in hashes.items()},
        {i: tuple(c) for i, c in concepts.items()},
    )
