"""The Neo4j store's session state (``engine.session_state.SharedState``): one
``MnemoState`` node per session or cursor of the space, swept by their TTL.

Every replica over one Neo4j (``mnemoql serve`` processes behind a load balancer without
stickiness) reads and writes the same nodes. They are read with write routing (the cluster's
leader), so a follow-up never reads a session older than its last commit.

**Bookmarks.** On a cluster a replica may read from a follower that has not applied a write
another replica just made. A session row carries the bookmarks of the process that last
committed to it (``Memory.remember_writes`` records them after a save too); a replica that
loads the session hands them to its driver's bookmark manager, so its next reads wait until
the server has the writes this session saw. On a single server they cost nothing.

**A session's read** is one statement: the ledger and its kept pages listed without their
bodies the process holds (``PageCache``), in one record (the async driver spends ~80 us of
client CPU per record: 64 page records were ~5 ms of a ~10 ms read). A body let go of while
the statement ran is read by a second one.

**The sweep** of expired nodes and of the budget runs beside the requests, in short batches
(``_session_sweep``): a write that makes one due only starts it.

**A call's commit** appends its ledger change as a ``d`` node (``session_state``): the
session's node is locked and its deltas listed, its body is neither read nor written.
"""

from __future__ import annotations

from typing import Any, Final

from mnemoql.engine.session_state import (
    FOLD_AFTER,
    Commit,
    Kind,
    PageCache,
    PageStamp,
    Row,
    Sweeper,
    Update,
)
from mnemoql.engine.store.neo4j._runner import Runner
from mnemoql.engine.store.neo4j._session_sweep import (
    DROP_DELTAS,
    LABEL,
    SIZE_INDEX,
    Sweeps,
    sweep_space,
)

