"""The embedded session file's sweep reads only the rows that expired: every statement finds
them through an index, and it removes exactly what the whole-table statements before it
removed (a scan read every row's body: 70 ms and more per sweep at 40k session rows). It runs
with the log's checkpoint beside the searches (``_upkeep``), never inside a commit."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
from pathlib import Path

import pytest

from mnemoql.engine.session_state import DEFAULT_BUDGET, Commit
from mnemoql.engine.store.embedded import _sessions, _upkeep
from mnemoql.engine.store.embedded._sessions import DDL, SqliteState
from mnemoql.engine.store.embedded._upkeep import _SWEEP, sweep, sweep_step

# The sweep's statements before the index, kept here as the reference of what it removes.
WHOLE_TABLE = (
    "DELETE FROM state WHERE kind IN ('p', 'c') AND ((kind != 'c' AND expires_at <= :now) "
    "OR expires_at + ttl <= :now)",
    "DELETE FROM state WHERE kind IN ('s', 'd') AND owner IN (SELECT owner FROM state "
    "WHERE kind IN ('s', 'd') GROUP BY owner HAVING max(expires_at) <= :now)",
    "UPDATE state SET body = NULL, size = 0 "
    "WHERE kind = 'c' AND expires_at <= :now AND body IS NOT NULL",
)
NOW = 10_000.0
PATIENCE_S = 10.0  # a deadlock otherwise, never a timing


def _filled(file: Path, seed: int) -> sqlite3.Connection:
    """A session file with sessions (some with deltas), pages and cursors around ``NOW``:
    live, expired, and cursors in their grace TTL after expiry, some already emptied."""
    rng = random.Random(seed)
    conn = sqlite3.connect(file, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")  # a scratch file
    conn.executescript(DDL)
    rows = []
    for s in range(120):
        owner, ttl = f"s{s}", rng.choice([60.0, 900.0])
        rows.append(("s", owner, owner, b"L" * 40, 40, NOW + rng.uniform(-2 * ttl, ttl), ttl, 0))
        for d in range(rng.randrange(3)):
            at = NOW + rng.uniform(-2 * ttl, ttl)
            rows.append(("d", f"{owner}.{d}", owner, b"D" * 8, 8, at, ttl, 0))
        for p in range(rng.randrange(4)):
            at = NOW + rng.uniform(-2 * ttl, ttl)
            rows.append(("p", f"{owner}/{p}", owner, b"P" * 900, 900, at, ttl, 0))
        for c in range(rng.randrange(4)):
            at = NOW + rng.uniform(-2.5 * ttl, ttl)
            body = None if at <= NOW and rng.random() < 0.5 else b"C" * 300
            size = 0 if body is None else len(body)
            rows.append(("c", f"t{s}.{c}", owner, body, size, at, ttl, 0))
    with conn:
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO state VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return conn


def _rows(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
    return conn.execute("SELECT * FROM state ORDER BY kind, key").fetchall()


def test_the_sweep_removes_what_the_whole_table_statements_removed(tmp_path: Path) -> None:
    for seed in range(5):
        reference = _filled(tmp_path / f"want{seed}", seed)
        for sql in WHOLE_TABLE:
            reference.execute(sql, {"now": NOW})
        want = _rows(reference)
        swept = _filled(tmp_path / f"got{seed}", seed)
        sweep(swept, NOW, budget=10**12, batch=7)  # many batches of each statement
        got = _rows(swept)
        before = _filled(tmp_path / f"before{seed}", seed).execute("SELECT count(*) FROM state")
        assert got == want
        assert len(got) < before.fetchone()[0]  # the seed had something to sweep


def test_every_sweep_statement_finds_its_rows_through_an_index(tmp_path: Path) -> None:
    conn = _filled(tmp_path / "plan", 0)
    conn.execute("ANALYZE")  # statistics as a large file has them: no plan by luck
    for sql in _SWEEP:
        args = {"now": NOW, "batch": 500}
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, args)]
        assert not any(step.startswith("SCAN") for step in plan), (sql, plan)
        assert any("INDEX state_expiring" in step for step in plan), (sql, plan)


# ---------------------------------------------------------------- upkeep beside the searches


def _page_commit(n: int) -> Commit:
    return Commit("s1", 60.0, pages=[(f"s1\x1fpage{n}", b"P" * 2000)])


def _in_main_file(file: Path) -> int:
    """Page rows in the database file itself, as a checkpoint left it (the log ignored; 0
    before the table itself was checkpointed)."""
    conn = sqlite3.connect(f"file:{file}?immutable=1", uri=True)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'state'").fetchone():
            return 0
        return int(conn.execute("SELECT count(*) FROM state WHERE kind = 'p'").fetchone()[0])
    finally:
        conn.close()


async def test_a_commit_that_makes_a_sweep_due_does_not_wait_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = SqliteState(tmp_path / "space.sqlite3-sessions", DEFAULT_BUDGET)
    state._sweeper.every = 1  # every commit makes one due
    release = threading.Event()

    def held(*args: object, **kwargs: object) -> int | None:
        assert release.wait(PATIENCE_S), "the test never released the sweep"
        return sweep_step(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_sessions, "sweep_step", held)
    try:
        # the sweep's first batch is held: the commit that made it due has returned
        await asyncio.wait_for(state.commit(_page_commit(1), NOW), PATIENCE_S)
        release.set()
        await asyncio.wait_for(state.upkept(), PATIENCE_S)
    finally:
        release.set()
        await state.close()


async def test_calls_are_served_between_the_sweeps_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each batch queues the next behind the calls that came meanwhile: a session read asked
    while a long sweep runs is served before the sweep ends."""
    monkeypatch.setattr(_upkeep, "SWEEP_BATCH", 1)
    state = SqliteState(tmp_path / "space.sqlite3-sessions", DEFAULT_BUDGET)
    state._sweeper.every = 10**9
    steps: list[int] = []

    def counted(*args: object, **kwargs: object) -> int | None:
        steps.append(1)
        return sweep_step(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_sessions, "sweep_step", counted)
    try:
        for n in range(40):  # pages that expired long ago
            await state.put("p", f"s1\x1fold{n}", "s1", b"P" * 500, NOW - 10_000, 60.0)
        state._sweep_due(NOW)
        await state.session("s2", NOW)
        served_after = len(steps)
        await asyncio.wait_for(state.upkept(), PATIENCE_S)
        assert len(steps) >= 40  # one batch per row, then the budget's step
        assert served_after < len(steps)
        assert await state.owned("p", "s1", NOW - 20_000) == []  # all swept
    finally:
        await state.close()


