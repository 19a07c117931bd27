from __future__ import annotations

import asyncio
import re

import numpy as np
import pytest

from mnemoql.engine.errors import ChainBroken, ChainExhausted, CursorInvalid, CursorSession
from mnemoql.engine.models import Filters
from mnemoql.engine.retrieval.evidence import Excerpt
from mnemoql.engine.sessions import CursorState, CursorStore, SessionStore


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


# ---- sessions ----


def test_commit_records_ids_and_excerpts() -> None:
    store = SessionStore(FakeClock())
    store.commit("s1", ["event_1", "event_2"], [Excerpt("abc", "event_1", 3, 6)])
    session = store.get("s1")
    assert session.excluded == {"event_1", "event_2"}
    assert session.excerpt_lookup("abc") == ("event_1", 3, 6)
    assert store.excerpt_lookup("s1", "abc") == ("event_1", 3, 6)
    assert session.excerpt_lookup("ab") is None
    assert store.get("s2").excluded == frozenset()  # sessions are independent


def test_ids_and_excerpts_evict_fifo_at_640() -> None:
    store = SessionStore(FakeClock())
    store.commit("s1", [f"event_{i}" for i in range(640)], [_excerpt(i) for i in range(640)])
    session = store.get("s1")
    assert len(session.excluded) == 640 and session.excerpt_count == 640
    store.commit("s1", ["event_640"], [_excerpt(640)])
    assert len(session.excluded) == 640
    assert "event_0" not in session.excluded  # the oldest is eligible again
    assert "event_1" in session.excluded and "event_640" in session.excluded
    assert session.excerpt_count == 640
    assert session.excerpt_lookup("text 0") is None
    assert session.excerpt_lookup("text 640") == ("event_640", 0, 6)


def test_an_excerpt_keeps_its_first_delivery() -> None:
    store = SessionStore(FakeClock())
    store.commit("s1", [], [Excerpt("same", "event_1", 0, 4)])
    store.commit("s1", [], [Excerpt("same", "event_2", 5, 9)])
    assert store.excerpt_lookup("s1", "same") == ("event_1", 0, 4)


def test_at_most_32_sessions_least_recently_used_evicted() -> None:
    store = SessionStore(FakeClock())
    for i in range(32):
        store.commit(f"s{i}", [f"event_{i}"])
    store.get("s0")  # touch: s1 is now the least recently used
    store.commit("s32", ["event_32"])
    assert len(store) == 32
    assert "s0" in store and "s32" in store
    assert "s1" not in store
    assert store.get("s1").excluded == frozenset()


def test_fifteen_minute_ttl_slides_from_the_last_commit() -> None:
    clock = FakeClock()
    store = SessionStore(clock)
    store.commit("s1", ["event_1"])
    clock.advance(14 * 60)
    store.commit("s1", ["event_2"])  # slides the TTL
    clock.advance(14 * 60)
    assert store.get("s1").excluded == {"event_1", "event_2"}
    clock.advance(60)  # 15 minutes since the last commit
    assert store.get("s1").excluded == frozenset()


def test_a_read_does_not_extend_the_ttl() -> None:
    clock = FakeClock()
    store = SessionStore(clock)
    store.commit("s1", ["event_1"])
    clock.advance(10 * 60)
    store.get("s1")
    clock.advance(5 * 60)
    assert store.get("s1").excluded == frozenset()


def test_expired_sessions_are_dropped_when_others_are_used() -> None:
    clock = FakeClock()
    store = SessionStore(clock)
    store.commit("old", ["event_1"])
    clock.advance(15 * 60)
    store.get("new")
    assert "old" not in store


def test_reset_clears_history_and_that_sessions_cursors() -> None:
    clock = FakeClock()
    cursors = CursorStore(clock)
    store = SessionStore(clock, cursors=cursors)
    store.commit("s1", ["event_1"], [_excerpt(1)])
    mine, _ = _chain(cursors, "s1")
    theirs, _ = _chain(cursors, "s2")
    store.reset("s1")
    session = store.get("s1")
    assert session.excluded == frozenset() and session.excerpt_count == 0
    assert mine not in cursors and theirs in cursors


async def test_acquire_serialises_calls_of_one_session() -> None:
    store = SessionStore(FakeClock())
    order: list[str] = []

    async def call(name: str, other: str) -> None:
        async with store.acquire(other):
            pass  # another session is never blocked
        async with store.acquire("s1"):
            order.append(f"{name} in")
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            order.append(f"{name} out")

    await asyncio.gather(call("a", "x"), call("b", "y"))
    assert order == ["a in", "a out", "b in", "b out"]


