"""The Neo4j session state's sweep (``_session_sweep``): it removes exactly what its statements
removed before they were batched, every statement seeks its nodes through an index, and it runs
beside the requests: a commit that makes it due does not wait for it, ``close`` stops it, a
failed one is logged and the next one runs."""

from __future__ import annotations

import asyncio
import logging
import random
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mnemoql.engine.errors import StoreUnavailable
from mnemoql.engine.session_state import DEFAULT_BUDGET, Commit
from mnemoql.engine.store.neo4j import Neo4jStore
from mnemoql.engine.store.neo4j._session_sweep import BATCHED, LABEL, TOTAL, sweep_space
from mnemoql.engine.store.neo4j._sessions import Neo4jState
from tests.store.factory_neo4j import fresh_space, unreachable

pytestmark = pytest.mark.skipif(unreachable() is not None, reason=f"neo4j: {unreachable()}")

# The sweep's statements before they were batched, kept as the reference of what it removes.
_SPACE = f"MATCH (n:{LABEL} {{space: $space}}) "
BEFORE = {
    "EXPIRE": f"{_SPACE}WHERE n.expires_at <= $now AND n.kind IN ['p', 'c'] "
    "AND (n.kind <> 'c' OR n.expires_at + n.ttl <= $now) DELETE n",
    "EXPIRE_SESSIONS": f"{_SPACE}WHERE n.expires_at <= $now AND n.kind IN ['s', 'd'] "
    f"WITH DISTINCT n.owner AS owner MATCH (m:{LABEL} {{space: $space, owner: owner}}) "
    "WHERE m.kind IN ['s', 'd'] WITH owner, collect(m) AS rows, max(m.expires_at) AS last "
    "WHERE last <= $now UNWIND rows AS m DELETE m",
    "TOMBSTONE": f"MATCH (n:{LABEL} {{space: $space, kind: 'c'}}) WHERE n.expires_at <= $now "
    "AND n.body IS NOT NULL SET n.body = null, n.size = 0",
    "TOTAL": f"{_SPACE}WHERE n.body IS NOT NULL RETURN sum(n.size) AS total",
}
INSERT = (
    f"UNWIND $rows AS r CREATE (n:{LABEL} {{space: $space, kind: r.kind, key: r.key}}) "
    "SET n.owner = r.owner, n.body = r.body, n.size = r.size, n.expires_at = r.expires_at, "
    "n.ttl = r.ttl, n.used_at = r.expires_at - r.ttl, n.bookmarks = []"
)
NOW = 10_000.0
PATIENCE_S = 10.0  # a deadlock otherwise, never a timing


async def insert(store: Neo4jStore, rows: list[dict[str, Any]]) -> None:
    """State nodes as the adapter writes them (``rows``: kind, key, owner, body, size,
    expires_at, ttl), 2000 per transaction."""
    for i in range(0, len(rows), 2000):
        await store.runner.run(INSERT, {"rows": rows[i : i + 2000]}, writable=True)


