"""A call's ledger change stored as a delta row (issue 30), on every store's session state: a
commit writes what the call added, a read is the ledger then its deltas, folded now and then.
Two states over one space stand for two processes."""

from __future__ import annotations

import json

from mnemoql.engine.retrieval.evidence import Excerpt
from mnemoql.engine.session_state import (
    DEFAULT_BUDGET,
    FOLD_AFTER,
    Commit,
    LocalState,
    SharedState,
)
from mnemoql.engine.sessions import SessionStore
from mnemoql.engine.store.base import Store
from tests.store.conftest import Reopen
from tests.store.test_embedded_session_pages import Clock, _seen

TTL = 900.0


class Written:
    """Counts what a state's commits write for the ledger: the merged ledgers ``update``
    returned (the whole ledger each time) and the deltas."""

    def __init__(self, state: SharedState) -> None:
        self.merged: list[int] = []
        self.deltas: list[int] = []
        real = state.commit

        async def commit(c: Commit, now: float) -> None:
            fn = c.update
            if fn is not None:

                def update(current: bytes | None) -> bytes:
                    body = fn(current)
                    self.merged.append(len(body))
                    return body

                c.update = update
                self.deltas.append(len(c.delta or b""))
            await real(c, now)

        state.commit = commit  # type: ignore[method-assign]


def _found(n: int, per: int = 8) -> tuple[list[str], list[Excerpt]]:
    ids = [f"event_{n}_{i}" for i in range(per)]
    return ids, [Excerpt(f"excerpt {n}/{i} " + "x" * 120, e, 0, 9) for i, e in enumerate(ids)]


async def _call(sessions: SessionStore, n: int, per: int = 8) -> frozenset[str]:
    """One call that delivers ``per`` new ids; what it was told to exclude."""
    async with sessions.acquire("s1") as session:
        excluded = session.excluded
        sessions.commit("s1", *_found(n, per))
    return excluded


async def test_a_commit_writes_what_the_call_added_not_the_ledger(store: Store) -> None:
    clock = Clock()
    state = store.session_state(DEFAULT_BUDGET)
    sessions = SessionStore(clock, state=state)
    for n in range(80):  # the ledger at its caps: 640 ids, 640 excerpts
        await _call(sessions, n)
        clock.now += 1
    written = Written(state)
    for n in range(80, 80 + FOLD_AFTER + 1):
        await _call(sessions, n)
        clock.now += 1
    assert max(written.deltas) < 2_000
    # FOLD_AFTER calls wrote their change alone; the next one folded them into the ledger
    assert len(written.merged) == 1 and written.merged[0] > 100_000
    session = await _seen(sessions, "s1")
    assert len(session.delivered_ids) == 640
    assert session.delivered_ids[-1] == f"event_{80 + FOLD_AFTER}_7"
    assert session.excerpt_count == 640


async def test_two_processes_read_each_others_deltas_as_one_ledger_would(
    store: Store, reopen: Reopen
) -> None:
    second = await reopen()
    clock, caps = Clock(), {"max_ids": 20, "max_excerpts": 12}
    a = SessionStore(clock, state=store.session_state(DEFAULT_BUDGET), **caps)  # type: ignore[arg-type]
    b = SessionStore(clock, state=second.session_state(DEFAULT_BUDGET), **caps)  # type: ignore[arg-type]
    local = SessionStore(clock, state=LocalState(), **caps)  # type: ignore[arg-type]
    for n in range(2 * FOLD_AFTER + 5):  # past two folds, each call on the other process
        excluded = await _call(a if n % 2 else b, n, per=3)
        assert excluded == await _call(local, n, per=3)  # the caps apply call by call
        assert not excluded & set(_found(n, 3)[0])
        clock.now += 1
    mine, theirs = await _seen(a, "s1"), await _seen(local, "s1")
    assert mine.delivered_ids == theirs.delivered_ids
    assert mine.body.excerpts == theirs.body.excerpts


async def test_a_session_lives_ttl_after_its_latest_delta_and_goes_with_its_deltas(
    store: Store,
) -> None:
    clock = Clock()
    state = store.session_state(DEFAULT_BUDGET)
    sessions = SessionStore(clock, ttl=TTL, state=state)
    await _call(sessions, 0)  # the ledger row
    clock.now += TTL * 0.8
    await _call(sessions, 1)  # a delta: the ledger row is not rewritten
    clock.now += TTL * 0.5  # past the ledger row's own expiry
    await state.sweep(clock.now)
    assert len((await _seen(sessions, "s1")).delivered_ids) == 16
    clock.now += TTL * 0.6  # past the delta's
    await state.sweep(clock.now)
    assert await state.get("s", "s1", clock.now) is None
    assert await state.owned("d", "s1", clock.now - TTL) == []  # swept with it
    assert (await _seen(sessions, "s1")).delivered_ids == ()


async def test_reset_seen_in_a_delta_forgets_what_came_before(store: Store) -> None:
    clock = Clock()
    sessions = SessionStore(clock, state=store.session_state(DEFAULT_BUDGET))
    await _call(sessions, 0)
    await _call(sessions, 1)
    async with sessions.acquire("s1"):
        sessions.reset("s1")
        sessions.commit("s1", ["event_new"])
    assert (await _seen(sessions, "s1")).delivered_ids == ("event_new",)
    await _call(sessions, 2)
    assert len((await _seen(sessions, "s1")).delivered_ids) == 9


async def test_a_ledger_written_before_deltas_still_reads_and_takes_them(store: Store) -> None:
    clock = Clock()
    state = store.session_state(DEFAULT_BUDGET)
    old = json.dumps({"ids": ["event_a", "event_b"], "excerpts": [["said a", "event_a", 0, 6]]})
    await state.put("s", "s1", "s1", old.encode(), clock.now, TTL)  # the format before
    sessions = SessionStore(clock, state=state)
    excluded = await _call(sessions, 0)
    assert excluded == {"event_a", "event_b"}
    session = await _seen(sessions, "s1")
    assert session.delivered_ids[:2] == ("event_a", "event_b")
    assert len(session.delivered_ids) == 10
    assert session.excerpt_lookup("said a") == ("event_a", 0, 6)


async def test_the_budget_drops_a_session_with_its_deltas(store: Store) -> None:
    clock = Clock()
    state = store.session_state(DEFAULT_BUDGET)
    sessions = SessionStore(clock, state=state)
    await _call(sessions, 0)
    await _call(sessions, 1)
    clock.now += 1
    await state.put("c", "tok", "s2", b"x" * 4096, clock.now, TTL)  # newer than the session
    state.budget = 4096  # type: ignore[attr-defined]
    await state.sweep(clock.now)
    assert await state.owned("d", "s1", clock.now) == []
    assert (await _seen(sessions, "s1")).delivered_ids == ()
