"""Neo4j session state across replicas (issue 30): two stores stand for two processes, each
with its own driver, over one space."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator

import pytest

from mnemoql.engine.cursors import CursorStore
from mnemoql.engine.errors import CursorExpired
from mnemoql.engine.models import Filters
from mnemoql.engine.session_state import DEFAULT_BUDGET
from mnemoql.engine.sessions import SessionStore
from mnemoql.engine.store.neo4j import Neo4jStore
from tests.store.factory_neo4j import make, unreachable

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

