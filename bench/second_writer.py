"""Save latency with a second writing process on the same embedded memory (issue 30 item 3).

    python -m bench.second_writer                      # 100k events, 60 rounds
    python -m bench.second_writer --rounds 20 --reload-rounds 5

The memory is the 100k-event corpus of ``bench.search_latency`` (built there if missing, with its
ANN indexes) with every event bound to one of 200 topics, copied to a scratch directory for each
run. Two real processes open it, each a ``Memory`` with the offline extractor and a stub
embedder (random unit vectors: the query embedding is not what is measured):

* **A** saves (content of ~200 characters on one of the 200 topics) and times each
  ``Memory.save``, and separately the part spent catching up with the other writer
  (``Memory._catch_up``: the vector mirrors, the ANN indexes and the topic index);
* **B** saves the same way.

``--store neo4j`` runs the same rounds on a Neo4j space (``--neo4j-uri`` / ``--neo4j-user`` /
``--neo4j-password``, by default ``MNEMOQL_TEST_NEO4J_*``): the corpus (with its topics) is
exported from the embedded copy and imported into a fresh space, dropped at the end.

Per round, driven by this process: B saves, then A saves (*after another writer's commit*),
then A saves again (*alone*: nothing committed by anyone else since its last save). Both
samples come from the same process in the same minute, so machine noise hits both alike. Then
*concurrently*: B saves in a loop while A saves back to back for ``--seconds`` (at least
``--rounds`` saves): every save waits for the other's write lock and shares the CPU. Last,
*before* (the path this issue replaced): a fresh A whose topic index reloads in full after
each of B's commits (``Recall`` without the store's change feed), for ``--reload-rounds``
rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench._common import (
    RESULTS,
    cache_dir,
    command_line,
    git_rev,
    load_average,
    local_settings,
    machine_line,
    publish,
    table,
)
from bench.search_latency import (
    DIMS,
    WORDS,
    StubEmbedder,
    TextLikeVectors,
    build,
    corpus_path,
)
from mnemoql.engine.ingest import SaveInput
from mnemoql.engine.memory import Memory
from mnemoql.engine.model_settings import LOCAL_EMBEDDING_MODEL
from mnemoql.engine.providers.base import EmbedKind
from mnemoql.engine.providers.factory import Providers, build_providers
from mnemoql.engine.store.base import Store
from mnemoql.engine.store.embedded import AnnSettings, EmbeddedStore
from mnemoql.engine.store.neo4j.store import Neo4jStore

ROOTS, CHILDREN = 20, 10  # 200 topics
ROOT = Path(__file__).resolve().parents[1]


def topic_of(k: int) -> str:
    return f"area{k // CHILDREN % ROOTS}->subject{k % CHILDREN}"


class RandomEmbedder(StubEmbedder):
    """Unit vectors drawn from a seed of each text (any text, unlike the latency stub)."""

    def __init__(self) -> None:
        super().__init__(LOCAL_EMBEDDING_MODEL, DIMS)

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Any:
        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
            out.append(v / np.linalg.norm(v))
        return np.stack(out)


# ---------------------------------------------------------------- the corpus


def corpus(size: int, seed: int) -> Path:
    """The latency corpus with every event bound to a topic (built once, then reused)."""
    path = cache_dir() / f"second-writer-{size}"
    if (path / "complete").is_file():
        return path
    source = corpus_path("text-like", seed, size)
    asyncio.run(build(source, size, TextLikeVectors(), seed, threads=1))
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(source, path)
    # opened once by the store first: the layout (topic stamps, the change clock) is current
    asyncio.run(_open_close(path / "memory.db"))
    conn = sqlite3.connect(path / "memory.db", isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        for k in range(ROOTS * CHILDREN):
            root, child = topic_of(k).split("->")
            conn.execute(
                "INSERT OR IGNORE INTO topics (path, name, parent, seq) VALUES "
                "(?, ?, NULL, (SELECT COALESCE(MAX(seq), 0) + 1 FROM topics))",
                (root, root),
            )
            conn.execute(
                "INSERT OR IGNORE INTO topics (path, name, parent, seq) VALUES "
                "(?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM topics))",
                (topic_of(k), child, root),
            )
        ids = [r[0] for r in conn.execute("SELECT id FROM nodes WHERE label = 'Event'")]
        conn.executemany(
            "INSERT INTO topic_bindings (path, event_id, timestamp, activation, diffusion, "
            "context_independence, related) VALUES (?, ?, ?, 1.0, 1.0, 1.0, '[]')",
            [(topic_of(i * 7919), e, 1767196800000 + i) for i, e in enumerate(ids)],
        )
        conn.execute("COMMIT")
    finally:
        conn.close()
    (path / "complete").write_text(json.dumps({"events": len(ids), "topics": ROOTS * CHILDREN}))
    return path


async def _open_close(db: Path) -> None:
    store = EmbeddedStore(db, ann=AnnSettings(prefetch=False))
    await store.open()
    await store.close()


# ---------------------------------------------------------------- one writer process


def neo4j_store(space: str) -> Neo4jStore:
    """The store of ``space`` on the server named by the environment (``MNEMOQL_TEST_NEO4J_*``,
    set from the flags by ``run``)."""
    return Neo4jStore(
        os.environ["MNEMOQL_TEST_NEO4J_URI"],
        os.environ.get("MNEMOQL_TEST_NEO4J_USER", "neo4j"),
        os.environ["MNEMOQL_TEST_NEO4J_PASSWORD"],
        space=space,
    )


async def neo4j_copy(source: Path, space: str) -> int:
    """The embedded corpus (topics included) imported into a fresh Neo4j space."""
    embedded = EmbeddedStore(source / "memory.db", ann=AnnSettings(mode="exact", prefetch=False))
    await embedded.open()
    try:
        records = [r async for r in embedded.export_records(vectors=True)]
    finally:
        await embedded.close()
    store = neo4j_store(space)
    await store.open()
    try:
        await store.import_records(records)
    finally:
        await store.close()
    return len(records)


async def drop_space(space: str) -> None:
    store = neo4j_store(space)
    await store.open()
    try:
        await store.drop_space()
    finally:
        await store.close()


async def writer(target: str, reload: bool, stop: str | None, name: str, backend: str) -> None:
    """A writing process: saves when told to (one JSON line back per save), or in a loop until
    the ``stop`` file exists. ``target``: the database file, or the Neo4j space."""
    settings = local_settings(Path(target).parent if backend == "embedded" else Path("/tmp"))
    async with httpx.AsyncClient() as client:
        providers = build_providers(settings, client)
        store: Store = EmbeddedStore(Path(target)) if backend == "embedded" else neo4j_store(target)
        await store.open()
        memory = Memory(settings, store, Providers(RandomEmbedder(), providers.extractor, None))
        if reload:  # the path before issue 30: no change feed, a full reload after each commit
            memory.recall._feed = None
        spent = {"catch_up": 0.0}
        inner = memory._catch_up

        async def timed_catch_up() -> None:
            t0 = time.perf_counter()
            await inner()
            spent["catch_up"] += time.perf_counter() - t0

        memory._catch_up = timed_catch_up  # type: ignore[method-assign]
        rng = np.random.default_rng(int.from_bytes(name.encode(), "little"))
        t0 = time.perf_counter()
        await memory.topics()  # the topic index loaded, as a service that has answered a save
        print(json.dumps({"ready": time.perf_counter() - t0}), flush=True)
        count = 0

        async def save() -> dict[str, float]:
            nonlocal count
            count += 1
            words = " ".join(rng.choice(WORDS, 30).tolist())
            item = SaveInput(
                content=f"{name} note {count}: {words}.",
                topic_path=topic_of(int(rng.integers(0, 10**6))),
            )
            spent["catch_up"] = 0.0
            t0 = time.perf_counter()
            await memory.save(item)
            return {"s": time.perf_counter() - t0, "catch_up": spent["catch_up"],
                    "loads": memory.recall.full_loads}  # fmt: skip

        loop = asyncio.get_running_loop()
        try:
            if stop is not None:
                while not Path(stop).exists():
                    await save()
                print(json.dumps({"saves": count}), flush=True)
                return
            while (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "save":
                print(json.dumps(await save()), flush=True)
        finally:
            await store.close()


class Child:
    """A writer process driven over its stdin / stdout."""

    def __init__(self, db: Path | str, name: str, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.second_writer", "--child", str(db), "--name", name,
             *extra, *BACKEND],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.ready = float(self._line()["ready"])

    def _line(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"writer exited with {self.proc.wait()}")
        data: dict[str, Any] = json.loads(line)
        return data

    def save(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("save\n")
        self.proc.stdin.flush()
        return self._line()

    def result(self) -> dict[str, Any]:
        return self._line()

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        self.proc.wait(timeout=120)


# ---------------------------------------------------------------- the run


def ms(xs: Sequence[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000.0, p)) if xs else float("nan")


def row(label: str, samples: list[dict[str, Any]], load: str) -> list[str]:
    s = [x["s"] for x in samples]
    c = [x["catch_up"] for x in samples]
    return [label, str(len(s)), f"{ms(s, 50):.1f}", f"{ms(s, 95):.1f}",
            f"{ms(c, 50):.1f}", load]  # fmt: skip


BACKEND: list[str] = []  # the children's --store flag


def run(args: argparse.Namespace) -> str:
    started, load_at_start = time.perf_counter(), load_average()
    source = corpus(args.size, args.seed)
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    db: Path | str
    if args.store == "neo4j":
        os.environ["MNEMOQL_TEST_NEO4J_URI"] = args.neo4j_uri
        os.environ["MNEMOQL_TEST_NEO4J_USER"] = args.neo4j_user
        os.environ["MNEMOQL_TEST_NEO4J_PASSWORD"] = args.neo4j_password
        BACKEND[:] = ["--store", "neo4j"]
        db = f"sw{uuid.uuid4().hex[:10]}"
        t0 = time.perf_counter()
        records = asyncio.run(neo4j_copy(source, db))
        took = time.perf_counter() - t0
        copied = f"- imported {records:,} records into Neo4j space `{db}` in {took:.0f} s"
    else:
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(source, work)
        db = work / "memory.db"
        copied = ""
    rows: list[list[str]] = []
    a, b = Child(db, "a"), Child(db, "b")
    notes = [f"- A opened and loaded its topic index in {a.ready:.1f} s, B in {b.ready:.1f} s"]
    if copied:
        notes.append(copied)
    try:
        for _ in range(args.warm):
            b.save(), a.save(), a.save()
        alone, after = [], []
        for i in range(args.rounds):
            b.save()
            after.append(a.save())
            alone.append(a.save())
            if i % 10 == 9:
                medians = [ms([x["s"] for x in xs], 50) for xs in (alone, after)]
                print(f"  round {i + 1}: alone / after B {medians}", file=sys.stderr, flush=True)
        load = load_average()
        rows.append(row("alone (nothing else committed since A's last save)", alone, load))
        rows.append(row("after one save by process B (rounds: B, A, A)", after, load))
        assert all(x["loads"] == after[0]["loads"] for x in after), "A reloaded its topic index"
        b.close()
        stop = work / "stop"
        loop_b = subprocess.Popen(
            [sys.executable, "-m", "bench.second_writer", "--child", str(db), "--name", "b2",
             "--stop", str(stop), *BACKEND],
            cwd=ROOT, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert loop_b.stdout is not None
        json.loads(loop_b.stdout.readline())  # ready
        t0 = time.perf_counter()
        together = []
        while len(together) < args.rounds or time.perf_counter() - t0 < args.seconds:
            together.append(a.save())
        took = time.perf_counter() - t0
        stop.write_text("")
        saves_b = json.loads(loop_b.stdout.readline())["saves"]
        loop_b.wait(timeout=120)
        rows.append(row("while process B saves in a loop, back to back", together,
                        load_average()))  # fmt: skip
        notes.append(
            f"- concurrently: A saved {len(together)} times in {took:.1f} s while B saved "
            f"{saves_b} times (B's saves include its own catch-ups with A)"
        )
        a.close()
        if args.reload_rounds:
            b = Child(db, "b3")
            old = Child(db, "a-reload", "--reload")
            old_after, old_alone = [], []
            for _ in range(args.reload_rounds):
                b.save()
                old_after.append(old.save())
                old_alone.append(old.save())
            load = load_average()
            rows.append(row("before (full topic reload): alone", old_alone, load))
            rows.append(row("before (full topic reload): after one save by B", old_after, load))
            old.close()
            b.close()
    finally:
        for child in (a, b):
            if child.proc.poll() is None:
                child.proc.kill()
        shutil.rmtree(work, ignore_errors=True)
        if args.store == "neo4j":
            asyncio.run(drop_space(str(db)))
    head = (
        f"# Save latency with a second writing process ({args.store} store)\n\n"
        f"Command: `{command_line()}`\n\n"
        f"Commit {git_rev()}; {machine_line(load_at_start)}; {args.size:,} events bound to "
        f"{ROOTS * CHILDREN} topics (the `bench.search_latency` text-like corpus, "
        f"{'ANN indexes on' if args.store == 'embedded' else 'imported into Neo4j'}); "
        f"{args.rounds} rounds after {args.warm} warm-up ones; offline extractor, stub "
        f"embedder (no embedding time); medians and p95 of `Memory.save` in process A; wall "
        f"time {time.perf_counter() - started:.0f} s. The machine's 2 cores are shared with "
        "other work (the load average column): figures are noisy, read the medians.\n"
    )
    body = table(
        ["A's save", "saves", "p50 ms", "p95 ms", "of which catching up, p50 ms",
         "load average"],
        rows,
    )  # fmt: skip
    return head + "\n" + body + "\n\n" + "\n".join(notes) + "\n"


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--rounds", type=int, default=60)
    p.add_argument("--warm", type=int, default=3)
    p.add_argument("--reload-rounds", type=int, default=5)
    p.add_argument(
        "--seconds", type=float, default=20.0, help="A's saves beside B's loop last this long"
    )
    p.add_argument("--work", default="/tmp/mnemoql-second-writer")
    p.add_argument("--out", default=str(RESULTS / "second_writer.md"))
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--child", default="", help=argparse.SUPPRESS)
    p.add_argument("--name", default="a", help=argparse.SUPPRESS)
    p.add_argument("--reload", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--stop", default=None, help=argparse.SUPPRESS)
    p.add_argument("--store", choices=["embedded", "neo4j"], default="embedded")
    p.add_argument("--neo4j-uri", default=os.environ.get("MNEMOQL_TEST_NEO4J_URI", ""))
    p.add_argument("--neo4j-user", default=os.environ.get("MNEMOQL_TEST_NEO4J_USER", "neo4j"))
    p.add_argument("--neo4j-password", default=os.environ.get("MNEMOQL_TEST_NEO4J_PASSWORD", ""))
    return p.parse_args(argv)


def cli(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    if args.child:
        asyncio.run(writer(args.child, args.reload, args.stop, args.name, args.store))
        return
    publish(run(args), args.out, write=not args.no_write)


if __name__ == "__main__":
    cli()
