"""Neo4j-specific behaviour beyond the contract suite: the Cypher allow-lists under injection
strings, space isolation in one database, the vector indexes, zero vectors, and how an
unreachable server surfaces. Live tests need ``MNEMOQL_TEST_NEO4J_*`` (see factory_neo4j.py)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mnemoql.engine.errors import InvalidInput, StoreUnavailable
from mnemoql.engine.models import EMPTY_FILTERS, AllOf, Cond, MemoryMeta, Not, Page, VectorSet
from mnemoql.engine.store.base import Store
from mnemoql.engine.store.neo4j import _cypher as q
from mnemoql.engine.store.neo4j import _cypher_read as qread
from mnemoql.engine.store.neo4j import _cypher_write as qwrite
from mnemoql.engine.store.neo4j import _records as rec
from mnemoql.engine.store.neo4j._runner import Runner
from mnemoql.engine.store.neo4j.home import free_port
from mnemoql.engine.store.neo4j.store import Neo4jStore
from tests.store import factory_neo4j
from tests.store._builders import axis, concept, event, person, plan, rel, save_one

INJECTIONS = [
    "Event) DETACH DELETE n //",
    "Event {id: 'x'}) MATCH (m) DETACH DELETE m RETURN m //",
    "Person`) DETACH DELETE n //",
    "MENTIONS]->() DETACH DELETE n //",
    "id = '' OR true //",
    "id} ) CALL { MATCH (m) DETACH DELETE m } //",
    "name\nUNION MATCH (m) RETURN m",
    "Event\u0000",
    "event",  # case matters: labels are exact
    "",
]


# ---------------------------------------------------------------- allow-lists (no server)


@pytest.mark.parametrize("evil", INJECTIONS)
def test_allow_lists_reject_injection_strings(evil: str) -> None:
    with pytest.raises(InvalidInput):
        q.label(evil)
    with pytest.raises(InvalidInput):
        q.entity_label(evil)
    with pytest.raises(InvalidInput):
        q.rel_type(evil)
    with pytest.raises(InvalidInput):
        rec.WhereCompiler("Event").compile(Cond(evil, "eq", "x"))
    with pytest.raises(InvalidInput):
        rec.sort_key("Person", (evil, "ASC"))
    with pytest.raises(InvalidInput):
        rec.sort_key("Person", ("name", evil))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        qread.list_page("Event", "true", "n.id", evil, after=False)


def test_where_values_only_ever_travel_as_parameters() -> None:
    compiler = rec.WhereCompiler("Event")
    evil = "x' OR 1=1 //"
    text = compiler.compile(
        AllOf((Cond("summary", "contains", evil), Not(Cond("id", "in", [evil]))))
    )
    assert evil not in text
    assert text == "(n.summary CONTAINS $w0) AND (NOT (n.id IN $w1))"
    assert compiler.params == {"w0": evil, "w1": [evil]}


def test_prepared_queries_only_name_allow_listed_labels() -> None:
    assert set(qwrite.CREATE_ENTITIES) == {"Person", "Concept", "Location"}
    assert {k[1] for k in qwrite.MERGE_REL} == {
        "PARTICIPATED_IN",
        "OCCURRED_AT",
        "MENTIONS",
        "HAS_ATTITUDE",
    }


# ---------------------------------------------------------------- unreachable servers


async def test_open_on_a_closed_port_fails_fast_with_store_unavailable() -> None:
    store = Neo4jStore(f"bolt://127.0.0.1:{free_port()}", "neo4j", "secret", space="x")
    assert await store.ping() is False  # not open yet
    started = time.monotonic()
    with pytest.raises(StoreUnavailable) as err:
        await store.open()
    assert time.monotonic() - started < 10
    assert err.value.code == "STORE_UNAVAILABLE"
    assert "secret" not in err.value.message
    assert await store.ping() is False


async def test_methods_before_open_raise_store_unavailable() -> None:
    store = Neo4jStore("bolt://127.0.0.1:1", "neo4j", "secret")
    with pytest.raises(StoreUnavailable):
        await store.get_meta()


def test_space_names_are_checked() -> None:
    with pytest.raises(InvalidInput):
        Neo4jStore("bolt://127.0.0.1:1", "neo4j", "pw", space="a b")


# ---------------------------------------------------------------- live


@pytest.fixture
def neo4j_available() -> None:
    reason = factory_neo4j.unreachable()
    if reason:
        pytest.skip(f"neo4j store unavailable: {reason}")


async def _open(space: str) -> Neo4jStore:
    store = factory_neo4j.make(Path("."), space)
    await store.open()
    return store


@pytest.fixture
async def spaces(neo4j_available: None) -> AsyncIterator[list[Neo4jStore]]:
    """Two open stores on two fresh spaces of the same database; dropped afterwards."""
    opened = [await _open(f"t{uuid.uuid4().hex[:12]}") for _ in range(2)]
    yield opened
    for s in opened:
        await s.drop_space()
        await s.close()


async def _vector_indexes(store: Neo4jStore) -> dict[str, Any]:
    rows = await store._run(
        "SHOW VECTOR INDEXES YIELD name, labelsOrTypes, options "
        "RETURN name, options.indexConfig['vector.dimensions'] AS dims"
    )
    return {r["name"]: r["dims"] for r in rows}


async def test_injection_strings_through_the_live_store(spaces: list[Neo4jStore]) -> None:
    store = spaces[0]
    await store.apply_save(
        plan([event("e", axis(0))], [person("p", "Alice")], [rel("PARTICIPATED_IN", "p", "e")])
    )
    before = await store.counts()
    for evil in INJECTIONS:
        bad: Any = evil  # deliberately outside the Literal types
        for call in (
            store.find_entities(bad, ["alice"]),
            store.similar_entities(bad, axis(0), 3, 0.0),
            store.entity_vector_top(bad, axis(0), 3),
            store.list_nodes(bad, None, ("id", "ASC"), Page(5)),
            store.list_nodes("Event", Cond(evil, "eq", "x"), ("id", "ASC"), Page(5)),
            store.list_nodes("Event", None, (evil, "ASC"), Page(5)),
            store.list_nodes("Event", None, ("id", bad), Page(5)),
            store.neighbours(["event_1"], bad, "both", 5),
            store.route(bad, axis(0), EMPTY_FILTERS, frozenset(), 5),
        ):
            with pytest.raises(InvalidInput):
                await call
        # Values are parameters: they match nothing and change nothing.
        assert await store.find_entities("Person", [evil]) == []
        assert await store.resolve_terms(evil) == frozenset()
        assert await store.get_nodes([evil]) == [None]
        assert await store.positional_events(evil, evil) == []
        page = await store.list_nodes("Person", Cond("name", "eq", evil), ("name", "ASC"), Page(5))
        assert page.nodes == [] and page.total == 0
    assert await store.counts() == before


async def test_spaces_share_a_database_but_nothing_else(spaces: list[Neo4jStore]) -> None:
    a, b = spaces
    ra = await a.apply_save(plan([event("e", axis(0))], [concept("c", "Graph")]))
    rb = await b.apply_save(plan([event("e", axis(1))], [concept("c", "Graph")]))
    assert ra.event_ids == rb.event_ids == ["event_1"]  # ids are allocated per space
    assert ra.created == rb.created == {"Concept": ["concept_1"]}
    [ea] = await a.get_events(["event_1"], with_vectors=True)
    [eb] = await b.get_events(["event_1"], with_vectors=True)
    assert ea.embedding is not None and eb.embedding is not None
    assert ea.embedding.tolist() != eb.embedding.tolist()
    hits = await b.route("summary", axis(0), EMPTY_FILTERS, frozenset(), 5)
    assert [(h.event_id, round(h.score, 5)) for h in hits] == [("event_1", 0.0)]
    await a.forget("event_1")
    assert (await a.counts()).events == 0 and (await b.counts()).events == 1
    assert await b.resolve_terms("graph") == frozenset({"concept_1"})
    assert await a.drop_space() > 0
    assert (await b.counts()).concepts == 1


async def test_vector_indexes_follow_the_meta_dimensions(spaces: list[Neo4jStore]) -> None:
    store = spaces[0]
    await save_one(store, axis(0))
    names = set(q.VECTOR_INDEXES.values())  # SPEC's four (the chunks': test_neo4j_spaces.py)
    # They are database-wide: the first save creates them unless they exist already.
    assert names <= set(await _vector_indexes(store))
    wide = MemoryMeta(model="wide", dimensions=12, updated_at="2026-04-01T00:00:00+08:00")
    v = np.zeros(12, dtype=np.float32)
    v[3] = 1.0
    await store.replace_vectors(VectorSet({"event_1": v}, {}, [], wide))
    widths = await _vector_indexes(store)
    assert {n: widths.get(n) for n in names} == dict.fromkeys(names, 12)
    assert q.CHUNK_VECTOR_INDEX not in widths  # a store with own space indexes keeps none
    hits = await store.route("summary", v, EMPTY_FILTERS, frozenset(), 5)
    assert [(h.event_id, round(h.score, 5)) for h in hits] == [("event_1", 1.0)]


async def test_zero_vectors_score_zero_on_both_stores(store: Store) -> None:
    zero = np.zeros(8, dtype=np.float32)
    await store.apply_save(plan([event("a", zero), event("b", axis(0)), event("c", -axis(0))]))
    hits = await store.route("summary", axis(0), EMPTY_FILTERS, frozenset(), 5)
    assert [(h.event_id, round(h.score, 5)) for h in hits] == [
        ("event_2", 1.0),
        ("event_1", 0.0),
        ("event_3", -1.0),
    ]
    flat = await store.route("summary", zero, EMPTY_FILTERS, frozenset(), 5)
    assert [(h.event_id, h.score) for h in flat] == [
        ("event_1", 0.0),
        ("event_2", 0.0),
        ("event_3", 0.0),
    ]
    [ev] = await store.get_events(["event_1"], with_vectors=True)
    assert ev.embedding is not None and not ev.embedding.any()


async def test_wrong_credentials_surface_as_store_unavailable(neo4j_available: None) -> None:
    target = factory_neo4j.target()
    assert target is not None
    # A user name that does not exist: failed logins of the real user would lock it briefly.
    store = Neo4jStore(target.uri, "mnemoql_no_such_user", "wrong", space="x")
    with pytest.raises(StoreUnavailable) as err:
        await store.open()
    assert "credentials" in err.value.message and "wrong" not in err.value.message


async def test_an_unknown_database_is_store_unavailable(neo4j_available: None) -> None:
    target = factory_neo4j.target()
    assert target is not None
    store = Neo4jStore(target.uri, target.user, target.password, "nosuchdb", space="x")
    with pytest.raises(StoreUnavailable) as err:
        await store.open()
    assert "nosuchdb" in err.value.message


async def test_open_refuses_a_server_without_vector_support(
    neo4j_available: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The version check is the store's own (any way it is built), before any schema write."""
    from mnemoql.engine.store.neo4j import _runner

    target = factory_neo4j.target()
    assert target is not None
    monkeypatch.setattr(_runner, "MIN_VERSION", (99, 0))  # the running 5.26 is "too old"
    store = Neo4jStore(target.uri, target.user, target.password, space=f"v{uuid.uuid4().hex[:8]}")
    with pytest.raises(StoreUnavailable) as err:
        await store.open()
    assert "lacks vector support" in err.value.message and "5.23" in err.value.message
    assert not await store.ping()  # closed again
    monkeypatch.setattr(_runner, "MIN_VERSION", (5, 23))
    await store.open()
    try:
        assert await store.ping()
    finally:
        await store.drop_space()
        await store.close()


