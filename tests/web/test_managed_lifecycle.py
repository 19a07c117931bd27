"""A managed Neo4j is tied to the ``mnemoql serve`` that owns it (issue 29, case 2).

- ``kill -9`` of ``serve`` leaves its JVM running (nothing can stop it then); the next ``serve``
  on the data dir adopts that orphan instead of starting a second server, and stops it when it
  stops: no JVM is left.
- SIGTERM during the first-run install stops Maven at once (a fake ``mvn`` on PATH that would
  run for 10 minutes stands in for a slow download; nothing leaves this machine).

The orphan test starts a real Neo4j (~20 s, a JVM); like tests/store/test_neo4j_managed.py it
runs with ``MNEMOQL_TEST_NEO4J_MANAGED=1`` or ``CI=true`` and needs the jars in the user cache.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mnemoql.engine.store.neo4j.managed import ManagedNeo4j
from tests.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
MANAGED = os.environ.get("MNEMOQL_TEST_NEO4J_MANAGED") == "1" or os.environ.get("CI") == "true"
needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="needs Java 17+")


def serve_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOQL_")}
    env.pop("DEEPSEEK_API_KEY", None)
    env.update(MNEMOQL_DATA_DIR=str(data_dir), MNEMOQL_STORE="neo4j",
               MNEMOQL_NEO4J__MODE="managed", MNEMOQL_NEO4J__HEAP="256m",
               MNEMOQL_NEO4J__PAGE_CACHE="32m", MNEMOQL_EMBEDDING__PROVIDER="hashing",
               **extra)  # fmt: skip
    return env


@contextlib.contextmanager
def serve(data_dir: Path, **env: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mnemoql.web.cli", "serve", "--port", str(port)],
        cwd=ROOT, env=serve_env(data_dir, **env), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        yield proc, f"http://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def wait_ready(proc: subprocess.Popen[str], base: str, deadline_s: float = 240) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                return
        time.sleep(0.2)
    raise AssertionError("serve did not get ready")


def alive(pid: int) -> bool:
    """Running, and not a zombie waiting for a parent that no longer reaps."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def server_pid(home: ManagedNeo4j) -> int | None:
    """The pid the home's pid file names, when that process runs."""
    try:
        pid = int(home.pid_path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if alive(pid) else None


def gone(pid: int, bound_s: float = 60) -> bool:
    deadline = time.monotonic() + bound_s  # a bound, not a timing claim
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.skipif(not MANAGED, reason="starts a real Neo4j: set MNEMOQL_TEST_NEO4J_MANAGED=1")
def test_the_orphan_of_a_killed_serve_is_adopted_and_stopped(tmp_path: Path) -> None:
    data = tmp_path / "data"
    home = ManagedNeo4j(data / "neo4j")
    if not home.installed():
        pytest.skip(f"the Neo4j jars are not in {home.lib_dir}")
    try:
        with serve(data) as (first, base):
            wait_ready(first, base)
            jvm = server_pid(home)
            assert jvm is not None and alive(jvm)
            first.send_signal(signal.SIGKILL)
            first.wait()
        assert alive(jvm)  # the orphan: nobody could stop it
        with serve(data) as (second, base):
            wait_ready(second, base)
            assert server_pid(home) == jvm  # adopted, not a second server
            second.send_signal(signal.SIGINT)
            second.wait(90)
            out = second.stdout.read() if second.stdout else ""
        assert gone(jvm), out  # stopped with the service that adopted it
        assert "adopting the managed Neo4j" in out, out
        assert server_pid(home) is None
    finally:
        home.stop()


@needs_java
def test_sigterm_during_the_first_install_stops_maven_at_once(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    marker = tmp_path / "mvn.pid"
    fake = bin_dir / "mvn"
    fake.write_text(f"#!/bin/sh\necho $$ > {marker}\nexec sleep 600\n")
    fake.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    with serve(tmp_path / "data", **env) as (proc, _):
        deadline = time.monotonic() + 120
        while not (marker.exists() and marker.read_text().strip()):
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() < deadline, "the install never started"
            time.sleep(0.1)
        mvn = int(marker.read_text())
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)  # a bound: the fake Maven alone would hold it 600 s
        except subprocess.TimeoutExpired:
            pytest.fail("serve ignored SIGTERM during the install")
        out = proc.stdout.read() if proc.stdout else ""
    assert gone(mvn, 10), out
    assert "installing Neo4j" in out and "Traceback" not in out, out
    leftovers = list((tmp_path / "cache").glob("mnemoql/neo4j-*/lib*"))
    assert leftovers == [], leftovers  # no half download that could look installed