SCHEMA: Final = (
    f"CREATE CONSTRAINT mnemo_state_key IF NOT EXISTS FOR (n:{LABEL}) "
    "REQUIRE (n.space, n.kind, n.key) IS UNIQUE",
    f"CREATE INDEX mnemo_state_expiry IF NOT EXISTS FOR (n:{LABEL}) ON (n.space, n.expires_at)",
    f"CREATE INDEX mnemo_state_owner IF NOT EXISTS FOR (n:{LABEL}) ON (n.space, n.kind, n.owner)",
    SIZE_INDEX,
)
_ROW: Final = f"(n:{LABEL} {{space: $space, kind: $kind, key: $key}})"
_DELTAS: Final = (  # a session's deltas in order (none for another kind's row)
    f"OPTIONAL MATCH (d:{LABEL} {{space: $space, kind: 'd', owner: $key}}) WHERE $kind = 's' "
    "WITH n, d ORDER BY d.key WITH n, collect(d.body) AS deltas, "
    "collect([d.key, d.expires_at]) AS listed "
)
GET: Final = (
    f"MATCH {_ROW} {_DELTAS}RETURN n.owner AS owner, n.body AS body, n.expires_at AS expires_at, "
    "n.ttl AS ttl, n.bookmarks AS bookmarks, deltas, listed"
)
LOCK_LEDGER: Final = (  # the session's write lock, its bookmarks, its deltas' keys; no body
    f"MERGE {_ROW} ON CREATE SET n.expires_at = 0.0, n.ttl = 0.0, n.size = 0 "
    "SET n.owner = $key, n.bookmarks = $bookmarks WITH n "
    f"OPTIONAL MATCH (d:{LABEL} {{space: $space, kind: 'd', owner: $key}}) "
    "WITH n, d ORDER BY d.key "
    "RETURN n.expires_at AS expires_at, collect([d.key, d.expires_at]) AS listed"
)
PUT: Final = (
    f"MERGE {_ROW} SET n.owner = $owner, n.body = $body, n.size = $size, "
    "n.expires_at = $expires_at, n.ttl = $ttl, n.used_at = $now, n.bookmarks = $bookmarks"
)
LOCK: Final = (  # MERGE + SET takes the node's write lock before its body is read
    f"MERGE {_ROW} ON CREATE SET n.expires_at = 0.0, n.ttl = 0.0, n.size = 0 "
    "SET n.owner = $key RETURN n.body AS body, n.expires_at AS expires_at"
)
DROP: Final = (  # a session's deltas (owned by its key) go with it
    f"MATCH (n:{LABEL} {{space: $space}}) WHERE (n.kind = $kind "
    "AND ($key IS NULL OR n.key = $key) AND ($owner IS NULL OR n.owner = $owner)) "
    "OR ($kind = 's' AND n.kind = 'd' AND ($key IS NULL OR n.owner = $key) "
    "AND ($owner IS NULL OR n.owner = $owner)) DELETE n"
)
DROP_ALL: Final = f"MATCH (n:{LABEL} {{space: $space}}) DELETE n RETURN count(*) AS n"
OWNED: Final = (
    f"MATCH (n:{LABEL} {{space: $space, kind: $kind, owner: $owner}}) "
    "WHERE n.expires_at > $now AND n.body IS NOT NULL "
    "RETURN n.key AS key, n.body AS body ORDER BY n.used_at, n.key"
)
SESSION: Final = (  # the ledger, its deltas and its live pages in one record; no body held
    f"MATCH (s:{LABEL} {{space: $space, kind: 's', key: $key}}) WHERE s.body IS NOT NULL "
    f"OPTIONAL MATCH (d:{LABEL} {{space: $space, kind: 'd', owner: $key}}) "
    "WITH s, d ORDER BY d.key WITH s, collect(d.body) AS deltas, max(d.expires_at) AS last "
    "WHERE s.expires_at > $now OR last > $now "
    f"OPTIONAL MATCH (n:{LABEL} {{space: $space, kind: 'p', owner: $key}}) "
    "WHERE n.expires_at > $now AND n.body IS NOT NULL "
    "WITH s, deltas, n ORDER BY n.used_at, n.key "
    "RETURN s.body AS body, deltas, s.bookmarks AS bookmarks, "
    "collect(CASE WHEN n IS NOT NULL THEN "
    "[n.key, n.used_at, n.size, CASE WHEN [n.key, n.used_at] IN $held THEN null ELSE n.body END] "
    "END) AS pages"
)
BODIES: Final = (
    f"UNWIND $keys AS k MATCH (n:{LABEL} {{space: $space, kind: 'p', key: k}}) "
    "WHERE n.body IS NOT NULL RETURN collect([n.key, n.used_at, n.size, n.body]) AS pages"
)


DROP_OWNED: Final = f"MATCH (n:{LABEL} {{space: $space, kind: $kind, owner: $owner}}) DELETE n"
DROP_KEYS: Final = (
    f"UNWIND $keys AS k MATCH (n:{LABEL} {{space: $space, kind: $kind, key: k}}) DELETE n"
)
PUT_MANY: Final = (
    f"UNWIND $rows AS r MERGE (n:{LABEL} {{space: $space, kind: $kind, key: r.key}}) "
    "SET n.owner = $owner, n.body = r.body, n.size = r.size, n.expires_at = r.at + $ttl, "
    "n.ttl = $ttl, n.used_at = r.at, n.bookmarks = []"
)