def _rows(seed: int) -> list[dict[str, Any]]:
    """Sessions (some with deltas outliving their ledger), pages and cursors around ``NOW``:
    live, expired, and cursors in their grace TTL after expiry, some already emptied."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []

    def row(kind: str, key: str, owner: str, size: int, at: float, ttl: float) -> None:
        body = "x" * size if size else None
        rows.append({"kind": kind, "key": key, "owner": owner, "body": body, "size": size,
                     "expires_at": at, "ttl": ttl})  # fmt: skip

    for s in range(120):
        owner, ttl = f"s{s}", rng.choice([60.0, 900.0])
        row("s", owner, owner, 40, NOW + rng.uniform(-2 * ttl, ttl), ttl)
        for d in range(1, rng.randrange(4)):
            row("d", f"{owner}\x1f{d:012d}", owner, 8, NOW + rng.uniform(-2 * ttl, ttl), ttl)
        for p in range(rng.randrange(4)):
            row("p", f"{owner}/{p}", owner, 900, NOW + rng.uniform(-2 * ttl, ttl), ttl)
        for c in range(rng.randrange(4)):
            at = NOW + rng.uniform(-2.5 * ttl, ttl)
            row("c", f"t{s}.{c}", owner, 0 if at <= NOW and rng.random() < 0.5 else 300, at, ttl)
    return rows


async def _nodes(store: Neo4jStore) -> list[tuple[Any, ...]]:
    found = await store.runner.run(
        f"{_SPACE}RETURN n.kind AS kind, n.key AS key, n.owner AS owner, n.body AS body, "
        "n.size AS size, n.expires_at AS at ORDER BY kind, key",
        writable=True,
    )
    return [tuple(r.values()) for r in found]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Neo4jStore]:
    async with fresh_space(tmp_path) as made:
        yield made


async def test_the_sweep_removes_what_the_statements_before_it_removed(store: Neo4jStore) -> None:
    state = store.session_state(DEFAULT_BUDGET)
    await state.get("s", "nobody", NOW)  # the schema
    clear = f"{_SPACE}DELETE n"
    for seed in range(3):
        await insert(store, _rows(seed))
        before = await _nodes(store)
        for name, statement in BEFORE.items():
            if name != "TOTAL":
                await store.runner.run(statement, {"now": NOW}, writable=True)
        want = await _nodes(store)
        old_total = await store.runner.run(BEFORE["TOTAL"], writable=True)
        await store.runner.run(clear, writable=True)
        await insert(store, _rows(seed))
        await sweep_space(store.runner, DEFAULT_BUDGET, NOW, batch=7, owners=2)  # many batches
        got = await _nodes(store)
        new_total = await store.runner.run(TOTAL, writable=True)
        await store.runner.run(clear, writable=True)
        assert got == want
        assert len(got) < len(before)  # the seed had something to delete
        assert new_total == old_total and new_total[0]["total"] > 0


async def test_every_sweep_statement_seeks_its_nodes_through_an_index(store: Neo4jStore) -> None:
    state = store.session_state(DEFAULT_BUDGET)
    await state.get("s", "nobody", NOW)  # the schema
    await insert(store, _rows(0))
    await store.runner.run("CALL db.awaitIndexes(60)", writable=True)
    expected = {**{name: "(space, expires_at)" for name in BATCHED}, "TOTAL": "(space, size)"}
    params = {"space": store.runner.space, "now": NOW, "batch": 5, "owners": 2}
    for name, statement in {**BATCHED, "TOTAL": TOTAL}.items():
        result = await store.runner.driver.execute_query(
            "EXPLAIN " + statement, params, database_=store.runner.database
        )
        steps = _steps(result.summary.plan)
        operators = [op for op, _ in steps]
        assert not any("Scan" in op for op in operators), (name, steps)
        leaf = next(details for op, details in steps if op.startswith("NodeIndexSeek"))
        assert f":{LABEL}{expected[name]} WHERE space = $space" in leaf, (name, steps)
        if name == "TOTAL":  # the sizes read from the index, no node's property: the seek
            # caches them, and a filter the planner may add after it reads only the cache
            assert "cache[n.size]" in leaf, steps
            filters = [details for op, details in steps if op == "Filter"]
            assert all(re.sub(r"cache\[n\.\w+\]", "", f).count("n.") == 0 for f in filters), steps


def _steps(plan: Any) -> list[tuple[str, str]]:
    here = (str(plan["operatorType"]).split("@")[0], str(plan.get("args", {}).get("Details", "")))
    return [here, *(s for child in plan.get("children", []) for s in _steps(child))]


# ---------------------------------------------------------------- beside the requests


def _page_commit(n: int) -> Commit:
    return Commit("s1", 60.0, pages=[(f"s1\x1fpage{n}", b"P" * 2000)])


def _gate(state: Neo4jState) -> tuple[asyncio.Event, asyncio.Event, list[float]]:
    """Hold the state's background sweep until ``release``: ``started`` once one runs; the
    real sweep follows the release."""
    started, release, ran = asyncio.Event(), asyncio.Event(), []
    real = state.sweeps.run

    async def gated(now: float) -> None:
        ran.append(now)
        started.set()
        await asyncio.wait_for(release.wait(), PATIENCE_S)
        await real(now)

    state.sweeps.run = gated
    return started, release, ran


async def _expired_page(state: Neo4jState) -> None:
    await state.put("p", "old", "s0", b"gone", NOW - 100, 60.0)


async def test_a_commit_that_makes_a_sweep_due_does_not_wait_for_it(store: Neo4jStore) -> None:
    state = store.session_state(DEFAULT_BUDGET)
    await _expired_page(state)
    state._sweeper.every = 1  # every write makes one due
    started, release, ran = _gate(state)
    # both commits return while the first sweep is held: no request waits for it
    await asyncio.wait_for(state.commit(_page_commit(1), NOW), PATIENCE_S)
    await asyncio.wait_for(started.wait(), PATIENCE_S)
    await asyncio.wait_for(state.commit(_page_commit(2), NOW), PATIENCE_S)
    assert ran == [NOW]  # one at a time: the second due one found it running
    assert await state.get("p", "old", NOW - 90) is not None
    release.set()
    await asyncio.wait_for(state.sweeps.wait(), PATIENCE_S)
    assert await state.get("p", "old", NOW - 90) is None  # the held sweep did its work
    assert await state.get("p", "s1\x1fpage2", NOW) is not None
    await asyncio.wait_for(state.commit(_page_commit(3), NOW + 1), PATIENCE_S)
    await asyncio.wait_for(state.sweeps.wait(), PATIENCE_S)
    assert ran == [NOW, NOW + 1]  # the next due one runs once the first is done


async def test_close_stops_a_running_sweep(
    store: Neo4jStore, caplog: pytest.LogCaptureFixture
) -> None:
    state = store.session_state(DEFAULT_BUDGET)
    state._sweeper.every = 1
    started, _, ran = _gate(state)
    await state.commit(_page_commit(1), NOW)
    await asyncio.wait_for(started.wait(), PATIENCE_S)
    task = state.sweeps._task
    assert task is not None and not task.done()
    with caplog.at_level(logging.WARNING):
        await asyncio.wait_for(state.close(), PATIENCE_S)
    assert task.cancelled()
    assert state.sweeps.failed == 0 and not caplog.records
    assert await state.get("p", "s1\x1fpage1", NOW) is not None  # the commit stands
    assert ran == [NOW]


async def test_a_failed_sweep_is_logged_and_the_next_one_runs(
    store: Neo4jStore, caplog: pytest.LogCaptureFixture
) -> None:
    state = store.session_state(DEFAULT_BUDGET)
    await _expired_page(state)
    state._sweeper.every = 1
    real, calls = state.sweeps.run, []

    async def flaky(now: float) -> None:
        calls.append(now)
        if len(calls) == 1:
            raise StoreUnavailable("Neo4j at bolt://x is unavailable (test)")
        await real(now)

    state.sweeps.run = flaky
    with caplog.at_level(logging.WARNING):
        await state.commit(_page_commit(1), NOW)
        await asyncio.wait_for(state.sweeps.wait(), PATIENCE_S)
    assert state.sweeps.failed == 1
    assert any("sweep failed" in r.getMessage() and "unavailable" in r.getMessage()
               for r in caplog.records if r.levelno == logging.WARNING)  # fmt: skip
    assert await state.get("p", "old", NOW - 90) is not None  # not swept yet
    await state.commit(_page_commit(2), NOW + 1)
    await asyncio.wait_for(state.sweeps.wait(), PATIENCE_S)
    assert calls == [NOW, NOW + 1] and state.sweeps.failed == 1
    assert await state.get("p", "old", NOW - 90) is None
