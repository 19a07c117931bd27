"""``mnemoql export`` / ``mnemoql restore`` end to end, as subprocesses: a memory saved by
``mnemoql import`` moves to another data directory (and, with a Neo4j configured, into Neo4j
and back) with nothing lost; bad dumps and non-empty targets are refused before any write."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from mnemoql.engine.config import load_settings
from mnemoql.engine.memory import Memory
from mnemoql.engine.retrieval.pipeline import SearchRequest
from mnemoql.engine.store.embedded import EmbeddedStore
from tests.store import factory_neo4j

ROOT = Path(__file__).resolve().parents[1]
LINES = [
    {"content": "Alice met Bob in Berlin to discuss the graph memory.", "idempotency_key": "k1",
     "topic_path": "work->mnemoql"},
    {"content": "第三章：周三张伟在上海讨论检索。" * 80, "id": "book_ch3_e02"},
    {"content": "Carol moved to Paris and started cycling.", "topic_path": "life->sport"},
]  # fmt: skip


def mnemoql(*args: str, data_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {
        **os.environ,
        "MNEMOQL_EMBEDDING__PROVIDER": "hashing",
        "MNEMOQL_DATA_DIR": str(data_dir),
        **env,
    }
    full.pop("DEEPSEEK_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "mnemoql.web.cli", *args],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=180,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stderr


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with a memory saved through the real pipeline."""
    tmp = tmp_path_factory.mktemp("source")
    inp = tmp / "in.jsonl"
    inp.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in LINES), encoding="utf-8")
    ok(mnemoql("import", str(inp), data_dir=tmp / "data"))
    return tmp / "data"


def export(data: Path, out: Path, *extra: str, **env: str) -> list[str]:
    ok(mnemoql("export", str(out), *extra, data_dir=data, **env))
    return out.read_text(encoding="utf-8").splitlines()


def without_meta_time(lines: list[str]) -> list[str]:
    return [json.dumps({**json.loads(x), "updated_at": None}) if '"kind":"meta"' in x else x
            for x in lines]  # fmt: skip


def test_export_and_restore_with_vectors_keep_everything(source: Path, tmp_path: Path) -> None:
    original = export(source, tmp_path / "a.jsonl", "--vectors")
    kinds = [json.loads(x)["kind"] for x in original]
    assert kinds[0] == "header" and kinds[-1] == "end"
    assert {"meta", "node", "chunk", "relation", "topic", "binding", "save_record"} <= set(kinds)
    err = ok(mnemoql("restore", str(tmp_path / "a.jsonl"), data_dir=tmp_path / "b"))
    assert "restored into space 'default' (embedded)" in err and "re-embedded" not in err
    assert export(tmp_path / "b", tmp_path / "b.jsonl", "--vectors") == original
    assert not (tmp_path / "b.jsonl.partial").exists()


def test_a_dump_without_vectors_is_re_embedded_on_restore(source: Path, tmp_path: Path) -> None:
    lean = export(source, tmp_path / "lean.jsonl")
    assert not any('"embedding"' in x for x in lean)
    err = ok(mnemoql("restore", str(tmp_path / "lean.jsonl"), data_dir=tmp_path / "b"))
    assert "re-embedded with hashing-bigram-v1/384: 3 events" in err
    # the hashing embedder is deterministic: the recomputed vectors are the original ones
    full = export(source, tmp_path / "full.jsonl", "--vectors")
    again = export(tmp_path / "b", tmp_path / "again.jsonl", "--vectors")
    assert without_meta_time(again) == without_meta_time(full)
    found = asyncio.run(search(tmp_path / "b", "Carol Paris cycling"))
    assert found and found == asyncio.run(search(source, "Carol Paris cycling"))


async def search(data: Path, query: str) -> list[str]:
    settings = load_settings({}, data_dir=data, embedding={"provider": "hashing"})
    store = EmbeddedStore(data / "memory.db")
    await store.open()
    try:
        import httpx

        from mnemoql.engine.providers.factory import build_providers

        async with httpx.AsyncClient() as client:
            memory = Memory(settings, store, build_providers(settings, client))
            out = await memory.search(SearchRequest(query=query), "cli-test")
            return [item.event_id for item in out.page.items]
    finally:
        await store.close()


def test_restore_refuses_bad_dumps_and_non_empty_spaces(source: Path, tmp_path: Path) -> None:
    lines = export(source, tmp_path / "a.jsonl")
    truncated = tmp_path / "cut.jsonl"
    truncated.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    out = mnemoql("restore", str(truncated), data_dir=tmp_path / "t")
    assert out.returncode == 2 and "truncated" in out.stderr
    assert export(tmp_path / "t", tmp_path / "t.jsonl")[1:] == ['{"counts":{},"kind":"end"}']
    not_a_dump = mnemoql("restore", str(ROOT / "pyproject.toml"), data_dir=tmp_path / "t")
    assert not_a_dump.returncode == 2 and "not JSON" in not_a_dump.stderr
    again = mnemoql("restore", str(tmp_path / "a.jsonl"), data_dir=source)
    assert again.returncode == 2 and "CONFLICT" in again.stderr and "not empty" in again.stderr
    assert again.stderr.count("\n") == 1  # one line
    other = mnemoql("restore", str(tmp_path / "a.jsonl"), "--space", "copy", data_dir=source)
    assert "restored into space 'copy'" in ok(other)


