"""Concurrent writers of one Neo4j space queue on its lock instead of deadlocking.

Every write transaction starts with ``LOCK_SPACE`` (``_cypher_write``). A later statement that wrote
the locked space node with an expression reading it again (``SET s.x = s.x + 1``: the id marks,
the removal counter) made Neo4j 5.26 report DeadlockDetected against the writers queued on the
lock: ~30 driver retries per 20 concurrent saves, and a failed save under load once the 10 s
retry window ran out (the flaky ``test_concurrent_saves_get_unique_gap_free_ids[neo4j]``).
These tests count the re-run transactions (``Runner.retries``), which a loaded machine cannot
hide: any retry fails them, where the contract test fails only when the retries run out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mnemoql.engine.drafts import TopicDraft
from mnemoql.engine.store.neo4j import _changes
from mnemoql.engine.store.neo4j.store import Neo4jStore
from tests.store import factory_neo4j
from tests.store._builders import axis, concept, event, person, plan, rel

WRITERS = 20


@pytest.fixture
async def store() -> AsyncIterator[Neo4jStore]:
    reason = factory_neo4j.unreachable()
    if reason:
        pytest.skip(f"neo4j store unavailable: {reason}")
    async with factory_neo4j.fresh_space(Path(".")) as s:
        yield s


def _save(i: int, topic: bool) -> object:
    p = plan(
        [event("e", axis(i % 8))],
        [person("p", f"Person {i}"), concept("c", "shared concept")],
        [rel("PARTICIPATED_IN", "p", "e"), rel("MENTIONS", "e", "c")],
    )
    if topic:
        p.topic = TopicDraft(f"work->team {i % 3}", [], 0.5, 0.5, 0.5)
    return p


async def test_concurrent_saves_queue_on_the_space_lock_without_retries(
    store: Neo4jStore,
) -> None:
    await store.apply_save(_save(0, topic=False))  # the space node and its marks exist
    results = await asyncio.gather(
        *(store.apply_save(_save(i, topic=i % 2 == 0)) for i in range(1, WRITERS + 1))
    )
    events = sorted(int(r.event_ids[0].split("_")[1]) for r in results)
    assert events == list(range(2, WRITERS + 2))
    assert store.runner.retries == 0, "a write transaction was re-run (DeadlockDetected?)"


async def test_concurrent_forgets_and_saves_queue_without_retries(
    store: Neo4jStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_changes, "KEEP", 4)  # the forgets prune the removal log as well
    saved = await store.apply_save(plan([event(f"e{i}", axis(i % 8)) for i in range(WRITERS)]))
    await asyncio.gather(
        *(store.forget(i) for i in saved.event_ids),
        *(store.apply_save(_save(i, topic=True)) for i in range(WRITERS // 2)),
    )
    assert (await store.counts()).events == WRITERS // 2
    rows = await store._run(
        f"MATCH (s:{_changes.q.SPACE_LABEL} {{space: $space}}) "
        "RETURN s.removals AS n, s.removals_floor AS floor, s.topics_reload AS reload"
    )
    assert rows[0]["n"] == WRITERS
    assert rows[0]["floor"] >= WRITERS - 4 - 4 // 4  # pruned to the horizon along the way
    assert rows[0]["reload"] > 0
    assert store.runner.retries == 0, "a write transaction was re-run (DeadlockDetected?)"