class Neo4jState:
    """Session and cursor nodes of one space, through the store's own driver."""

    causal = True  # sessions carry bookmarks (``Memory.remember_writes``)

    def __init__(self, runner: Runner, budget: int) -> None:
        self.runner = runner
        self.budget = budget
        self._sweeper = Sweeper()
        self.sweeps = Sweeps(self.sweep)
        self._ready = False
        self.page_cache = PageCache()

    async def _schema(self) -> None:
        if not self._ready:
            for statement in SCHEMA:
                await self.runner.schema(statement)
            self._ready = True

    async def _bookmarks(self) -> list[str]:
        manager = self.runner.driver.execute_query_bookmark_manager
        return sorted(await manager.get_bookmarks())

    async def session(self, key: str, now: float) -> tuple[bytes | None, list[tuple[str, bytes]]]:
        await self._schema()
        held_here = [[k, u] for k, u, _ in self.page_cache.owned(key)]
        params = {"key": key, "now": now, "held": held_here}
        rows = await self.runner.run(SESSION, params, writable=True)
        if not rows:
            return None, []
        await self._follow(rows[0]["bookmarks"])
        listed = [(_stamp(p), p[3]) for p in rows[0]["pages"]]
        held, missing = self.page_cache.held(stamp for stamp, _ in listed)
        fetched = [(stamp, str(body).encode()) for stamp, body in listed if body is not None]
        late = set(missing) - {stamp[0] for stamp, _ in fetched}
        if late:  # let go of meanwhile (another read filled the cache): a second statement
            found = await self.runner.run(BODIES, {"keys": sorted(late)}, writable=True)
            fetched += [(_stamp(p), str(p[3]).encode()) for p in found[0]["pages"]]
        ledger = "\n".join([str(rows[0]["body"]), *rows[0]["deltas"]]).encode()
        return ledger, self.page_cache.filled(held, fetched, key)

    async def _follow(self, bookmarks: list[str] | None) -> None:
        """Read what this session's last call saw, on any replica."""
        if bookmarks:
            manager = self.runner.driver.execute_query_bookmark_manager
            await manager.update_bookmarks([], list(bookmarks))

    async def commit(self, commit: Commit, now: float) -> None:
        await self._schema()
        bookmarks = await self._bookmarks()
        sid, ttl, space = commit.session, commit.ttl, self.runner.space

        async def write(tx: Any) -> None:
            if commit.update is not None:
                await self._append(tx, commit, commit.update, now, bookmarks)
            for kind, clear in (("p", commit.clear_pages), ("c", commit.clear_cursors)):
                if clear:
                    await tx.run(DROP_OWNED, space=space, kind=kind, owner=sid)
            for kind, keys in (("p", commit.drop_pages), ("c", commit.drop_cursors)):
                if keys:
                    await tx.run(DROP_KEYS, space=space, kind=kind, keys=keys)
            for kind, rows in (
                ("p", [(k, b, now) for k, b in commit.pages]),
                ("c", commit.cursors),
            ):
                if rows:
                    params = [{"key": k, "body": b.decode(), "size": len(b), "at": at}
                              for k, b, at in rows]  # fmt: skip
                    await tx.run(PUT_MANY, space=space, kind=kind, owner=sid, ttl=ttl, rows=params)

        await self.runner.write(write)
        for k, b in commit.pages:  # committed: this process need not read them back
            self.page_cache.put((k, now, len(b)), b, sid)
        await self._maybe_sweep(now)

    async def get(self, kind: Kind, key: str, now: float) -> Row | None:
        await self._schema()
        rows = await self.runner.run(GET, {"kind": kind, "key": key}, writable=True)
        if not rows:
            return None
        found = rows[0]
        expires_at, ttl = float(found["expires_at"] or 0), float(found["ttl"] or 0)
        expires_at = max([expires_at, *(float(d[1]) for d in found["listed"] if d[0])])
        if (kind != "c" and expires_at <= now) or expires_at + ttl <= now:
            return None
        await self._follow(found["bookmarks"])
        body = found["body"]
        if body is not None and found["deltas"]:
            body = "\n".join([body, *found["deltas"]])
        live = body is not None and expires_at > now
        return Row(found["owner"], body.encode() if live else None, expires_at)

    async def put(
        self, kind: Kind, key: str, owner: str, body: bytes, now: float, ttl: float
    ) -> None:
        await self._schema()
        params: dict[str, Any] = {
            "kind": kind,
            "key": key,
            "owner": owner,
            "body": body.decode(),
            "size": len(body),
            "expires_at": now + ttl,
            "ttl": ttl,
            "now": now,
            "bookmarks": [],
        }
        await self.runner.run(PUT, params, writable=True)
        await self._maybe_sweep(now)

    async def update(self, kind: Kind, key: str, fn: Update, now: float, ttl: float) -> None:
        await self._schema()
        bookmarks = await self._bookmarks()

        async def merge(tx: Any) -> None:
            found = await (await tx.run(LOCK, space=self.runner.space, kind=kind, key=key)).single()
            current = found["body"] if found and float(found["expires_at"]) > now else None
            if kind == "s":
                current = await _ledger(tx, self.runner.space, key, now)
            await self._put(tx, kind, key, fn(current.encode() if current else None), now, ttl,
                            bookmarks)  # fmt: skip

        await self.runner.write(merge)
        await self._maybe_sweep(now)

    async def _append(
        self, tx: Any, commit: Commit, fn: Update, now: float, bookmarks: list[str]
    ) -> None:
        """Store a call's ledger change: a delta node, or the merge (``session_state``)."""
        sid, ttl, delta, space = commit.session, commit.ttl, commit.delta, self.runner.space
        found = await (
            await tx.run(LOCK_LEDGER, space=space, kind="s", key=sid, bookmarks=bookmarks)
        ).single()
        listed = [d for d in found["listed"] if d[0] is not None]
        live = max([float(found["expires_at"]), *(float(d[1]) for d in listed)]) > now
        if delta is not None and live and len(listed) < FOLD_AFTER:
            number = int(str(listed[-1][0]).rsplit("\x1f", 1)[1]) + 1 if listed else 1
            await tx.run(
                PUT, space=space, kind="d", key=f"{sid}\x1f{number:012d}", owner=sid,
                body=delta.decode(), size=len(delta), expires_at=now + ttl, ttl=ttl, now=now,
                bookmarks=[],
            )  # fmt: skip
            return
        current = await _ledger(tx, space, sid, now) if live else None
        await self._put(tx, "s", sid, fn(current.encode() if current else None), now, ttl,
                        bookmarks)  # fmt: skip

    async def _put(
        self, tx: Any, kind: Kind, key: str, body: bytes, now: float, ttl: float,
        bookmarks: list[str],
    ) -> None:  # fmt: skip
        """Write a row merged from its current body; a session's deltas are folded into it."""
        space = self.runner.space
        await tx.run(
            PUT, space=space, kind=kind, key=key, owner=key, body=body.decode(), size=len(body),
            expires_at=now + ttl, ttl=ttl, now=now, bookmarks=bookmarks,
        )  # fmt: skip
        if kind == "s":
            await tx.run(DROP_DELTAS, space=space, keys=[key])

    async def owned(self, kind: Kind, owner: str, now: float) -> list[tuple[str, bytes]]:
        await self._schema()
        params = {"kind": kind, "owner": owner, "now": now}
        rows = await self.runner.run(OWNED, params, writable=True)
        return [(str(r["key"]), str(r["body"]).encode()) for r in rows]

    async def drop(self, kind: Kind, *, key: str | None = None, owner: str | None = None) -> None:
        await self._schema()
        await self.runner.run(DROP, {"kind": kind, "key": key, "owner": owner}, writable=True)

    async def _maybe_sweep(self, now: float) -> None:
        if self._sweeper.due(now):
            self.sweeps.start(now)  # beside the request (``_session_sweep``)

    async def sweep(self, now: float) -> None:
        """Expired nodes out, then the least recently used past the budget."""
        await self._schema()
        await sweep_space(self.runner, self.budget, now)

    async def close(self) -> None:
        await self.sweeps.close()


async def _ledger(tx: Any, space: str, key: str, now: float) -> str | None:
    """A live session's ledger then its deltas, one line each (its lock held)."""
    found = await (await tx.run(GET, space=space, kind="s", key=key)).single()
    if found is None or found["body"] is None:
        return None
    last = max([float(found["expires_at"]), *(float(d[1]) for d in found["listed"] if d[0])])
    return "\n".join([found["body"], *found["deltas"]]) if last > now else None


def _stamp(page: list[Any]) -> PageStamp:
    return str(page[0]), float(page[1]), int(page[2])
