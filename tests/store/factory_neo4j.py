"""Registers the Neo4j store with the contract suite (``tests/store/factories.py``).

The server comes from the environment: ``MNEMOQL_TEST_NEO4J_URI``, ``MNEMOQL_TEST_NEO4J_USER``
(default ``neo4j``), ``MNEMOQL_TEST_NEO4J_PASSWORD`` and optionally
``MNEMOQL_TEST_NEO4J_DATABASE``; ``eval "$(scripts/neo4j-ci.sh start .neo4j)"`` sets them for a
managed server. Without them, or when the server does not answer within 3 s, the ``[neo4j]``
cases skip -- unless ``CI=true`` or ``MNEMOQL_REQUIRE_NEO4J=1``, where they fail.

Each test gets its own memory space (a fresh space name from the fixture) and the space is
deleted afterwards, so tests never see each other's data in the shared database.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from mnemoql.engine.store.neo4j.store import Neo4jStore
from tests.store.factories import StoreFactory, register_store_factory

CONNECT_TIMEOUT = 3.0


@dataclass(frozen=True)
class Neo4jTarget:
    uri: str
    user: str
    password: str
    database: str | None


def target() -> Neo4jTarget | None:
    uri = os.environ.get("MNEMOQL_TEST_NEO4J_URI")
    password = os.environ.get("MNEMOQL_TEST_NEO4J_PASSWORD")
    if not uri or password is None:
        return None
    return Neo4jTarget(
        uri=uri,
        user=os.environ.get("MNEMOQL_TEST_NEO4J_USER", "neo4j"),
        password=password,
        database=os.environ.get("MNEMOQL_TEST_NEO4J_DATABASE") or None,
    )


def required() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("MNEMOQL_REQUIRE_NEO4J") == "1"


def unreachable() -> str | None:
    """Why the Neo4j cases cannot run (None when they can); fails instead when required."""
    t = target()
    if t is None:
        reason = "set MNEMOQL_TEST_NEO4J_URI and MNEMOQL_TEST_NEO4J_PASSWORD"
    else:
        reason = _probe(t)
    if reason is not None and required():
        pytest.fail(f"Neo4j is required here (CI / MNEMOQL_REQUIRE_NEO4J) but {reason}")
    return reason


def _probe(t: Neo4jTarget) -> str | None:
    from neo4j import GraphDatabase
    from neo4j.exceptions import DriverError, Neo4jError

    try:
        with GraphDatabase.driver(
            t.uri, auth=(t.user, t.password), connection_timeout=CONNECT_TIMEOUT
        ) as driver:
            driver.verify_connectivity()
    except (DriverError, Neo4jError, OSError, ValueError) as exc:
        return f"Neo4j at {t.uri} is unreachable ({type(exc).__name__}: {exc})"
    return None


def make(path: Path, space: str) -> Neo4jStore:
    t = target()
    assert t is not None, "skip_reason() guards this"
    return Neo4jStore(t.uri, t.user, t.password, t.database, space=space)


@asynccontextmanager
async def fresh_space(path: Path) -> AsyncIterator[Neo4jStore]:
    """An open store on a space of its own, dropped and closed afterwards."""
    store = make(path, f"t{uuid.uuid4().hex[:12]}")
    await store.open()
    try:
        yield store
    finally:
        await store.drop_space()
        await store.close()


async def drop(path: Path, space: str) -> None:
    store = make(path, space)
    await store.open()
    try:
        await store.drop_space()
    finally:
        await store.close()


register_store_factory("neo4j", StoreFactory(make=make, skip_reason=unreachable, cleanup=drop))
