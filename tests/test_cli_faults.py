"""Operator mistakes and faults at the command line (issue 29 case 5, issue 28's CLI): one line
``mnemoql <command>: CODE: message`` and exit 2, never a traceback -- for ``serve`` also when
the failure comes after uvicorn has started, and with the same codes for ``export`` and
``restore``. Plus ``--version`` and ``import`` of an export file.

Read-only and full disks are real: small tmpfs mounts (``tests.disks``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemoql import __version__
from tests.disks import fill, small_disk
from tests.store.factory_neo4j import target, unreachable

ROOT = Path(__file__).resolve().parents[1]


def mnemoql(*args: str, data_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOQL_")}
    full.pop("DEEPSEEK_API_KEY", None)
    full.update(MNEMOQL_EMBEDDING__PROVIDER="hashing", MNEMOQL_DATA_DIR=str(data_dir), **env)
    if args[0] == "serve":
        args = (*args, "--port", str(free_port()))
    return subprocess.run([sys.executable, "-m", "mnemoql.web.cli", *args], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def refused(out: subprocess.CompletedProcess[str], command: str, code: str) -> str:
    """The one line of a refusal (exit 2, no traceback, no uvicorn ERROR lines)."""
    text = out.stdout + out.stderr
    assert out.returncode == 2, text
    assert "Traceback" not in text and "ERROR" not in text, text
    ours = [line for line in out.stderr.splitlines() if line.startswith(f"mnemoql {command}:")]
    assert len(ours) == 1 and ours[0] == out.stderr.strip().splitlines()[-1], text
    assert ours[0].startswith(f"mnemoql {command}: {code}"), ours[0]
    return ours[0]


def a_dump(tmp_path: Path) -> Path:
    """A small dump of `mnemoql export`."""
    src = tmp_path / "in.jsonl"
    src.write_text('{"content": "Alice moved to Berlin."}\n', encoding="utf-8")
    assert mnemoql("import", str(src), data_dir=tmp_path / "source").returncode == 0
    out = tmp_path / "dump.jsonl"
    done = mnemoql("export", str(out), data_dir=tmp_path / "source")
    assert done.returncode == 0, done.stderr
    return out


@contextlib.contextmanager
def write_locked(data_dir: Path) -> Iterator[None]:
    """The default space's database, created, with its write lock held by another process
    (a second SQLite connection inside BEGIN IMMEDIATE)."""
    src = data_dir.parent / "one.jsonl"
    src.write_text('{"content": "Alice moved to Berlin."}\n', encoding="utf-8")
    assert mnemoql("import", str(src), data_dir=data_dir).returncode == 0
    other = sqlite3.connect(data_dir / "memory.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_version() -> None:
    out = subprocess.run([sys.executable, "-m", "mnemoql.web.cli", "--version"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0 and out.stdout.strip() == f"mnemoql {__version__}"


def test_import_of_an_export_file_names_restore(tmp_path: Path) -> None:
    dump = a_dump(tmp_path)
    out = mnemoql("import", str(dump), data_dir=tmp_path / "t")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert f"mnemoql restore {dump}" in out.stderr and "pydantic" not in out.stderr
    assert not (tmp_path / "t" / "memory.db").exists()  # nothing was opened or written


def test_serve_on_a_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = str(s.getsockname()[1])
        out = subprocess.run(
            [sys.executable, "-m", "mnemoql.web.cli", "serve", "--port", port,
             "--data-dir", str(tmp_path / "d")],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
            env={**os.environ, "MNEMOQL_EMBEDDING__PROVIDER": "hashing"},
        )  # fmt: skip
    assert "address already in use" in refused(out, "serve", "cannot listen on")


def test_a_read_only_data_dir(tmp_path: Path) -> None:
    dump = a_dump(tmp_path)
    with small_disk(tmp_path / "ro", "1m", read_only=True) as ro:
        for command in (("serve",), ("export", str(tmp_path / "x.jsonl")),
                        ("restore", str(dump))):  # fmt: skip
            out = mnemoql(*command, data_dir=ro)
            line = refused(out, command[0], "STORE_UNAVAILABLE")
            assert "read-only" in line
            if command == ("serve",):  # refused before it listens: the reason is all it says
                assert out.stderr.strip().splitlines() == [line], out.stderr


def test_a_full_disk(tmp_path: Path) -> None:
    dump = a_dump(tmp_path)
    with small_disk(tmp_path / "disk", "2m") as disk:
        fill(disk)
        data = disk / "data"
        for command in (("serve",), ("restore", str(dump))):
            refused(mnemoql(*command, data_dir=data), command[0], "STORAGE_FULL")
        # an export to a full disk (from a memory elsewhere) leaves no partial file behind
        out = mnemoql("export", str(disk / "out.jsonl"), data_dir=tmp_path / "source")
        assert "out.jsonl" in refused(out, "export", "STORAGE_FULL")
        assert not (disk / "out.jsonl").exists() and not (disk / "out.jsonl.partial").exists()


def test_a_write_lock_held_by_another_process(tmp_path: Path) -> None:
    dump = a_dump(tmp_path)
    data = tmp_path / "data"
    with write_locked(data):
        for command in (("serve",), ("restore", str(dump), "--space", "default")):
            refused(mnemoql(*command, data_dir=data), command[0], "STORAGE_BUSY")


needs_neo4j = pytest.mark.skipif(unreachable() is not None, reason=f"neo4j: {unreachable()}")


@needs_neo4j
def test_external_neo4j_with_a_wrong_password(tmp_path: Path) -> None:
    t = target()
    assert t is not None
    env = {"MNEMOQL_STORE": "neo4j", "MNEMOQL_NEO4J__URI": t.uri,
           "MNEMOQL_NEO4J__USER": t.user, "MNEMOQL_NEO4J__PASSWORD": "not-the-password"}  # fmt: skip
    for command in (("serve",), ("export", str(tmp_path / "x.jsonl"))):
        line = refused(mnemoql(*command, data_dir=tmp_path, **env), command[0], "STORE_UNAVAILABLE")
        assert "credentials" in line and "not-the-password" not in line


def test_external_neo4j_that_cannot_be_reached(tmp_path: Path) -> None:
    env = {"MNEMOQL_STORE": "neo4j", "MNEMOQL_NEO4J__URI": f"bolt://127.0.0.1:{free_port()}",
           "MNEMOQL_NEO4J__PASSWORD": "x"}  # fmt: skip
    for command in (("serve",), ("restore", str(a_dump(tmp_path)))):
        line = refused(mnemoql(*command, data_dir=tmp_path, **env), command[0], "STORE_UNAVAILABLE")
        assert "unavailable" in line


@needs_neo4j
def test_memory_index_names_the_external_neo4j_store(tmp_path: Path) -> None:
    import asyncio

    from mnemoql.engine.config import load_settings
    from mnemoql.engine.memory import Memory
    from mnemoql.engine.providers.factory import build_providers
    from mnemoql.web.neo4j_boot import neo4j_store

    t = target()
    assert t is not None
    settings = load_settings({}, data_dir=tmp_path, store="neo4j", embedding={"provider": "hashing"},
                             neo4j={"uri": t.uri, "user": t.user, "password": t.password})  # fmt: skip

    async def name() -> str:
        import httpx

        store = neo4j_store(settings, space="index_name_check")
        await store.open()
        try:
            async with httpx.AsyncClient() as client:
                memory = Memory(settings, store, build_providers(settings, client))
                return (await memory.index()).store
        finally:
            await store.close()

    assert asyncio.run(name()) == "Neo4jStore"



@pytest.mark.parametrize(
    ("args", "prefix", "says"),
    [
        (("serve", "--port", "abc"), "mnemoql serve:", "invalid int value: 'abc'"),
        (("bogus",), "mnemoql:", "invalid choice: 'bogus'"),
        (("export",), "mnemoql export:", "the following arguments are required: file"),
        (("restore", "a.jsonl", "--store", "sqlite"), "mnemoql restore:", "invalid choice"),
    ],
)
def test_a_mistyped_command_is_one_line(
    tmp_path: Path, args: tuple[str, ...], prefix: str, says: str
) -> None:
    """argparse's own refusals too: one line naming the command's --help, exit 2, no usage
    block and nothing opened."""
    out = subprocess.run([sys.executable, "-m", "mnemoql.web.cli", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "MNEMOQL_DATA_DIR": str(tmp_path / "d")})  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "usage:" not in out.stderr, out.stderr
    assert out.stderr.startswith(prefix) and says in out.stderr, out.stderr
    assert out.stderr.rstrip().endswith(f"(see {prefix[:-1]} --help)"), out.stderr
    assert not (tmp_path / "d").exists()