async def test_the_log_is_checkpointed_after_a_sweep_and_never_in_a_commit(
    tmp_path: Path,
) -> None:
    file = tmp_path / "space.sqlite3-sessions"
    state = SqliteState(file, DEFAULT_BUDGET)
    state._sweeper.every = 10**9  # no upkeep until the test starts it
    try:
        for n in range(600):  # ~2000 log pages: past SQLite's own checkpoint at 1000
            await state.commit(_page_commit(n), NOW)
        assert _in_main_file(file) == 0  # every page still only in the log
        state._sweep_due(NOW)
        await asyncio.wait_for(state.upkept(), PATIENCE_S)
        assert _in_main_file(file) == 600
    finally:
        await state.close()


async def test_a_failed_sweep_is_logged_and_the_next_one_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    state = SqliteState(tmp_path / "space.sqlite3-sessions", DEFAULT_BUDGET)
    state._sweeper.every = 10**9

    def locked(*args: object, **kwargs: object) -> int | None:
        raise sqlite3.OperationalError("database is locked")

    try:
        await state.put("p", "s1\x1fold", "s1", b"P" * 500, NOW - 10_000, 60.0)
        monkeypatch.setattr(_sessions, "sweep_step", locked)
        state._sweep_due(NOW)
        await asyncio.wait_for(state.upkept(), PATIENCE_S)
        assert "session file sweep failed" in caplog.text
        assert "database is locked" in caplog.text
        monkeypatch.setattr(_sessions, "sweep_step", sweep_step)
        assert await state.get("p", "s1\x1fold", NOW - 20_000) is not None  # still there
        state._sweep_due(NOW)
        await asyncio.wait_for(state.upkept(), PATIENCE_S)
        assert await state.get("p", "s1\x1fold", NOW - 20_000) is None
    finally:
        await state.close()


async def test_close_stops_a_running_sweep_after_its_batch_and_opens_again_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_upkeep, "SWEEP_BATCH", 1)
    state = SqliteState(tmp_path / "space.sqlite3-sessions", DEFAULT_BUDGET)
    state._sweeper.every = 10**9
    for n in range(40):
        await state.put("p", f"s1\x1fold{n}", "s1", b"P" * 500, NOW - 10_000, 60.0)
    state._sweep_due(NOW)
    await asyncio.wait_for(state.close(), PATIENCE_S)
    assert "failed" not in caplog.text  # no step ran on the closed connection
    alive = [t.name for t in threading.enumerate()]
    assert not any(n.startswith("mnemoql-sessions-checkpoint") for n in alive)  # none leaked
    # the state opens again on its next call; the rows the stopped sweep left go at the next
    await state.commit(_page_commit(1), NOW)
    assert await state.get("p", "s1\x1fpage1", NOW) is not None
    await state.sweep(NOW)
    assert await state.owned("p", "s1", NOW - 20_000) == [("s1\x1fpage1", b"P" * 2000)]
    await state.close()