async def test_a_session_in_use_is_not_evicted() -> None:
    store = SessionStore(FakeClock(), max_sessions=2)
    async with store.acquire("busy") as busy:
        store.get("s1")
        store.get("s2")
        store.get("s3")
        assert "busy" in store and "s1" not in store and "s2" not in store
        assert len(store) == 2
        store.commit("busy", ["event_1"])
    assert busy.excluded == {"event_1"}
    store.get("s4")  # evicts s3; busy was used more recently
    store.get("s5")  # now busy is idle and the least recently used
    assert "busy" not in store


async def test_a_new_session_survives_when_every_other_is_busy() -> None:
    # 50 concurrent callers over a cap of 32 once evicted the session being acquired itself,
    # and its commit then failed with a KeyError (found by bench/load.py)
    store = SessionStore(FakeClock(), max_sessions=2)
    async with store.acquire("a"), store.acquire("b"), store.acquire("c") as c:
        assert "c" in store
        store.commit("c", ["event_1"])
    assert c.excluded == {"event_1"}
    store.get("d")  # idle again: the cap applies
    assert len(store) == 2 and "d" in store


async def test_a_failed_call_records_nothing() -> None:
    store = SessionStore(FakeClock())
    with pytest.raises(RuntimeError):
        async with store.acquire("s1"):
            raise RuntimeError("boom")  # commit is never reached
    assert store.get("s1").excluded == frozenset()
    async with store.acquire("s1"):  # and the lock was released
        pass


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


def test_cursor_ttl_counts_from_creation() -> None:
    clock = FakeClock()
    cursors = CursorStore(clock)
    token, _ = _chain(cursors)
    clock.advance(15 * 60 - 1)
    cursors.get(token, "s1")  # use does not extend it
    clock.advance(1)
    with pytest.raises(CursorInvalid) as info:
        cursors.get(token, "s1")
    assert info.value.zh == "游标无效或已过期，请重新 search"


def test_unknown_cursor_is_invalid() -> None:
    with pytest.raises(CursorInvalid):
        CursorStore(FakeClock()).get("cur_0000000000000000", "s1")


def test_cursor_is_bound_to_its_session() -> None:
    cursors = CursorStore(FakeClock())
    token, _ = _chain(cursors, "s1")
    with pytest.raises(CursorSession) as info:
        cursors.get(token, "s2")
    assert info.value.zh == "游标不属于当前会话"


def test_at_most_32_cursors_oldest_evicted() -> None:
    clock = FakeClock()
    cursors = CursorStore(clock)
    tokens = []
    for _ in range(33):
        tokens.append(_chain(cursors)[0])
        clock.advance(1)
    assert len(cursors) == 32
    assert tokens[0] not in cursors
    assert all(t in cursors for t in tokens[1:])


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
    assert len(cursors) == 0


def test_drop_clear_and_clear_session() -> None:
    cursors = CursorStore(FakeClock())
    a, _ = _chain(cursors, "s1")
    b, _ = _chain(cursors, "s1")
    c, _ = _chain(cursors, "s2")
    cursors.drop(a)
    assert a not in cursors
    cursors.clear_session("s1")
    assert b not in cursors and c in cursors
    cursors.clear()
    assert len(cursors) == 0


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


def test_owner_names_the_session_of_a_live_cursor_only() -> None:
    clock = FakeClock()
    cursors = CursorStore(clock)
    token, _ = _chain(cursors, "s7")
    assert cursors.owner(token) == "s7"
    assert cursors.owner("cur_0000000000000000") is None
    clock.advance(15 * 60)
    assert cursors.owner(token) is None  # expired


def test_a_session_replays_its_pages_by_call_and_forgets_them_on_reset() -> None:
    from mnemoql.engine.sessions import MAX_PAGES

    sessions = SessionStore(FakeClock())
    session = sessions.get("s1")
    session.keep_page('["search", "q"]', "page one")
    assert session.page('["search", "q"]') == "page one"
    assert sessions.get("s2").page('["search", "q"]') is None  # per session
    for n in range(MAX_PAGES):
        session.keep_page(f"call {n}", n)
    assert session.page('["search", "q"]') is None  # the oldest went first
    assert session.page("call 0") == 0
    sessions.reset("s1")
    assert session.page("call 0") is None


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