@pytest.mark.parametrize(
    ("text", "version"),
    [("5.26.0", (5, 26)), ("5.23", (5, 23)), ("2025.01.0", (2025, 1)), ("dev", None), ("5", None)],
)
def test_server_versions_are_read_as_major_minor(
    text: str, version: tuple[int, int] | None
) -> None:
    from mnemoql.engine.store.neo4j._runner import parse_version

    assert parse_version(text) == version


async def test_replicas_creating_the_same_schema_at_once_all_succeed(
    neo4j_available: None,
) -> None:
    """N replicas opening a fresh database create the same constraints and indexes at once:
    their statements deadlock on the label's lock now and then (DeadlockDetected, 4 of 8 rounds
    of this shape before the retry). Every statement must succeed, the rules made once."""
    target = factory_neo4j.target()
    assert target is not None
    runners = [Runner(target.uri, target.user, target.password, target.database, "x", 5.0)
               for _ in range(4)]  # fmt: skip
    for runner in runners:
        await runner.connect()
    try:
        for _ in range(6):
            label = f"SchemaRace{uuid.uuid4().hex[:8]}"  # a label no one else uses
            names = [f"{label}_u{i}" for i in range(4)] + [f"{label}_i{i}" for i in range(4)]
            statements = [
                f"CREATE CONSTRAINT {n} IF NOT EXISTS FOR (n:{label}) REQUIRE (n.space, n.p{i}) "
                "IS UNIQUE" for i, n in enumerate(names[:4])
            ] + [f"CREATE INDEX {n} IF NOT EXISTS FOR (n:{label}) ON (n.space, n.q{i})"
                 for i, n in enumerate(names[4:])]  # fmt: skip

            async def create(runner: Runner, statements: list[str] = statements) -> None:
                for statement in statements:
                    await runner.schema(statement)

            try:
                await asyncio.gather(*(create(r) for r in runners))
                rows = await runners[0].run(
                    "SHOW INDEXES YIELD name WHERE name STARTS WITH $p RETURN name", {"p": label}
                )
                assert sorted(r["name"] for r in rows) == sorted(names)
            finally:
                for n in names[:4]:
                    await runners[0].schema(f"DROP CONSTRAINT {n} IF EXISTS")
                for n in names[4:]:
                    await runners[0].schema(f"DROP INDEX {n} IF EXISTS")
    finally:
        for runner in runners:
            await runner.close()
