"""Neo4j session read: one session with 64 kept pages of ~3 KB, read the way a search reads it.

    python -m bench.neo4j_session_read --rounds 300

Needs a Neo4j server in ``MNEMOQL_TEST_NEO4J_*`` (``tests/store/factory_neo4j.py``); a space of
its own is written and dropped. Cases, interleaved round by round, each with its wall time
(p50) and this process's CPU time (mean):

* before: the ledger row, then every page row with its body (``read_session``: ``get`` and
  ``owned``, the adapter's read before issue 30's page listing), 64 records;
* the read as it is (``Neo4jState.session``), with every body held by the process (its own
  pages, a single process), with one body not held (another replica kept it), with none held
  (a process that never read the session).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from mnemoql.engine.session_state import DEFAULT_BUDGET, Commit, PageCache, read_session
from tests.store.factory_neo4j import make

PAGES = 64


async def run(rounds: int) -> None:
    store = make(Path("."), f"bench{uuid.uuid4().hex[:12]}")
    await store.open()
    state = store.session_state(DEFAULT_BUDGET)
    page = json.dumps({"items": [{"id": f"event_{i}", "text": "x" * 300} for i in range(9)]})
    pages = [(f's1\x1f["search", "q{i}"]', page.encode()) for i in range(PAGES)]
    await state.commit(
        Commit("s1", 3600.0, update=lambda _: b'{"ids": []}', pages=pages), time.time()
    )
    held = state.page_cache

    def holding(skip: int) -> PageCache:
        cache = PageCache()
        for stamp in held.owned("s1")[skip:]:
            cache.put(stamp, held.get(stamp) or b"", "s1")
        return cache

    async def after(skip: int) -> object:
        state.page_cache = holding(skip)
        return await state.session("s1", time.time())

    cases: dict[str, Callable[[], Awaitable[object]]] = {
        f"before: ledger, then {PAGES} page records": lambda: read_session(
            state, "s1", time.time()
        ),
        "now, every body held": lambda: after(0),
        "now, one body not held": lambda: after(1),
        "now, no body held": lambda: after(PAGES),
    }
    try:
        expected = await read_session(state, "s1", time.time())
        assert len(expected[1]) == PAGES
        for case in cases.values():
            assert await case() == expected
        wall: dict[str, list[float]] = {name: [] for name in cases}
        cpu: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(rounds):
            for name, case in cases.items():
                t, c = time.perf_counter(), time.process_time()
                await case()
                wall[name].append((time.perf_counter() - t) * 1000)
                cpu[name].append((time.process_time() - c) * 1000)
        print(f"{PAGES} pages of {len(page)} bytes, {rounds} rounds")
        for name in cases:
            print(
                f"{name:38s} p50 {statistics.median(wall[name]):6.2f} ms   "
                f"client CPU mean {statistics.mean(cpu[name]):5.2f} ms"
            )
    finally:
        await store.drop_space()
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    asyncio.run(run(parser.parse_args().rounds))


if __name__ == "__main__":
    main()
