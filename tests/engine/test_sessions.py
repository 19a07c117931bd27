from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mnemoql.engine.cursors import CursorState, CursorStore
from mnemoql.engine.errors import (
    ChainBroken,
    ChainExhausted,
    CursorExpired,
    CursorInvalid,
    CursorSession,
)
from mnemoql.engine.models import Filters
from mnemoql.engine.retrieval.evidence import Excerpt
from mnemoql.engine.session_state import DEFAULT_BUDGET, LocalState, SharedState
from mnemoql.engine.sessions import Session, SessionStore
from mnemoql.engine.store.embedded._sessions import SqliteState


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _excerpt(i: int) -> Excerpt:
    return Excerpt(f"text {i}", f"event_{i}", 0, 6)


def _chain(cursors: CursorStore, session: str = "s1", n: int = 2) -> tuple[str, CursorState]:
    return cursors.start_chain(
        session_id=session,
        query_text="q",
        query_vector=np.ones(4, dtype=np.float32),
        filters=Filters(date_from="2026-01-01"),
        model="m",
        dims=4,
        delivered_ids=[f"event_{i}" for i in range(n)],
        concepts=["concept_1"],
        anchors=[],
    )


@pytest.fixture(params=["local", "sqlite"])
def state(request: pytest.FixtureRequest, tmp_path: Path) -> SharedState:
    """Where the rows live: this process only, or the embedded store's shared file."""
    if request.param == "local":
        return LocalState()
    return SqliteState(tmp_path / "space.sqlite3-sessions", DEFAULT_BUDGET)


def _stores(
    clock: FakeClock, state: SharedState, **kwargs: Any
) -> tuple[SessionStore, CursorStore]:
    cursors = CursorStore(clock, state=state)
    return SessionStore(clock, cursors=cursors, **kwargs), cursors


async def _commit(
    sessions: SessionStore, sid: str, ids: list[str], excerpts: list[Excerpt] | None = None
) -> Session:
    async with sessions.acquire(sid) as session:
        sessions.commit(sid, ids, excerpts or [])
    return session


async def _seen(sessions: SessionStore, sid: str) -> Session:
    async with sessions.acquire(sid) as session:
        return session


# ---- sessions ----


async def test_commit_records_ids_and_excerpts(state: SharedState) -> None:
    sessions, _ = _stores(FakeClock(), state)
    await _commit(sessions, "s1", ["event_1", "event_2"], [Excerpt("abc", "event_1", 3, 6)])
    session = await _seen(sessions, "s1")
    assert session.excluded == {"event_1", "event_2"}
    assert session.excerpt_lookup("abc") == ("event_1", 3, 6)
    assert session.excerpt_lookup("ab") is None
    assert (await _seen(sessions, "s2")).excluded == frozenset()  # sessions are independent


async def test_ids_and_excerpts_evict_fifo_at_640(state: SharedState) -> None:
    sessions, _ = _stores(FakeClock(), state)
    ids = [f"event_{i}" for i in range(640)]
    await _commit(sessions, "s1", ids, [_excerpt(i) for i in range(640)])
    session = await _seen(sessions, "s1")
    assert len(session.excluded) == 640 and session.excerpt_count == 640
    await _commit(sessions, "s1", ["event_640"], [_excerpt(640)])
    session = await _seen(sessions, "s1")
    assert len(session.excluded) == 640
    assert "event_0" not in session.excluded  # the oldest is eligible again
    assert "event_1" in session.excluded and "event_640" in session.excluded
    assert session.excerpt_count == 640
    assert session.excerpt_lookup("text 0") is None
    assert session.excerpt_lookup("text 640") == ("event_640", 0, 6)


async def test_an_excerpt_keeps_its_first_delivery(state: SharedState) -> None:
    sessions, _ = _stores(FakeClock(), state)
    await _commit(sessions, "s1", [], [Excerpt("same", "event_1", 0, 4)])
    await _commit(sessions, "s1", [], [Excerpt("same", "event_2", 5, 9)])
    assert (await _seen(sessions, "s1")).excerpt_lookup("same") == ("event_1", 0, 4)


async def test_fifty_sessions_keep_their_ledgers_and_cursors(state: SharedState) -> None:
    # Issue 30: at most 32 sessions and 32 cursors per process, so the 33rd agent's search
    # evicted the first agent's cursor and ledger. Now only the TTL and the byte budget bound
    # them.
    clock = FakeClock()
    sessions, cursors = _stores(clock, state)
    tokens = {}
    for i in range(50):
        async with sessions.acquire(f"agent{i}"):
            tokens[i], _ = _chain(cursors, f"agent{i}")
            sessions.commit(f"agent{i}", [f"event_{i}"])
        clock.advance(1)
    for i in range(50):
        assert (await _seen(sessions, f"agent{i}")).excluded == {f"event_{i}"}
        await cursors.load(tokens[i])
        assert cursors.get(tokens[i], f"agent{i}").session_id == f"agent{i}"


