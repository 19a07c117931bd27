"""The managed local Neo4j: install, start, stop, status, one server per home, the password.

Tests that start a server take ~30 s and run only with ``MNEMOQL_TEST_NEO4J_MANAGED=1`` or
``CI=true`` (they need Java 17+, and Maven Central or an already filled jar cache).
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from neo4j import GraphDatabase

from mnemoql.engine.errors import StoreUnavailable
from mnemoql.engine.store.neo4j.managed import ManagedNeo4j, main
from mnemoql.engine.store.neo4j.store import Neo4jStore

MANAGED = os.environ.get("MNEMOQL_TEST_NEO4J_MANAGED") == "1" or os.environ.get("CI") == "true"
needs_server = pytest.mark.skipif(
    not MANAGED, reason="starts a real Neo4j: set MNEMOQL_TEST_NEO4J_MANAGED=1 (always on in CI)"
)


# ---------------------------------------------------------------- without a server


def test_missing_maven_is_a_clear_store_unavailable(tmp_path: Path) -> None:
    server = ManagedNeo4j(tmp_path / "home", cache_dir=tmp_path / "cache", mvn="no-such-mvn")
    with pytest.raises(StoreUnavailable) as err:
        server.install()
    assert "Maven" in err.value.message and "external Neo4j" in err.value.message


def test_missing_java_is_a_clear_store_unavailable(tmp_path: Path) -> None:
    server = ManagedNeo4j(tmp_path / "home", cache_dir=tmp_path / "cache", java="no-such-java")
    for action in (server.install, server.start):
        with pytest.raises(StoreUnavailable) as err:
            action()
        assert "Java" in err.value.message and "external Neo4j" in err.value.message


def test_start_before_install_says_what_to_run(tmp_path: Path) -> None:
    server = ManagedNeo4j(tmp_path / "home", cache_dir=tmp_path / "empty-cache")
    with pytest.raises(StoreUnavailable) as err:
        server.start()
    assert "install" in err.value.message
    assert not (tmp_path / "home" / "password").exists()


def test_settings_are_validated(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        ManagedNeo4j(tmp_path, version="2025.01.0")
    with pytest.raises(ValueError):
        ManagedNeo4j(tmp_path, heap="1g; rm -rf /")


def test_status_of_a_fresh_home(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = ManagedNeo4j(tmp_path / "home", cache_dir=tmp_path / "cache")
    st = server.status()
    assert (st.running, st.pid, st.uri, st.installed) == (False, None, None, False)
    assert server.stop() is False
    assert main(["status", "--home", str(tmp_path / "home"), "--cache-dir", str(tmp_path)]) == 3
    assert "stopped" in capsys.readouterr().out


# ---------------------------------------------------------------- with a server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedNeo4j]:
    if not MANAGED:
        pytest.skip("set MNEMOQL_TEST_NEO4J_MANAGED=1 to start a real Neo4j")
    home = tmp_path_factory.mktemp("neo4j-home")
    managed = ManagedNeo4j(home, heap="512m", page_cache="64m")
    managed.install()
    managed.start()
    yield managed
    managed.stop()


def _socket_peers(pid: int) -> list[tuple[str, str]]:
    """(local, remote) hex addresses of the TCP sockets the process holds (Linux)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    peers = []
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                peers.append((fields[1], fields[2]))
    return peers


