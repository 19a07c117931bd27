"""Neo4j session state across replicas (issue 30): two stores stand for two processes, each
with its own driver, over one space."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mnemoql.engine.cursors import CursorStore
from mnemoql.engine.errors import CursorExpired
from mnemoql.engine.models import Filters
from mnemoql.engine.session_state import DEFAULT_BUDGET, PageCache
from mnemoql.engine.sessions import SessionStore
from mnemoql.engine.store.neo4j import Neo4jStore
from mnemoql.engine.store.neo4j._sessions import BODIES, SESSION
from tests.store.factory_neo4j import make, unreachable
from tests.store.test_embedded_session_pages import Clock, _keep, _seen

pytestmark = pytest.mark.skipif(unreachable() is not None, reason=f"neo4j: {unreachable()}")


@pytest.fixture
async def replicas(tmp_path: object) -> AsyncIterator[tuple[Neo4jStore, Neo4jStore]]:
    space = f"t{uuid.uuid4().hex[:12]}"
    a, b = make(tmp_path, space), make(tmp_path, space)  # type: ignore[arg-type]
    await a.open()
    await b.open()
    try:
        yield a, b
    finally:
        await a.drop_space()
        await a.close()
        await b.close()


async def test_a_session_carries_its_bookmarks_to_another_replica(
    replicas: tuple[Neo4jStore, Neo4jStore], tmp_path: object
) -> None:
    a, b = replicas
    # Any transaction of a's driver, even one that changes nothing (the state's schema, made
    # on its first call), replaces a's bookmark with the database's latest: another writer of
    # the server (a bench, another test) would then make it differ from ``written``. So the
    # state makes its schema first, and a writer of another space commits in between.
    await a.session_state(DEFAULT_BUDGET).get("s", "nobody", time.time())
    await a.runner.run("MERGE (m:MnemoSpace {space: $space}) SET m.probe = 1", writable=True)
    written = set(await a.runner.driver.execute_query_bookmark_manager.get_bookmarks())
    assert written
    other = make(tmp_path, f"t{uuid.uuid4().hex[:12]}")
    await other.open()
    try:
        await other.runner.run("MERGE (m:MnemoSpace {space: $space})", writable=True)
    finally:
        await other.drop_space()
        await other.close()
    await SessionStore(state=a.session_state(DEFAULT_BUDGET)).touch("agent")  # after a save
    await b.session_state(DEFAULT_BUDGET).get("s", "agent", time.time())  # a call on b loads it
    # b's next reads wait for what the session's writes on a committed (a causal cluster read);
    # its own next transaction then replaces them with a later bookmark of its own
    assert written <= set(await b.runner.driver.execute_query_bookmark_manager.get_bookmarks())


async def test_cursors_and_ledgers_are_shared_and_swept(
    replicas: tuple[Neo4jStore, Neo4jStore],
) -> None:
    a, b = replicas
    now = [1000.0]
    a_cursors = CursorStore(lambda: now[0], state=a.session_state(DEFAULT_BUDGET))
    a_sessions = SessionStore(lambda: now[0], cursors=a_cursors)
    b_cursors = CursorStore(lambda: now[0], state=b.session_state(DEFAULT_BUDGET))
    b_sessions = SessionStore(lambda: now[0], cursors=b_cursors)
    async with a_sessions.acquire("s1"):
        token, _ = a_cursors.start_chain(
            session_id="s1", query_text="q", query_vector=None, filters=Filters(),
            model="m", dims=4, delivered_ids=["event_1"],
        )  # fmt: skip
        a_sessions.commit("s1", ["event_1"])
    await b_cursors.load(token)
    assert b_cursors.get(token, "s1").delivered_ids == ("event_1",)
    async with b_sessions.acquire("s1") as session:
        assert session.excluded == {"event_1"}
    now[0] += 15 * 60
    await b.session_state(DEFAULT_BUDGET).sweep(now[0])
    await b_cursors.load(token)
    with pytest.raises(CursorExpired):
        b_cursors.get(token, "s1")
    async with b_sessions.acquire("s1") as session:
        assert session.excluded == frozenset()


def _count_statements(store: Neo4jStore, before: Any = None) -> list[str]:
    """The statements ``store``'s runner runs from now on (a wrapper around ``run``);
    ``before(query)`` runs before each."""
    ran: list[str] = []
    run = store.runner.run

    async def counted(query: str, params: Any = None, *, writable: bool = False) -> Any:
        ran.append(query)
        if before is not None:
            before(query)
        return await run(query, params, writable=writable)

    store.runner.run = counted  # type: ignore[method-assign]
    return ran


async def test_a_read_is_one_statement_and_fetches_only_the_pages_not_held(
    replicas: tuple[Neo4jStore, Neo4jStore],
) -> None:
    a, b = replicas
    clock = Clock()
    a_state, b_state = a.session_state(DEFAULT_BUDGET), b.session_state(DEFAULT_BUDGET)
    a_sessions, b_sessions = SessionStore(clock, state=a_state), SessionStore(clock, state=b_state)
    await _keep(a_sessions, "s1", {f"k{i}": {"items": [i]} for i in range(3)})
    a_ran, b_ran = _count_statements(a), _count_statements(b)
    assert (await _seen(a_sessions, "s1")).page("k2") == {"items": [2]}
    assert a_state.page_cache.fetched == 0  # its own pages: kept when committed
    assert (await _seen(b_sessions, "s1")).page("k0") == {"items": [0]}
    assert b_state.page_cache.fetched == 3
    clock.now += 1
    await _keep(a_sessions, "s1", {"k3": {"items": [3]}})
    session = await _seen(b_sessions, "s1")
    assert [session.page(f"k{i}") for i in range(4)] == [{"items": [i]} for i in range(4)]
    assert b_state.page_cache.fetched == 4  # the new page only
    assert (await _seen(a_sessions, "s1")).page("k3") == {"items": [3]}
    # one statement per read (a's third: _keep's), whether its bodies are held or not
    assert a_ran == [SESSION] * 3 and b_ran == [SESSION] * 2


async def test_a_body_let_go_of_during_the_read_is_fetched(
    replicas: tuple[Neo4jStore, Neo4jStore],
) -> None:
    a, b = replicas
    clock, state = Clock(), b.session_state(DEFAULT_BUDGET)
    await _keep(SessionStore(clock, state=a.session_state(DEFAULT_BUDGET)), "s1", {"k": [1]})
    sessions = SessionStore(clock, state=state)
    assert (await _seen(sessions, "s1")).page("k") == [1]
    # another session's read fills the cache while this one's statement runs
    ran = _count_statements(b, lambda query: setattr(state, "page_cache", PageCache()))
    assert (await _seen(sessions, "s1")).page("k") == [1]
    assert ran == [SESSION, BODIES]


async def test_a_page_kept_again_on_another_replica_replaces_the_held_one(
    replicas: tuple[Neo4jStore, Neo4jStore],
) -> None:
    a, b = replicas
    clock = Clock()
    a_sessions = SessionStore(clock, state=a.session_state(DEFAULT_BUDGET))
    b_sessions = SessionStore(clock, state=b.session_state(DEFAULT_BUDGET))
    await _keep(a_sessions, "s1", {"k": {"items": ["first"]}})
    assert (await _seen(a_sessions, "s1")).page("k") == {"items": ["first"]}
    clock.now += 1
    async with b_sessions.acquire("s1") as session:  # reset_seen on b, then the same call
        b_sessions.reset("s1")  # again: a page of the same size under the same key
        b_sessions.commit("s1", ["event_x"])
        session.keep_page("k", {"items": ["again"]})
    assert (await _seen(a_sessions, "s1")).page("k") == {"items": ["again"]}
    clock.now += 1
    async with b_sessions.acquire("s1"):  # reset_seen alone: no page is read back
        b_sessions.reset("s1")
    assert (await _seen(a_sessions, "s1")).page("k") is None