async def test_fifteen_minute_ttl_slides_from_the_last_commit(state: SharedState) -> None:
    clock = FakeClock()
    sessions, _ = _stores(clock, state)
    await _commit(sessions, "s1", ["event_1"])
    clock.advance(14 * 60)
    await _commit(sessions, "s1", ["event_2"])  # slides the TTL
    clock.advance(14 * 60)
    assert (await _seen(sessions, "s1")).excluded == {"event_1", "event_2"}
    clock.advance(60)  # 15 minutes since the last commit
    assert (await _seen(sessions, "s1")).excluded == frozenset()


async def test_a_read_does_not_extend_the_ttl(state: SharedState) -> None:
    clock = FakeClock()
    sessions, _ = _stores(clock, state)
    await _commit(sessions, "s1", ["event_1"])
    clock.advance(10 * 60)
    await _seen(sessions, "s1")
    clock.advance(5 * 60)
    assert (await _seen(sessions, "s1")).excluded == frozenset()


async def test_reset_clears_history_and_that_sessions_cursors(state: SharedState) -> None:
    clock = FakeClock()
    sessions, cursors = _stores(clock, state)
    async with sessions.acquire("s1"):
        mine, _ = _chain(cursors, "s1")
        sessions.commit("s1", ["event_1"], [_excerpt(1)])
    async with sessions.acquire("s2"):
        theirs, _ = _chain(cursors, "s2")
    async with sessions.acquire("s1"):
        sessions.reset("s1")
    session = await _seen(sessions, "s1")
    assert session.excluded == frozenset() and session.excerpt_count == 0
    for token in (mine, theirs):
        await cursors.load(token)
    assert mine not in cursors and theirs in cursors
    with pytest.raises(CursorInvalid) as info:
        cursors.get(mine, "s1")
    assert info.value.code == "CURSOR_INVALID"  # dropped on purpose, not expired


async def test_acquire_serialises_calls_of_one_session() -> None:
    sessions, _ = _stores(FakeClock(), LocalState())
    order: list[str] = []

    async def call(name: str, other: str) -> None:
        async with sessions.acquire(other):
            pass  # another session is never blocked
        async with sessions.acquire("s1"):
            order.append(f"{name} in")
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            order.append(f"{name} out")

    await asyncio.gather(call("a", "x"), call("b", "y"))
    assert order == ["a in", "a out", "b in", "b out"]


async def test_a_failed_call_records_nothing(state: SharedState) -> None:
    clock = FakeClock()
    sessions, cursors = _stores(clock, state)
    token = ""
    with pytest.raises(RuntimeError):
        async with sessions.acquire("s1"):
            token, _ = _chain(cursors, "s1")
            sessions.commit("s1", ["event_1"])
            raise RuntimeError("boom")  # the response was never built
    assert (await _seen(sessions, "s1")).excluded == frozenset()
    await cursors.load(token)
    with pytest.raises(CursorInvalid):
        cursors.get(token, "s1")
    async with sessions.acquire("s1"):  # and the lock was released
        pass


async def test_two_processes_share_ledgers_and_cursors(tmp_path: Path) -> None:
    # two stores over one state file stand for two serving processes of one memory
    clock = FakeClock()
    file = tmp_path / "space.sqlite3-sessions"
    a_sessions, a_cursors = _stores(clock, SqliteState(file, DEFAULT_BUDGET))
    b_sessions, b_cursors = _stores(clock, SqliteState(file, DEFAULT_BUDGET))
    async with a_sessions.acquire("s1"):
        token, _ = _chain(a_cursors, "s1", n=3)
        a_sessions.commit("s1", ["event_0", "event_1", "event_2"])
    await b_cursors.load(token)
    state = b_cursors.get(token, "s1")  # a follow-up on the other process
    assert state.chain_count == 3 and state.filters == Filters(date_from="2026-01-01")
    assert np.array_equal(state.query_vector, np.ones(4, dtype=np.float32))
    async with b_sessions.acquire("s1") as session:
        assert session.excluded == {"event_0", "event_1", "event_2"}
        b_sessions.commit("s1", ["event_3"])
    # calls of one session on both processes at once: both commits land
    async with a_sessions.acquire("s1"), b_sessions.acquire("s1"):
        a_sessions.commit("s1", ["event_4"])
        b_sessions.commit("s1", ["event_5"])
    assert (await _seen(a_sessions, "s1")).excluded == {f"event_{i}" for i in range(6)}


