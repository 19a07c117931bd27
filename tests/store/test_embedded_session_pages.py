"""The embedded session file's kept pages (issue 30): a session's read lists its pages from
an index and reads only the bodies its process does not hold yet."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mnemoql.engine.session_state import DEFAULT_BUDGET
from mnemoql.engine.sessions import Session, SessionStore
from mnemoql.engine.store.embedded._sessions import SqliteState


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _keep(sessions: SessionStore, sid: str, pages: dict[str, object]) -> None:
    async with sessions.acquire(sid) as session:
        sessions.commit(sid, [f"event_{key}" for key in pages])
        for key, page in pages.items():
            session.keep_page(key, page)


async def _seen(sessions: SessionStore, sid: str) -> Session:
    async with sessions.acquire(sid) as session:
        return session


async def test_a_read_fetches_only_the_pages_its_process_has_not_seen(tmp_path: Path) -> None:
    clock, file = Clock(), tmp_path / "space.sqlite3-sessions"
    a_state, b_state = SqliteState(file, DEFAULT_BUDGET), SqliteState(file, DEFAULT_BUDGET)
    a, b = SessionStore(clock, state=a_state), SessionStore(clock, state=b_state)
    try:
        await _keep(a, "s1", {f"k{i}": {"items": [i]} for i in range(3)})
        assert (await _seen(a, "s1")).page("k2") == {"items": [2]}
        assert a_state.page_cache.fetched == 0  # its own pages: kept when committed
        assert (await _seen(b, "s1")).page("k0") == {"items": [0]}
        assert b_state.page_cache.fetched == 3
        clock.now += 1
        await _keep(a, "s1", {"k3": {"items": [3]}})
        session = await _seen(b, "s1")
        assert [session.page(f"k{i}") for i in range(4)] == [{"items": [i]} for i in range(4)]
        assert b_state.page_cache.fetched == 4  # the new page only
    finally:
        await a_state.close()
        await b_state.close()


async def test_a_page_kept_again_elsewhere_replaces_the_held_one(tmp_path: Path) -> None:
    clock, file = Clock(), tmp_path / "space.sqlite3-sessions"
    a_state, b_state = SqliteState(file, DEFAULT_BUDGET), SqliteState(file, DEFAULT_BUDGET)
    a, b = SessionStore(clock, state=a_state), SessionStore(clock, state=b_state)
    try:
        await _keep(a, "s1", {"k": {"items": ["first"]}})
        assert (await _seen(a, "s1")).page("k") == {"items": ["first"]}
        clock.now += 1
        async with b.acquire("s1") as session:  # reset_seen on the other process, then the
            b.reset("s1")  # same call again: a page of the same size under the same key
            b.commit("s1", ["event_x"])
            session.keep_page("k", {"items": ["again"]})
        assert (await _seen(a, "s1")).page("k") == {"items": ["again"]}
    finally:
        await a_state.close()
        await b_state.close()


async def test_a_file_of_the_previous_version_reads_its_pages(tmp_path: Path) -> None:
    file = tmp_path / "space.sqlite3-sessions"
    old = sqlite3.connect(file, isolation_level=None)
    old.executescript(  # the previous version's table and index, and one session's rows
        """
        CREATE TABLE state (
            kind TEXT NOT NULL, key TEXT NOT NULL, owner TEXT NOT NULL, body BLOB,
            size INTEGER NOT NULL, expires_at REAL NOT NULL, ttl REAL NOT NULL,
            used_at REAL NOT NULL, PRIMARY KEY (kind, key)
        ) WITHOUT ROWID;
        CREATE INDEX state_owner ON state (kind, owner);
        CREATE INDEX state_expiry ON state (expires_at);
        """
    )
    ledger = b'{"ids": ["event_1"], "excerpts": []}'
    page = b'{"items": ["event_1"]}'
    rows = [("s", "s1", "s1", ledger), ("p", 's1\x1f["search", "q"]', "s1", page)]
    old.executemany(
        "INSERT INTO state VALUES (?, ?, ?, ?, ?, 1900.0, 900.0, 1000.0)",
        [(kind, key, owner, body, len(body)) for kind, key, owner, body in rows],
    )
    old.close()
    state = SqliteState(file, DEFAULT_BUDGET)
    try:
        session = await _seen(SessionStore(Clock(), state=state), "s1")
        assert session.excluded == {"event_1"}
        assert session.page('["search", "q"]') == {"items": ["event_1"]}
    finally:
        await state.close()
    indexes = sqlite3.connect(file).execute("SELECT name FROM sqlite_master WHERE type = 'index'")
    names = {name for (name,) in indexes}
    assert names >= {"state_owned", "state_expiring"}  # this version's
    assert not names & {"state_owner", "state_expiry"}  # the ones it replaced
