"""The sweep of the Neo4j store's session state (``_sessions``), beside the requests.

Expired nodes go, then the least recently used bodies past the budget. The sweep used to run
inside the commit that made it due, and cost 70 ms with nothing to delete and 130 ms with
1.7k expired nodes at 39k nodes of one space (``bench/results/neo4j_session_sweep.md``): the
budget's total scanned every node of the label (every space's), the cursors' expiry scanned
the whole expiry index. Now:

- every statement seeks its nodes through an index (a hint: with ``LIMIT`` the planner
  scanned the whole index, every space's nodes, at 39k nodes): the expired ones through
  ``mnemo_state_expiry``, the total through ``mnemo_state_size`` (``size > 0`` is
  ``body IS NOT NULL``: a body's size is its length, a node without one has size 0), read
  from the index's values;
- deletes go in transactions of at most ``BATCH`` nodes (``OWNERS`` sessions with their
  deltas), each statement run again until it finds fewer: a request's write that meets a node
  being swept waits for one short transaction at most, and a sweep stopped between two
  batches left nothing half-written;
- a request only notes that a sweep is due (``Sweeps.start``); one sweep at a time runs as an
  asyncio task no request awaits. A sweep that fails is logged and the next due one tries
  again; ``close`` cancels a running one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from mnemoql.engine.session_state import evictable
from mnemoql.engine.store.neo4j._runner import Runner

log = logging.getLogger(__name__)

LABEL: Final = "MnemoState"
SIZE_INDEX: Final = (
    f"CREATE INDEX mnemo_state_size IF NOT EXISTS FOR (n:{LABEL}) ON (n.space, n.size)"
)
BATCH: Final = 250  # nodes deleted or emptied per transaction
OWNERS: Final = 25  # expired sessions per transaction, each with at most FOLD_AFTER deltas
_EXPIRED: Final = (  # a seek: with a LIMIT the planner may pick a scan of the whole index
    f"MATCH (n:{LABEL}) USING INDEX SEEK n:{LABEL}(space, expires_at) "
    "WHERE n.space = $space AND n.expires_at <= $now "
)
EXPIRE: Final = (  # pages, and cursors past their tombstone's TTL
    f"{_EXPIRED}AND n.kind IN ['p', 'c'] AND (n.kind <> 'c' OR n.expires_at + n.ttl <= $now) "
    "WITH n LIMIT $batch DELETE n RETURN count(*) AS n"
)
EXPIRE_SESSIONS: Final = (  # a session goes with its deltas, once its latest row expired
    f"{_EXPIRED}AND n.kind IN ['s', 'd'] WITH DISTINCT n.owner AS owner "
    f"MATCH (m:{LABEL} {{space: $space, owner: owner}}) WHERE m.kind IN ['s', 'd'] "
    "WITH owner, collect(m) AS rows, max(m.expires_at) AS last WHERE last <= $now "
    "WITH owner, rows LIMIT $owners UNWIND rows AS m DELETE m RETURN count(DISTINCT owner) AS n"
)
TOMBSTONE: Final = (
    f"{_EXPIRED}AND n.kind = 'c' AND n.body IS NOT NULL "
    "WITH n LIMIT $batch SET n.body = null, n.size = 0 RETURN count(*) AS n"
)
TOTAL: Final = (
    f"MATCH (n:{LABEL}) USING INDEX SEEK n:{LABEL}(space, size) "
    "WHERE n.space = $space AND n.size > 0 RETURN sum(n.size) AS total"
)
LIVE: Final = (  # a session with its deltas as one
    f"MATCH (n:{LABEL} {{space: $space}}) WHERE n.body IS NOT NULL "
    "RETURN CASE n.kind WHEN 'd' THEN 's' ELSE n.kind END AS kind, "
    "CASE n.kind WHEN 'd' THEN n.owner ELSE n.key END AS key, "
    "sum(n.size) AS size, max(n.used_at) AS used_at"
)
DROP_DELTAS: Final = (
    f"UNWIND $keys AS k MATCH (n:{LABEL} {{space: $space, kind: 'd', owner: k}}) DELETE n"
)
EVICT_ROWS: Final = (
    f"UNWIND $keys AS k MATCH (n:{LABEL} {{space: $space, kind: $kind, key: k}}) DELETE n"
)
EVICT_CURSORS: Final = (
    f"UNWIND $keys AS k MATCH (n:{LABEL} {{space: $space, kind: 'c', key: k}}) "
    "SET n.body = null, n.size = 0"
)
BATCHED: Final = {"EXPIRE": EXPIRE, "EXPIRE_SESSIONS": EXPIRE_SESSIONS, "TOMBSTONE": TOMBSTONE}


async def sweep_space(
    runner: Runner, budget: int, now: float, batch: int = BATCH, owners: int = OWNERS
) -> None:
    """Expired nodes out, batch by batch, then the least recently used past the budget."""
    params = {"now": now, "batch": batch, "owners": owners}
    for statement, limit in ((EXPIRE, batch), (EXPIRE_SESSIONS, owners), (TOMBSTONE, batch)):
        while int((await runner.run(statement, params, writable=True))[0]["n"]) >= limit:
            pass  # a full batch: there may be more
    found = await runner.run(TOTAL, writable=True)
    total = int(found[0]["total"] or 0) if found else 0
    if total <= budget:
        return
    live = await runner.run(LIVE, writable=True)
    rows = [(r["kind"], r["key"], int(r["size"] or 0), float(r["used_at"])) for r in live]
    chosen = evictable(rows, total, budget)
    for kind in ("s", "p", "c"):
        keys = [key for k, key in chosen if k == kind]
        statement = EVICT_CURSORS if kind == "c" else EVICT_ROWS
        if keys:
            await runner.run(statement, {"keys": keys, "kind": kind}, writable=True)
        if keys and kind == "s":
            await runner.run(DROP_DELTAS, {"keys": keys}, writable=True)


class Sweeps:
    """One sweep at a time as a task of the running event loop, which no request awaits."""

    def __init__(self, run: Callable[[float], Awaitable[None]]) -> None:
        self.run = run
        self.failed = 0  # sweeps that raised (tests)
        self._task: asyncio.Task[None] | None = None

    def start(self, now: float) -> None:
        """Sweep beside the caller, unless one still runs (the next due one will)."""
        loop = asyncio.get_running_loop()
        task = self._task
        if task is not None and not task.done() and task.get_loop() is loop:
            return
        self._task = loop.create_task(self._logged(now), name="mnemoql-neo4j-session-sweep")

    async def wait(self) -> None:
        """Until the running sweep (if any) is done."""
        task = self._task
        if task is not None and task.get_loop() is asyncio.get_running_loop():
            await asyncio.shield(task)

    async def close(self) -> None:
        """Cancel the running sweep and wait for it to stop (its batches done stay done)."""
        task, self._task = self._task, None
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            return
        task.cancel()
        await asyncio.wait([task])  # the sweep's own cancellation is not the caller's

    async def _logged(self, now: float) -> None:
        try:
            await self.run(now)
        except Exception as exc:  # the server away, a deadlock past the driver's retries
            self.failed += 1
            log.warning("session state sweep failed, retried at the next: %s: %s",
                        type(exc).__name__, exc)  # fmt: skip