async def test_a_kept_page_is_replayed_by_another_process(tmp_path: Path) -> None:
    clock = FakeClock()
    file = tmp_path / "space.sqlite3-sessions"
    a, _ = _stores(clock, SqliteState(file, DEFAULT_BUDGET))
    b, _ = _stores(clock, SqliteState(file, DEFAULT_BUDGET))
    async with a.acquire("s1") as session:
        session.keep_page('["search", "q"]', {"items": ["event_1"]})
    assert (await _seen(b, "s1")).page('["search", "q"]') == {"items": ["event_1"]}


# ---- cursors ----


def test_token_format_and_state_of_a_new_chain() -> None:
    clock = FakeClock()
    cursors = CursorStore(clock)
    token, state = _chain(cursors, n=3)
    assert re.fullmatch(r"cur_[0-9a-f]{16}", token)
    assert state.chain_count == 3
    assert state.created_at == clock.now
    assert state.filters == Filters(date_from="2026-01-01")
    assert cursors.get(token, "s1") is state


async def test_a_cursor_past_its_ttl_is_expired_not_invalid(state: SharedState) -> None:
    clock = FakeClock()
    sessions, cursors = _stores(clock, state)
    async with sessions.acquire("s1"):
        token, _ = _chain(cursors)
    clock.advance(15 * 60 - 1)
    await cursors.load(token)
    cursors.get(token, "s1")  # use does not extend it
    clock.advance(1)
    await cursors.load(token)
    with pytest.raises(CursorExpired) as info:
        cursors.get(token, "s1")
    assert info.value.code == "CURSOR_EXPIRED"
    assert isinstance(info.value, CursorInvalid)  # except CursorInvalid still catches it
    assert info.value.zh == "游标已过期，请重新 search"
    assert await cursors.owner(token) is None


async def test_a_cursor_dropped_for_the_budget_is_expired(tmp_path: Path) -> None:
    clock = FakeClock()
    state = SqliteState(tmp_path / "space.sqlite3-sessions", budget=1600)
    sessions, cursors = _stores(clock, state)
    tokens = []
    for i in range(4):  # each cursor body is ~520 bytes: four do not fit, three do
        async with sessions.acquire(f"s{i}"):
            tokens.append(_chain(cursors, f"s{i}", n=20)[0])
        clock.advance(1)
    await state.sweep(clock())
    await cursors.load(tokens[0])
    with pytest.raises(CursorExpired):
        cursors.get(tokens[0], "s0")
    await cursors.load(tokens[-1])
    assert cursors.get(tokens[-1], "s3").chain_count == 20


def test_unknown_cursor_is_invalid() -> None:
    with pytest.raises(CursorInvalid) as info:
        CursorStore(FakeClock()).get("cur_0000000000000000", "s1")
    assert info.value.code == "CURSOR_INVALID"


def test_cursor_is_bound_to_its_session() -> None:
    cursors = CursorStore(FakeClock())
    token, _ = _chain(cursors, "s1")
    with pytest.raises(CursorSession) as info:
        cursors.get(token, "s2")
    assert info.value.zh == "游标不属于当前会话"


def test_chain_accounting_and_branching_from_an_older_cursor() -> None:
    cursors = CursorStore(FakeClock())
    root_token, root = _chain(cursors, n=4)
    _, child = cursors.branch(root, ["event_10", "event_11"], concepts=["concept_9"])
    assert child.chain_count == 6
    assert child.chain_id == root.chain_id
    assert child.delivered_ids == (
        "event_0",
        "event_1",
        "event_2",
        "event_3",
        "event_10",
        "event_11",
    )
    assert child.concepts == {"concept_9"}  # only the producing call's entries
    assert child.query_vector is root.query_vector
    # branching again from the root uses the root's own count
    _, sibling = cursors.branch(cursors.get(root_token, "s1"), ["event_20"])
    assert sibling.chain_count == 5
    assert cursors.remaining(sibling) == 15


def test_chain_cap_of_20() -> None:
    cursors = CursorStore(FakeClock())
    _, state = _chain(cursors, n=4)
    for i in range(4):
        assert cursors.remaining(state) == 20 - state.chain_count
        _, state = cursors.branch(state, [f"event_{10 + 4 * i + j}" for j in range(4)])
    assert state.chain_count == 20
    with pytest.raises(ChainExhausted) as info:
        cursors.remaining(state)
    assert info.value.zh == "追查链已达 20 个事件上限，请重新 search"
    with pytest.raises(ValueError):
        cursors.branch(state, ["event_99"])