def test_restore_refuses_altered_text_naming_the_line(source: Path, tmp_path: Path) -> None:
    lines = export(source, tmp_path / "a.jsonl")
    n = next(i for i, x in enumerate(lines) if "Alice met Bob" in x and '"kind":"node"' in x)
    altered = tmp_path / "altered.jsonl"  # one flipped byte: B (0x42) -> R (0x52)
    lines[n] = lines[n].replace("Alice met Bob", "Alice met Rob")
    altered.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = mnemoql("restore", str(altered), data_dir=tmp_path / "t")
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert "DUMP_DAMAGED" in out.stderr and f"line {n + 1}:" in out.stderr
    assert "content_hash" in out.stderr
    assert export(tmp_path / "t", tmp_path / "t.jsonl")[1:] == ['{"counts":{},"kind":"end"}']
    chunk = next(i for i, x in enumerate(lines) if '"kind":"chunk"' in x)
    lines[n] = lines[n].replace("Alice met Rob", "Alice met Bob")
    lines[chunk] = lines[chunk].replace("三", "四", 1)  # a chunk's text, not its event's
    altered.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = mnemoql("restore", str(altered), data_dir=tmp_path / "t")
    assert out.returncode == 2 and f"line {chunk + 1}:" in out.stderr, out.stderr


def test_a_rerun_of_an_unfinished_restore_names_revectorize(source: Path, tmp_path: Path) -> None:
    """A restore killed in its vector phase leaves the records committed and MemoryMeta stale
    (the re-embedding replaces all vectors in one transaction, so it is all or nothing) -- the
    state ``--no-revectorize`` leaves too. A second restore says how to finish it."""
    export(source, tmp_path / "lean.jsonl")
    err = ok(mnemoql("restore", str(tmp_path / "lean.jsonl"), "--no-revectorize",
                     data_dir=tmp_path / "b"))  # fmt: skip
    assert "run `mnemoql revectorize`" in err
    again = mnemoql("restore", str(tmp_path / "lean.jsonl"), data_dir=tmp_path / "b")
    assert again.returncode == 2 and again.stderr.count("\n") == 1, again.stderr
    assert "CONFLICT" in again.stderr and "`mnemoql revectorize`" in again.stderr
    ok(mnemoql("revectorize", data_dir=tmp_path / "b"))
    after = mnemoql("restore", str(tmp_path / "lean.jsonl"), data_dir=tmp_path / "b")
    assert after.returncode == 2 and "revectorize" not in after.stderr  # finished: plain CONFLICT


def test_stdin_and_stdout_pipe_a_memory(source: Path, tmp_path: Path) -> None:
    dumped = mnemoql("export", "-", "--vectors", data_dir=source)
    assert dumped.returncode == 0, dumped.stderr
    env = {**os.environ, "MNEMOQL_EMBEDDING__PROVIDER": "hashing",
           "MNEMOQL_DATA_DIR": str(tmp_path / "piped")}  # fmt: skip
    restored = subprocess.run(
        [sys.executable, "-m", "mnemoql.web.cli", "restore", "-"],
        cwd=ROOT, env=env, input=dumped.stdout, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert restored.returncode == 0, restored.stderr
    assert export(tmp_path / "piped", tmp_path / "p.jsonl", "--vectors") == (
        dumped.stdout.splitlines()
    )


def test_embedded_to_neo4j_and_back(source: Path, tmp_path: Path) -> None:
    target = factory_neo4j.target()
    reason = factory_neo4j.unreachable()
    if target is None or reason is not None:
        pytest.skip(f"Neo4j store unavailable: {reason}")
    neo4j = {
        "MNEMOQL_STORE": "neo4j",
        "MNEMOQL_NEO4J__MODE": "external",
        "MNEMOQL_NEO4J__URI": target.uri,
        "MNEMOQL_NEO4J__USER": target.user,
        "MNEMOQL_NEO4J__PASSWORD": target.password,
        **({"MNEMOQL_NEO4J__DATABASE": target.database} if target.database else {}),
    }
    space = f"cli{uuid.uuid4().hex[:10]}"
    try:
        original = export(source, tmp_path / "a.jsonl", "--vectors")
        err = ok(mnemoql("restore", str(tmp_path / "a.jsonl"), "--space", space,
                         data_dir=tmp_path / "n", **neo4j))  # fmt: skip
        assert f"restored into space '{space}' (neo4j)" in err
        from_neo4j = export(tmp_path / "n", tmp_path / "n.jsonl", "--vectors", "--space", space,
                            **neo4j)  # fmt: skip
        assert from_neo4j == original
        ok(mnemoql("restore", str(tmp_path / "n.jsonl"), data_dir=tmp_path / "back"))
        assert export(tmp_path / "back", tmp_path / "back.jsonl", "--vectors") == original
        # and without vectors: Neo4j re-embeds on restore, like the embedded store
        lean = tmp_path / "lean.jsonl"
        export(source, lean)
        err = ok(mnemoql("restore", str(lean), "--space", space + "x", data_dir=tmp_path / "n",
                         **neo4j))  # fmt: skip
        assert "re-embedded with hashing-bigram-v1/384" in err
        again = export(tmp_path / "n", tmp_path / "x.jsonl", "--vectors", "--space", space + "x",
                       **neo4j)  # fmt: skip
        assert without_meta_time(again) == without_meta_time(original)
    finally:
        for s in (space, space + "x"):
            asyncio.run(factory_neo4j.drop(tmp_path, s))
