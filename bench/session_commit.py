"""A call's commit on a session whose ledger is at its caps, on the embedded store's state file.

    python -m bench.session_commit --other /work/main --runs 3 --rounds 400 [--neo4j]

One session holds 640 delivered ids and 640 excerpts (~140 KB of ledger); each round is one
call that delivers 8 new ids with their excerpts (``SessionStore.acquire`` + ``commit``), timed
whole (p50) and its ``SharedState.commit`` alone (p50, mean: the time the state file's write
lock is held is inside it). With ``--other DIR`` the same script runs alternately in this tree
and with ``PYTHONPATH=DIR`` (another checkout: main), ``--runs`` times each, in child processes.
``--neo4j``: the Neo4j state of a space of its own on the server in ``MNEMOQL_TEST_NEO4J_*``
(``tests/store/factory_neo4j.py``), dropped after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from mnemoql.engine.retrieval.evidence import Excerpt
from mnemoql.engine.session_state import DEFAULT_BUDGET, Commit, SharedState
from mnemoql.engine.sessions import MAX_IDS, SessionStore
from mnemoql.engine.store.embedded._sessions import SqliteState

PER_CALL = 8


def _call(n: int) -> tuple[list[str], list[Excerpt]]:
    ids = [f"event_{n:06d}_{i}_{'0' * 24}" for i in range(PER_CALL)]
    text = "the quarterly review moved to thursday because the venue was double booked; "
    return ids, [Excerpt(f"{text}{n}/{i} {text}", e, 0, 150) for i, e in enumerate(ids)]


async def run(rounds: int, neo4j: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        if neo4j:
            from tests.store.factory_neo4j import make

            store = make(Path(tmp), f"bench{uuid.uuid4().hex[:12]}")
            await store.open()
            try:
                return await timed_calls(store.session_state(DEFAULT_BUDGET), rounds)
            finally:
                await store.drop_space()
                await store.close()
        state = SqliteState(Path(tmp) / "bench.sqlite3-sessions", DEFAULT_BUDGET)
        try:
            return await timed_calls(state, rounds)
        finally:
            await state.close()


async def timed_calls(state: SharedState, rounds: int) -> dict[str, float]:
    sessions = SessionStore(state=state)
    commits: list[float] = []
    real = state.commit

    async def timed(commit: Commit, now: float) -> None:
        t = time.perf_counter()
        await real(commit, now)
        commits.append((time.perf_counter() - t) * 1000)

    state.commit = timed  # type: ignore[method-assign]
    calls = 0

    async def one() -> None:
        nonlocal calls
        calls += 1
        async with sessions.acquire("s1"):
            sessions.commit("s1", *_call(calls))

    for _ in range(MAX_IDS // PER_CALL + 1):  # fill the ledger to its caps
        await one()
    row = await state.get("s", "s1", time.time())
    size = len(row.body) if row and row.body else 0
    commits.clear()
    wall: list[float] = []
    for _ in range(rounds):
        t = time.perf_counter()
        await one()
        wall.append((time.perf_counter() - t) * 1000)
    return {
        "ledger_bytes": size,
        "call_p50": statistics.median(wall),
        "commit_p50": statistics.median(commits),
        "commit_mean": statistics.mean(commits),
    }


def compare(other: str, runs: int, rounds: int, neo4j: bool) -> None:
    here = str(Path(__file__).resolve().parents[1])
    trees = {"this tree": here, other: other}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(runs):
        for name, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": tree}
            out = subprocess.run(
                [sys.executable, __file__, "--rounds", str(rounds), "--raw"]
                + (["--neo4j"] if neo4j else []),
                env=env, check=True, capture_output=True, text=True, cwd=tree,
            )  # fmt: skip
            results[name].append(json.loads(out.stdout))
    print(f"load average {os.getloadavg()[0]:.2f}; {runs} runs x {rounds} calls each")
    for name, found in results.items():
        cells = "  ".join(
            f"call p50 {r['call_p50']:.2f} / commit p50 {r['commit_p50']:.2f} "
            f"mean {r['commit_mean']:.2f} ms" for r in found
        )  # fmt: skip
        print(f"{name:18s} ledger {int(found[0]['ledger_bytes'])} B  {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--other", help="another checkout to run alternately (main)")
    parser.add_argument("--neo4j", action="store_true", help="the Neo4j state, not SQLite")
    parser.add_argument("--raw", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.other:
        compare(args.other, args.runs, args.rounds, args.neo4j)
        return
    found = asyncio.run(run(args.rounds, args.neo4j))
    print(json.dumps(found) if args.raw else "  ".join(f"{k} {v:.2f}" for k, v in found.items()))


if __name__ == "__main__":
    main()