def test_a_short_final_batch_fits_the_remaining_quota() -> None:
    cursors = CursorStore(FakeClock())
    _, state = _chain(cursors, n=4)
    for i in range(3):
        _, state = cursors.branch(state, [f"event_{10 + 4 * i + j}" for j in range(4)])
    _, state = cursors.branch(state, ["event_50", "event_51", "event_52"])
    assert cursors.remaining(state) == 1


def test_nothing_delivered_issues_no_cursor() -> None:
    cursors = CursorStore(FakeClock())
    with pytest.raises(ValueError):
        _chain(cursors, n=0)


async def test_drop_clear_and_clear_session(state: SharedState) -> None:
    sessions, cursors = _stores(FakeClock(), state)
    async with sessions.acquire("s1"):
        a, _ = _chain(cursors, "s1")
        b, _ = _chain(cursors, "s1")
    async with sessions.acquire("s2"):
        c, _ = _chain(cursors, "s2")
    async with sessions.acquire("s1"):
        await cursors.load(a)
        cursors.drop(a)
    async with sessions.acquire("s1"):
        cursors.clear_session("s1")
    for token in (a, b, c):
        await cursors.load(token)
    assert a not in cursors and b not in cursors and c in cursors
    await cursors.clear()
    await cursors.load(c)
    assert c not in cursors


def test_verify_drops_a_cursor_when_meta_changes() -> None:
    cursors = CursorStore(FakeClock())
    token, state = _chain(cursors)
    counts = dict.fromkeys(state.delivered_ids, 1)
    cursors.verify(token, state, model="m", dims=4, id_counts=counts)
    with pytest.raises(ChainBroken) as info:
        cursors.verify(token, state, model="m", dims=8, id_counts=counts)
    assert info.value.zh == "向量模型或维度已改变，追查已中断，请重新 search"
    assert token not in cursors


@pytest.mark.parametrize("count", [0, 2])
def test_verify_drops_a_cursor_when_a_record_is_gone_or_duplicated(count: int) -> None:
    cursors = CursorStore(FakeClock())
    token, state = _chain(cursors)
    counts = dict.fromkeys(state.delivered_ids, 1) | {"event_1": count}
    with pytest.raises(ChainBroken) as info:
        cursors.verify(token, state, model="m", dims=4, id_counts=counts)
    assert info.value.zh == "追查链中的记录已删除或 ID 重复，请重新 search"
    assert token not in cursors


async def test_owner_names_the_session_of_a_live_cursor_only(state: SharedState) -> None:
    clock = FakeClock()
    sessions, cursors = _stores(clock, state)
    async with sessions.acquire("s7"):
        token, _ = _chain(cursors, "s7")
    assert await cursors.owner(token) == "s7"
    assert await cursors.owner("cur_0000000000000000") is None
    clock.advance(15 * 60)
    assert await cursors.owner(token) is None  # expired


async def test_a_session_replays_its_pages_by_call_and_forgets_them_on_reset() -> None:
    from mnemoql.engine.sessions import MAX_PAGES

    sessions, _ = _stores(FakeClock(), LocalState())
    async with sessions.acquire("s1") as session:
        session.keep_page('["search", "q"]', "page one")
    session = await _seen(sessions, "s1")
    assert session.page('["search", "q"]') == "page one"
    assert sessions.page("s1", '["search", "q"]') == "page one"  # the hint before the lock
    assert (await _seen(sessions, "s2")).page('["search", "q"]') is None  # per session
    async with sessions.acquire("s1") as session:
        for n in range(MAX_PAGES):
            session.keep_page(f"call {n}", n)
    session = await _seen(sessions, "s1")
    assert session.page('["search", "q"]') is None  # the oldest went first
    assert session.page("call 0") == 0
    async with sessions.acquire("s1"):
        sessions.reset("s1")
    assert (await _seen(sessions, "s1")).page("call 0") is None


def test_a_search_cursor_keeps_what_the_search_asked() -> None:
    cursors = CursorStore(FakeClock())
    token, state = cursors.start_chain(
        session_id="s1",
        query_text="q",
        query_vector=None,
        filters=Filters(),
        model="m",
        dims=4,
        delivered_ids=["event_1"],
        asked=("q", ("Alice",), "last week"),
    )
    assert cursors.get(token, "s1").asked == ("q", ("Alice",), "last week")
    _, child = cursors.branch(state, ["event_2"])
    assert child.asked == state.asked