def _is_loopback_or_unset(hex_addr: str) -> bool:
    host = hex_addr.split(":")[0]
    if set(host) == {"0"}:
        return True  # listening socket: no peer
    if len(host) == 8:
        return host.endswith("7F")  # 127.x.x.x, little-endian
    # IPv4-mapped IPv6 ::ffff:127.0.0.1 or ::1
    return host.upper() in {"0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}


@needs_server
def test_started_server_answers_on_loopback_with_the_stored_password(server: ManagedNeo4j) -> None:
    st = server.status()
    assert st.running and st.pid is not None and st.installed
    assert st.uri == server.uri and server.uri.startswith("bolt://127.0.0.1:")
    mode = stat.S_IMODE(server.password_path.stat().st_mode)
    assert mode == 0o600
    with GraphDatabase.driver(server.uri, auth=(server.user, server.password)) as driver:
        records, _, _ = driver.execute_query("CALL dbms.components() YIELD versions, edition")
    assert records[0]["versions"] == [server.version] and records[0]["edition"] == "community"
    conf = server.conf_path.read_text()
    for line in (
        "server.http.enabled=false",
        "server.https.enabled=false",
        "dbms.usage_report.enabled=false",
        "dbms.security.auth_enabled=true",
        "server.default_listen_address=127.0.0.1",
        "server.memory.pagecache.size=64m",
    ):
        assert line in conf.splitlines()
    if Path(f"/proc/{st.pid}/fd").exists():
        peers = _socket_peers(st.pid)
        assert peers, "the server holds its Bolt socket"
        assert all(_is_loopback_or_unset(local) for local, _ in peers)
        assert all(_is_loopback_or_unset(remote) for _, remote in peers), "no outbound traffic"


@needs_server
def test_a_second_start_on_the_same_home_is_refused(server: ManagedNeo4j) -> None:
    pid = server.status().pid
    twin = ManagedNeo4j(server.home, server.version, cache_dir=server.cache_dir)
    with pytest.raises(StoreUnavailable) as err:
        twin.start()
    assert "already running" in err.value.message
    twin.ensure_running()  # reuses the running server
    assert twin.status().pid == pid == server.status().pid


@needs_server
def test_env_prints_exports_for_the_running_server(
    server: ManagedNeo4j, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["env", "--home", str(server.home), "--cache-dir", str(server.cache_dir)]
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"export MNEMOQL_TEST_NEO4J_URI={server.uri}",
        "export MNEMOQL_TEST_NEO4J_USER=neo4j",
        f"export MNEMOQL_TEST_NEO4J_PASSWORD={server.password}",
    ]


@needs_server
async def test_stop_then_restart_keeps_password_port_and_data(server: ManagedNeo4j) -> None:
    password, uri = server.password, server.uri
    store = Neo4jStore(uri, server.user, password, space="managed")
    await store.open()
    try:
        with GraphDatabase.driver(uri, auth=(server.user, password)) as driver:
            driver.execute_query("CREATE (:Probe {space: 'managed', n: 42})")
        assert server.stop() is True
        assert not server.status().running
        assert await store.ping(timeout=3.0) is False  # promptly, not a hang
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", server.port or 0), 1):
            pass
        server.start()
        assert (server.password, server.uri) == (password, uri)
        with GraphDatabase.driver(uri, auth=(server.user, password)) as driver:
            records, _, _ = driver.execute_query(
                "MATCH (p:Probe {space: 'managed'}) RETURN p.n AS n"
            )
            assert [r["n"] for r in records] == [42]
            driver.execute_query("MATCH (p:Probe) DELETE p")
    finally:
        await store.close()


@needs_server
async def test_the_service_stops_the_managed_neo4j_it_started_and_only_that(
    tmp_path: Path,
) -> None:
    from tests.api.conftest import offline_settings, running

    settings = offline_settings(
        tmp_path, store="neo4j", neo4j={"mode": "managed", "heap": "512m", "page_cache": "64m"}
    )
    managed = ManagedNeo4j(settings.data_dir / "neo4j", heap="512m", page_cache="64m")
    # started by the service: stopped with it
    async with running(settings) as api:
        assert managed.status().running
        data = await api.gql('mutation { save(input: {content: "Alice met Bob."}) { eventIds } }')
        assert data["save"]["eventIds"] == ["event_1"]
    assert not managed.status().running
    # started by hand (``mnemoql neo4j start``): left running, with the memory in it
    managed.start()
    try:
        async with running(settings) as api:
            data = await api.gql("{ memoryIndex { counts { events } } }")
            assert data["memoryIndex"]["counts"]["events"] == 1
        assert managed.status().running
    finally:
        managed.stop()
