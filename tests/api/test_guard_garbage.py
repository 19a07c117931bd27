"""What a request leaves to the cyclic garbage collector (web/guards/heap.py; bench.hostile).

A full collection holds the event loop for as long as it walks the tracked objects, so a
refused request must not leave its body in a reference cycle, and what start-up loaded is
frozen out of the collector's sight. These tests count objects, never time.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mnemoql.web import guards
from tests.api.conftest import Api, offline_settings, running

EVENTS_WHERE = "query($w: EventWhere) { events(first: 5, where: $w) { edges { node { id } } } }"
MARK = "garbage-probe-"


def _tree(conditions: int) -> dict[str, Any]:
    return {"OR": [{"summary": {"contains": f"{MARK}{i}"}} for i in range(conditions)]}


@contextmanager
def _garbage_kept() -> Iterator[list[Any]]:
    """The collector off; on exit, everything unreachable it finds is yielded's content."""
    gc.collect()
    gc.disable()
    found: list[Any] = []
    try:
        yield found
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        found.extend(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _probes(objects: list[Any]) -> int:
    return sum(
        1
        for o in objects
        if isinstance(o, dict)
        and isinstance(o.get("summary"), dict)
        and str(o["summary"].get("contains", "")).startswith(MARK)
    )


async def _warmed(api: Api) -> None:
    await api.app.state.warming  # the start-up heap is frozen by now


async def _post(api: Api, body: str) -> dict[str, Any]:
    r = await api.client.post(
        "/graphql", content=body, headers={"content-type": "application/json"}
    )
    result: dict[str, Any] = r.json()
    return result


async def test_a_refused_where_tree_dies_with_its_request(tmp_path: Path) -> None:
    async with running(offline_settings(tmp_path)) as api:
        await _warmed(api)
        body = json.dumps({"query": EVENTS_WHERE, "variables": {"w": _tree(5000)}})
        with _garbage_kept() as garbage:
            answer = await _post(api, body)
        assert answer["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED", answer
        # before: the error's traceback held the guard's frames (and so the tree), and the
        # error, kept in the result, closed a cycle: 5,000 dicts for the next full collection
        assert _probes(garbage) == 0


async def test_the_start_up_heap_is_frozen_until_shutdown(tmp_path: Path) -> None:
    async with running(offline_settings(tmp_path)) as api:
        await _warmed(api)
        frozen = gc.get_freeze_count()
        assert frozen > 0
        # a large body (parsed with the collector paused) does not thaw it
        padding = "x" * (guards.GC_FREE_PARSE_BYTES + 10)
        query = "query($p: String) { events(first: 1, where: {summary: {contains: $p}}) { totalCount } }"
        body = json.dumps({"query": query, "variables": {"p": padding}})
        assert "errors" not in await _post(api, body)
        assert gc.get_freeze_count() > frozen // 2  # (frozen objects still die by refcount)
    assert gc.get_freeze_count() == 0


async def test_a_saved_memory_s_topic_and_date_index_loads_at_start_up(tmp_path: Path) -> None:
    """The topic and date index is built by the start-up warm-up, before the heap freezes, not
    by the first save (at 1M events that save waited ~3 s and the loop stalled ~1 s)."""
    save = 'mutation($c: String!) { save(input: {content: $c}) { eventIds } }'
    async with running(offline_settings(tmp_path)) as api:
        for text in ("Alice: I moved to Berlin.", "Bob: I stayed in Paris."):
            r = await api.client.post("/graphql", json={"query": save, "variables": {"c": text}})
            assert r.json()["data"]["save"]["eventIds"], r.text
    async with running(offline_settings(tmp_path)) as api:
        await _warmed(api)
        recall = api.app.state.memory.recall
        assert recall._index is not None  # loaded without any save or recall
        assert recall._index.dates.size() == 2
