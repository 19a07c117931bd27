"""The embedded session file's sweep reads only the rows that expired: every statement finds
them through an index, and it removes exactly what the whole-table statements before it
removed (a scan read every row's body: 70 ms and more per sweep at 40k session rows)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from mnemoql.engine.store.embedded._sessions import _SWEEP, DDL

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


def _swept(conn: sqlite3.Connection, statements: tuple[str, ...]) -> list[tuple[object, ...]]:
    for sql in statements:
        conn.execute(sql, {"now": NOW})
    return conn.execute("SELECT * FROM state ORDER BY kind, key").fetchall()


def test_the_sweep_removes_what_the_whole_table_statements_removed(tmp_path: Path) -> None:
    for seed in range(5):
        want = _swept(_filled(tmp_path / f"want{seed}", seed), WHOLE_TABLE)
        got = _swept(_filled(tmp_path / f"got{seed}", seed), _SWEEP)
        before = _filled(tmp_path / f"before{seed}", seed).execute("SELECT count(*) FROM state")
        assert got == want
        assert len(got) < before.fetchone()[0]  # the seed had something to sweep


def test_every_sweep_statement_finds_its_rows_through_an_index(tmp_path: Path) -> None:
    conn = _filled(tmp_path / "plan", 0)
    conn.execute("ANALYZE")  # statistics as a large file has them: no plan by luck
    for sql in _SWEEP:
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, {"now": NOW})]
        assert not any(step.startswith("SCAN") for step in plan), (sql, plan)
        assert any("INDEX state_expiring" in step for step in plan), (sql, plan)
