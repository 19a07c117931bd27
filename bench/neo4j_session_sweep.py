"""Neo4j session state's sweep over ~38k state nodes of one space, with nothing to delete and
with ~1.7k expired nodes to delete, and the plan of each of its statements.

    python -m bench.neo4j_session_sweep --rounds 5

Needs a Neo4j server in ``MNEMOQL_TEST_NEO4J_*`` (``tests/store/factory_neo4j.py``); a space of
its own is written and dropped. The space holds 2000 live sessions, each with 3 deltas, 12 kept
pages of 2 KB and 3 cursors (one an expired tombstone in its grace TTL): 38k nodes. Each
round times ``Neo4jState.sweep`` with nothing expired, then adds 80 expired sessions with their
rows (1520 nodes) and 200 expired cursors still holding a body, and times the sweep that
deletes (or empties) them. Then a commit that makes a sweep due (with as much to delete) is
timed, the sweep awaited after it; then commits of another request are timed while a sweep
with as much to delete runs beside them, and without one. ``--before`` times the statements
the sweep ran before they were batched (``tests/store/test_neo4j_session_sweep.BEFORE``).
Then each statement is run once under ``PROFILE``: its operators and database hits.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from neo4j import RoutingControl

from mnemoql.engine.session_state import DEFAULT_BUDGET, Commit
from mnemoql.engine.store.neo4j._session_sweep import BATCH, BATCHED, LABEL, OWNERS, TOTAL
from mnemoql.engine.store.neo4j._sessions import Neo4jState
from mnemoql.engine.store.neo4j.store import Neo4jStore
from tests.store.factory_neo4j import make
from tests.store.test_neo4j_session_sweep import BEFORE, insert

NOW = 2_000_000.0
TTL = 900.0
SESSIONS = 2000


def session_rows(name: str, at: float) -> list[dict[str, Any]]:
    """A session expiring at ``at`` with 3 deltas, 12 pages and 3 cursors (the last expired
    ``TTL / 2`` before ``at`` and emptied: a tombstone)."""

    def row(kind: str, key: str, size: int, expires_at: float) -> dict[str, Any]:
        body = "x" * size if size else None
        return {"kind": kind, "key": key, "owner": name, "body": body, "size": size,
                "expires_at": expires_at, "ttl": TTL}  # fmt: skip

    rows = [row("s", name, 1000, at)]
    rows += [row("d", f"{name}\x1f{n:012d}", 200, at) for n in range(1, 4)]
    rows += [row("p", f'{name}\x1f["search", "q{n}"]', 2000, at) for n in range(12)]
    rows += [row("c", f"{name}.c{n}", 300, at) for n in range(2)]
    rows.append(row("c", f"{name}.c2", 0, at - TTL / 2))
    return rows


def expiring(round_: int) -> list[dict[str, Any]]:
    """1520 nodes past their grace TTL and 200 cursors just expired with a body."""
    rows = [r for i in range(80) for r in session_rows(f"gone{round_}.{i}", NOW - 2 * TTL - 1)]
    rows += session_rows(f"late{round_}", NOW - 1)[:1]
    late = {"owner": f"late{round_}", "body": "c" * 300, "size": 300, "expires_at": NOW - 1}
    rows += [{"kind": "c", "key": f"late{round_}.c{n}", "ttl": TTL, **late} for n in range(200)]
    return rows


async def timed(fn: Any) -> float:
    t = time.perf_counter()
    await fn()
    return (time.perf_counter() - t) * 1000


def spread(ms: list[float]) -> str:
    p95 = statistics.quantiles(ms, n=20, method="inclusive")[-1] if len(ms) > 1 else ms[0]
    return f"median {statistics.median(ms):.1f} ms, p95 {p95:.1f}, max {max(ms):.1f} (n={len(ms)})"


def walk(plan: Any, depth: int = 0) -> list[str]:
    hits = plan.get("dbHits", 0)
    details = str(plan.get("args", {}).get("Details", ""))[:90]
    out = [f"{'  ' * depth}{plan['operatorType']} rows={plan.get('rows', 0)} hits={hits} {details}"]
    for child in plan.get("children", []):
        out += walk(child, depth + 1)
    return out


def total_hits(plan: Any) -> int:
    return int(plan.get("dbHits", 0)) + sum(total_hits(c) for c in plan.get("children", []))


async def profile(store: Neo4jStore, statements: dict[str, str], params: dict[str, Any]) -> None:
    for name, statement in statements.items():
        driver = store.runner.driver
        t = time.perf_counter()
        result = await driver.execute_query(
            "PROFILE " + statement, {"space": store.runner.space, **params},
            routing_=RoutingControl.WRITE, database_=store.runner.database,
        )  # fmt: skip
        ms = (time.perf_counter() - t) * 1000
        plan = result.summary.profile
        print(f"\n{name}: {ms:.1f} ms, db hits {total_hits(plan)}")
        print("\n".join("    " + line for line in walk(plan)))


async def run(rounds: int, before: bool) -> None:
    store = make(Path("."), f"bench{uuid.uuid4().hex[:12]}")
    await store.open()
    state: Neo4jState = store.session_state(DEFAULT_BUDGET)
    try:
        await state.get("s", "nobody", NOW)  # the schema
        live = [r for i in range(SESSIONS) for r in session_rows(f"s{i}", NOW + 10 + i % 890)]
        await insert(store, live)
        if before:

            async def sweep() -> None:
                for statement in BEFORE.values():
                    await store.runner.run(statement, {"now": NOW}, writable=True)
        else:

            async def sweep() -> None:
                await state.sweep(NOW)

        await sweep()  # warm: plans cached
        idle, busy = [], []
        for r in range(rounds):
            idle.append(await timed(sweep))
            rows = expiring(r)
            await insert(store, rows)
            busy.append(await timed(sweep))
        count = await store.runner.run(
            f"MATCH (n:{LABEL} {{space: $space}}) RETURN count(n) AS n", writable=True
        )
        print(f"{count[0]['n']} nodes in the space; {len(rows)} expired per busy round; "
              f"{'statements before' if before else 'Neo4jState.sweep'}")  # fmt: skip
        print(f"sweep, nothing to delete:   median {statistics.median(idle):7.1f} ms  "
              f"(min {min(idle):.1f}, max {max(idle):.1f})")  # fmt: skip
        print(f"sweep, {len(rows)} to delete:    median {statistics.median(busy):7.1f} ms  "
              f"(min {min(busy):.1f}, max {max(busy):.1f})")  # fmt: skip
        page = [("bench\x1fpage", b"P" * 2000)]

        async def write() -> None:
            await state.commit(Commit("bench", TTL, pages=page), NOW)

        if not before:  # a write that makes a sweep due, which then runs beside it
            state._sweeper.every, due = 1, []
            for r in range(rounds):
                await insert(store, expiring(rounds + 1 + r))
                due.append(await timed(write))
                await state.sweeps.wait()
            print(f"a commit making the sweep due ({len(rows)} to delete): median "
                  f"{statistics.median(due):5.1f} ms (max {max(due):.1f})")  # fmt: skip
        state._sweeper.every, state._sweeper.seconds = 10**9, 1e12  # none due
        quiet, during = [], []
        for r in range(rounds):  # another request's commits while a sweep runs
            for _ in range(5):
                quiet.append(await timed(write))
            await insert(store, expiring(2 * rounds + 1 + r))
            sweeping = asyncio.ensure_future(sweep())
            while not sweeping.done():
                during.append(await timed(write))
            await sweeping
        print(f"another request's commits: no sweep {spread(quiet)}; "
              f"while a sweep deletes {len(rows)} {spread(during)}")  # fmt: skip
        await insert(store, expiring(rounds))
        statements = dict(BEFORE) if before else {**BATCHED, "TOTAL": TOTAL}
        await profile(store, statements, {"now": NOW, "batch": BATCH, "owners": OWNERS})
    finally:
        await store.drop_space()
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", action="store_true", help="the statements before batching")
    args = parser.parse_args()
    asyncio.run(run(args.rounds, args.before))


if __name__ == "__main__":
    main()
