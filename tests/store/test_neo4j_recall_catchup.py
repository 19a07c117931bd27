"""On Neo4j, the topic and date index follows another process's writes by the rows that changed
(issue 30 item 3; ``engine/store/neo4j/_changes.py``): a real second process saves, rebinds and
forgets in the same space; this process's index catches up without reading everything again
and answers what a fresh open answers. Once the removal log is pruned past its mark (a small
horizon in the other process), it reloads in full instead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mnemoql import Memory
from tests.store.factory_neo4j import drop, target, unreachable
from tests.store.test_embedded_recall_catchup import answers

ROOT = Path(__file__).resolve().parents[2]
REASON = unreachable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"neo4j: {REASON}")

# the other process: saves on topics, rebinds one of this process's events, forgets one of
# this process's events and one of its own; or (``forget``) only forgets, with a small horizon
WRITER = """
import asyncio, json, sys
from mnemoql import Memory
from mnemoql.engine.store.neo4j import _changes

async def main(args):
    _changes.KEEP = args["keep"]
    async with Memory(args["dir"], space=args["space"], **args["settings"]) as m:
        if args["forget"]:
            for event_id in args["forget"]:
                await m.forget(event_id)
            print(json.dumps({}))
            return
        ids = []
        for text, topic in [
            ("Alice planted red tulips by the fence.", "garden->tulips"),
            ("Bob watered the tulips before the frost.", "garden->tulips"),
            ("The sprint review moved to Thursday.", "work->reviews"),
            ("Carol pruned the old roses.", "garden->roses"),
        ]:
            saved = await m.save(text, topic_path=topic, related_topics=["garden->soil"])
            ids += saved.event_ids
        await m.forget(ids[-1])
        await m.engine.bind_topic(args["theirs"][0], "garden->tulips", ["garden->bulbs"])
        await m.forget(args["theirs"][1])
        print(json.dumps({"ids": ids, "forgotten": [ids[3], args["theirs"][1]]}))

asyncio.run(main(json.loads(sys.argv[1])))
"""


def settings() -> dict[str, Any]:
    t = target()
    assert t is not None
    return {
        "store": "neo4j",
        "neo4j": {"uri": t.uri, "user": t.user, "password": t.password},
        "embedding": {"provider": "hashing"},
    }


def other_process(
    data_dir: Path, space: str, theirs: list[str], forget: list[str] | None = None, keep: int = 50
) -> dict[str, Any]:
    args = {"dir": str(data_dir), "space": space, "settings": settings(), "theirs": theirs,
            "forget": forget or [], "keep": keep}  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOQL_")}
    out = subprocess.run(
        [sys.executable, "-c", WRITER, json.dumps(args)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    data: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


@pytest.fixture
async def space(tmp_path: Path) -> AsyncIterator[str]:
    name = f"t{uuid.uuid4().hex[:12]}"
    yield name
    await drop(tmp_path, name)


async def test_another_process_on_neo4j_is_caught_up_without_a_reload(
    tmp_path: Path, space: str
) -> None:
    async with Memory(tmp_path, space=space, **settings()) as mine:
        engine = mine.engine
        first = await mine.save("Eve sowed tulip bulbs in pots.", topic_path="garden->tulips")
        second = await mine.save("Frank fixed the greenhouse door.", topic_path="garden")
        ours = [first.event_ids[0], second.event_ids[0]]
        await engine.topics()
        assert engine.recall.full_loads == 1

        theirs = other_process(tmp_path, space, ours)

        day = (await engine.store.get_events(ours[:1]))[0].create_date
        got = await answers(engine, day)
        assert engine.recall.full_loads == 1, "caught up by reloading everything"
        assert engine.recall.catch_ups >= 1
        tulips = [e for e, _, _ in got["recall"]["garden->tulips"]]
        assert theirs["ids"][0] in tulips and theirs["ids"][1] in tulips
        assert ours[0] in tulips  # saved here, rebound there: still bound
        forgotten = set(theirs["forgotten"])
        assert not forgotten & {e for node in got["nodes"].values() for e, *_ in node}
        assert not forgotten & set(got["day"])
        assert got["nodes"]["garden->roses"] == []  # its only binding was forgotten
        assert "garden->bulbs" in got["nodes"]

        await mine.save("Gina raked the leaves.", topic_path="garden->leaves")
        got = await answers(engine, day)

    async with Memory(tmp_path, space=space, **settings()) as fresh:
        want = await answers(fresh.engine, day)
        assert fresh.engine.recall.full_loads == 1
    assert got["tree"] == want["tree"]
    assert got["recall"] == want["recall"]
    assert got["day"] == want["day"]
    assert {p: sorted(b) for p, b in got["nodes"].items()} == {
        p: sorted(b) for p, b in want["nodes"].items()
    }


async def test_a_removal_log_pruned_past_the_mark_costs_one_full_reload(
    tmp_path: Path, space: str
) -> None:
    keep = 2  # the other process keeps 2 records (prunes at 3)
    async with Memory(tmp_path, space=space, **settings()) as mine:
        engine = mine.engine
        ids = []
        for k in range(8):
            saved = await mine.save(
                f"Note {k}: bulbs in bed {k}.", topic_path=f"garden->bed{k % 3}"
            )
            ids += saved.event_ids
        await engine.topics()
        day = (await engine.store.get_events(ids[:1]))[0].create_date

        other_process(tmp_path, space, [], forget=ids[:1], keep=keep)  # within the horizon
        got = await answers(engine, day)
        assert engine.recall.full_loads == 1 and ids[0] not in got["day"]

        other_process(tmp_path, space, [], forget=ids[1:6], keep=keep)  # pruned past it
        got = await answers(engine, day)
        assert engine.recall.full_loads == 2, "followed a pruned removal log by rows"
        assert not set(ids[:6]) & set(got["day"])
        removals = await engine.store._run(
            "MATCH (r:MnemoTopicRemoval) WHERE r.space = $space RETURN count(r) AS n",
            {"space": space},
        )
        assert removals[0]["n"] <= keep + keep // 4 + 1

    async with Memory(tmp_path, space=space, **settings()) as fresh:
        want = await answers(fresh.engine, day)
    assert got == want
