"""Entity lookups by name read a space-scoped name index (``_cypher.NAME_INDEX``) instead of
scanning the space's entities: ``find_entities`` (every save plans its merges with it, and
SaveTx looks again under the space lock), ``resolve_terms`` (entity filters, Person/Concept
searches). Live tests need ``MNEMOQL_TEST_NEO4J_*`` (see factory_neo4j.py)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j.store import Neo4jStore
from tests.store import factory_neo4j
from tests.store._builders import concept, person, plan

MakeStore = Callable[[str], Awaitable[Neo4jStore]]


@pytest.fixture
async def make() -> AsyncIterator[MakeStore]:
    reason = factory_neo4j.unreachable()
    if reason is not None:
        pytest.skip(f"neo4j store unavailable: {reason}")
    t = factory_neo4j.target()
    assert t is not None
    opened: list[Neo4jStore] = []

    async def _make(space: str) -> Neo4jStore:
        store = Neo4jStore(t.uri, t.user, t.password, t.database, space=space)
        await store.open()
        opened.append(store)
        return store

    yield _make
    for s in opened:
        await s.drop_space()
        await s.close()


def space() -> str:
    return f"names-{uuid.uuid4().hex[:10]}"


async def online(store: Neo4jStore) -> None:
    """Wait for the name index (made on open) and make the store read its state again."""
    await store._run("CALL db.awaitIndex($name, 300)", {"name": q.NAME_INDEX})
    store.names.seen = -1e9
    assert await store.names.usable()


def _hits(plan_: dict[str, Any]) -> int:
    return int(plan_.get("dbHits", 0)) + sum(_hits(c) for c in plan_.get("children", []))


async def db_hits_of_lookup(store: Neo4jStore, call: Callable[[], Awaitable[Any]]) -> int:
    """The db hits of the statements ``call`` sends (each profiled as sent)."""
    sent: list[tuple[str, dict[str, Any]]] = []
    inner = store.runner.run

    async def spy(query: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
        sent.append((query, params or {}))
        return await inner(query, params, **kw)

    store.runner.run = spy  # type: ignore[method-assign]
    try:
        await call()
    finally:
        store.runner.run = inner  # type: ignore[method-assign]
    total = 0
    for query, params in sent:
        result = await store.driver.execute_query(
            "PROFILE " + query, {"space": store.space, **params}
        )
        assert result.summary.profile is not None
        total += _hits(result.summary.profile)
    return total


async def test_name_lookups_read_the_index_not_every_entity(make: MakeStore) -> None:
    s = await make(space())
    result = await s.apply_save(
        plan([], [concept(f"c{i}", f"concept number {i}") for i in range(1_500)])
    )
    await online(s)
    found = await s.find_entities("Concept", ["concept number 7", "nobody"])
    assert [e.id for e in found] == [result.refs["c7"]]
    assert await s.resolve_terms("concept number 9") == {result.refs["c9"]}
    # A scan reads every concept of the space (several db hits each: > 3,000 here).
    for call in (
        lambda: s.find_entities("Concept", ["concept number 7"]),
        lambda: s.resolve_terms("concept number 9"),
    ):
        assert await db_hits_of_lookup(s, call) < 100


async def test_keys_are_exact_space_scoped_and_safe_for_any_name(make: MakeStore) -> None:
    a, b = await make(space()), await make(space())
    long_a, long_b = "x" * 120 + "a", "x" * 120 + "b"  # one key (the first 100 characters)
    huge = "y" * 40_000  # past Lucene's 32,766-byte term limit (a raw term fails the commit)
    odd = ['say "hi"', "back\\slash", "a:b (c) [d] +e -f *g ?h ~i ^j {k} /l", "Ünïcödé 名字"]
    names = [long_a, long_b, huge, *odd]
    result = await a.apply_save(
        plan([], [person(f"p{i}", n) for i, n in enumerate(names)]
             + [concept("c", "Shared", ["Alias One"])])
    )  # fmt: skip
    await b.apply_save(plan([], [concept("c", "Shared")]))
    await online(a)
    for i, n in enumerate(names):
        got = await a.find_entities("Person", [n.casefold()])
        assert [e.id for e in got] == [result.refs[f"p{i}"]], n[:40]
        assert await a.resolve_terms(n.casefold()) == {result.refs[f"p{i}"]}
    shared = await a.find_entities("Concept", ["shared", "alias one"])
    assert [e.id for e in shared] == [result.refs["c"]]  # not space b's "Shared"
    assert await a.find_entities("Concept", [long_a]) == []  # another label
    # A merge adds an alias: found by it at once (the save's own lookups see it too).
    await a.apply_save(plan([], [concept("m", "New Alias", merge_into=result.refs["c"])]))
    assert await a.resolve_terms("new alias") == {result.refs["c"]}
    again = await a.apply_save(plan([], [concept("d", "new alias")]))
    assert again.refs["d"] == result.refs["c"]  # merged by name, not created twice


async def test_entities_written_before_the_keys_get_them_at_open(make: MakeStore) -> None:
    name = space()
    s = await make(name)
    result = await s.apply_save(plan([], [person("p", "Ada Lovelace", ["Countess"])]))
    # What an older version wrote: no name keys, a space node without the mark.
    await s._run("MATCH (n:Person {space: $space}) REMOVE n.name_keys", writable=True)
    await s._run(f"MATCH (s:{q.SPACE_LABEL} {{space: $space}}) REMOVE s.named", writable=True)
    reopened = await make(name)
    await online(reopened)
    assert await reopened.resolve_terms("countess") == {result.refs["p"]}
    rows = await reopened._run(
        "MATCH (n:Person {space: $space}) RETURN n.name_keys AS k, "
        f"EXISTS {{ MATCH (s:{q.SPACE_LABEL} {{space: $space, named: true}}) }} AS named"
    )
    assert rows[0]["k"] == sorted(q.name_prefix(name) + k for k in ["ada lovelace", "countess"])
    assert rows[0]["named"]


async def test_a_restored_space_is_found_by_name(make: MakeStore) -> None:
    src, dst = await make(space()), await make(space())
    result = await src.apply_save(plan([], [person("p", "Grace Hopper", ["Amazing Grace"])]))
    records = [r async for r in src.export_records(vectors=True)]
    await dst.import_records(records)
    await online(dst)
    assert await dst.resolve_terms("amazing grace") == {result.refs["p"]}
    assert [e.name for e in await dst.find_entities("Person", ["grace hopper"])] == [
        "Grace Hopper"
    ]
