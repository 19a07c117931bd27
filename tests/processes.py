"""Real ``mnemoql`` processes for tests: ``mnemoql serve`` on a free loopback port and CLI runs,
on either store (the Neo4j one from ``MNEMOQL_TEST_NEO4J_*``, in a space of the test's own)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.store.factory_neo4j import target, unreachable

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "test-token-" + "x" * 24


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Place:
    """One memory a test's processes share: a data dir, a store, a space, a token."""

    data_dir: Path
    store: str  # embedded | neo4j
    space: str = field(default_factory=lambda: f"t{uuid.uuid4().hex[:12]}")

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MNEMOQL_", "DSH_"))}
        for name in ("DEEPSEEK_API_KEY", "EMBEDDING_API_KEY", "TYPESAFE_API_KEY"):
            env.pop(name, None)
        env.update(
            MNEMOQL_DATA_DIR=str(self.data_dir),
            MNEMOQL_STORE=self.store,
            MNEMOQL_EMBEDDING__PROVIDER="hashing",
            MNEMOQL_AUTH__TOKENS=(
                f'[{{"token": "{TOKEN}", "space": "{self.space}", "scopes": ["read", "write"]}}]'
            ),
        )
        if self.store == "neo4j":
            t = target()
            assert t is not None
            env.update(MNEMOQL_NEO4J__URI=t.uri, MNEMOQL_NEO4J__USER=t.user,
                       MNEMOQL_NEO4J__PASSWORD=t.password)  # fmt: skip
        env.update(extra)
        return env

    def cli(self, *args: str, timeout: float = 180, **env: str) -> subprocess.CompletedProcess[str]:
        """``mnemoql <args> --space <space>`` (for commands that take a space)."""
        space = ["--space", self.space] if args[0] in {"import", "export", "restore",
                                                       "revectorize"} else []  # fmt: skip
        return subprocess.run(
            [sys.executable, "-m", "mnemoql.web.cli", *args, *space],
            cwd=ROOT, env=self.env(**env), capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip

    def popen(self, *args: str, **env: str) -> subprocess.Popen[str]:
        space = ["--space", self.space] if args[0] != "serve" else []
        return subprocess.Popen(
            [sys.executable, "-m", "mnemoql.web.cli", *args, *space],
            cwd=ROOT, env=self.env(**env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip

    def drop(self) -> None:
        if self.store != "neo4j":
            return
        from neo4j import GraphDatabase

        t = target()
        assert t is not None
        with GraphDatabase.driver(t.uri, auth=(t.user, t.password)) as driver:
            driver.execute_query("MATCH (n) WHERE n.space = $s DETACH DELETE n", s=self.space)

    def event_contents(self) -> list[str]:
        """The content of every event of the space, straight from the database."""
        if self.store == "neo4j":
            from neo4j import GraphDatabase

            t = target()
            assert t is not None
            with GraphDatabase.driver(t.uri, auth=(t.user, t.password)) as driver:
                rows = driver.execute_query(
                    "MATCH (e:Event {space: $s}) RETURN e.content AS c", s=self.space
                ).records
            return [r["c"] for r in rows]
        import sqlite3

        db = self.data_dir / f"memory-{self.space}.db"
        if not db.exists():
            return []
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            conn.execute("PRAGMA busy_timeout = 5000")
            try:
                rows = conn.execute("SELECT content FROM nodes WHERE label = 'Event'").fetchall()
            except sqlite3.OperationalError:  # the file exists, its tables not yet
                return []
            return [r[0] for r in rows]


def stores() -> list[Any]:
    """``embedded`` always; ``neo4j`` when a test server is configured (required in CI)."""
    reason = unreachable()
    return ["embedded", pytest.param("neo4j", marks=pytest.mark.skipif(
        reason is not None, reason=f"neo4j: {reason}"))]  # fmt: skip


@pytest.fixture(name="place")
def place_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    """A ``Place`` on the store named by the test's ``place`` parameter (``stores()``)."""
    m = Place(tmp_path / "data", request.param)
    try:
        yield m
    finally:
        m.drop()


class Service:
    """A running ``mnemoql serve`` and a GraphQL client with the memory's token."""

    def __init__(self, proc: subprocess.Popen[str], port: int) -> None:
        self.proc = proc
        self.base = f"http://127.0.0.1:{port}"
        self.client = httpx.Client(
            base_url=self.base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
        )
        self.output = ""

    def post(self, query: str, **variables: Any) -> dict[str, Any]:
        r = self.client.post("/graphql", json={"query": query, "variables": variables})
        body: dict[str, Any] = r.json()
        return body

    def gql(self, query: str, **variables: Any) -> dict[str, Any]:
        body = self.post(query, **variables)
        assert not body.get("errors"), body["errors"]
        data: dict[str, Any] = body["data"]
        return data


@contextlib.contextmanager
def serving(place: Place, *args: str, **env: str) -> Iterator[Service]:
    """``mnemoql serve`` until the block ends (then SIGINT, and its output in ``.output``)."""
    port = free_port()
    proc = place.popen("serve", "--port", str(port), *args, **env)
    service = Service(proc, port)
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise AssertionError(proc.stdout.read() if proc.stdout else "serve exited")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{service.base}/readyz", timeout=5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise AssertionError("mnemoql serve did not get ready")
            time.sleep(0.05)
        yield service
    finally:
        service.client.close()
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        service.output = proc.stdout.read() if proc.stdout else ""
