"""The topic and date index follows another process's writes by the rows that changed (issue 30
item 3): a real second process saves, rebinds and forgets on the same embedded memory; this
process's index catches up without reading everything again, and answers what a fresh open
of the memory answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mnemoql import Memory
from mnemoql.engine.memory import Memory as EngineMemory

ROOT = Path(__file__).resolve().parents[2]

# the other process: saves on topics, rebinds one of this process's events, forgets one of
# this process's events and its own newest one (whose seq the next save is given again)
WRITER = """
import asyncio, json, sys
from mnemoql import Memory

async def main(data_dir, theirs):
    async with Memory(data_dir, embedding={"provider": "hashing"}) as m:
        ids = []
        for i, (text, topic) in enumerate([
            ("Alice planted red tulips by the fence.", "garden->tulips"),
            ("Bob watered the tulips before the frost.", "garden->tulips"),
            ("The sprint review moved to Thursday.", "work->reviews"),
            ("Carol pruned the old roses.", "garden->roses"),
        ]):
            saved = await m.save(text, topic_path=topic, related_topics=["garden->soil"])
            ids += saved.event_ids
        await m.forget(ids[-1])  # the newest node: its seq is given to the next save
        saved = await m.save("Dave fenced the vegetable beds.", topic_path="garden->beds")
        ids += saved.event_ids
        await m.engine.bind_topic(theirs[0], "garden->tulips", ["garden->bulbs"])
        await m.forget(theirs[1])
        print(json.dumps({"ids": ids, "forgotten": [ids[3], theirs[1]]}))

asyncio.run(main(sys.argv[1], sys.argv[2:]))
"""


def other_process(data_dir: Path, *theirs: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOQL_")}
    out = subprocess.run(
        [sys.executable, "-c", WRITER, str(data_dir), *theirs],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    data: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return data


async def answers(memory: EngineMemory, day: str) -> dict[str, Any]:
    """Everything the topic and date index answers: the tree (with binding counts), each
    node's bindings in order, every topic's recall and the day's events."""
    tree = await memory.topics()
    out: dict[str, Any] = {"tree": tree.text, "day": None, "nodes": {}, "recall": {}}
    for node in tree.nodes:
        out["nodes"][node.path] = [
            (b.slice_ref.slice_id, b.timestamp_ms, b.related_paths, b.profile)
            for b in node.bindings
        ]
        recalled = await memory.recall_topic(node.path)
        out["recall"][node.path] = [(m.event.id, m.source, m.score) for m in recalled.memories]
    dated = await memory.recall_date(day)
    out["day"] = [m.event.id for m in dated.memories]
    return out


async def test_another_process_saves_and_forgets_are_caught_up_without_a_reload(
    tmp_path: Path,
) -> None:
    async with Memory(tmp_path, embedding={"provider": "hashing"}) as mine:
        engine = mine.engine
        first = await mine.save("Eve sowed tulip bulbs in pots.", topic_path="garden->tulips")
        second = await mine.save("Frank fixed the greenhouse door.", topic_path="garden")
        ours = [first.event_ids[0], second.event_ids[0]]
        await engine.topics()  # the index is loaded now
        assert engine.recall.full_loads == 1

        theirs = other_process(tmp_path, *ours)

        day = (await engine.store.get_events(ours[:1]))[0].create_date
        got = await answers(engine, day)
        assert engine.recall.full_loads == 1, "caught up by reloading everything"
        assert engine.recall.catch_ups >= 1
        tulips = [e for e, _, _ in got["recall"]["garden->tulips"]]
        assert theirs["ids"][0] in tulips and theirs["ids"][1] in tulips
        assert ours[0] in tulips  # saved here, rebound there: still bound
        assert ours[0] in [e for e, *_ in got["nodes"]["garden->tulips"]]
        forgotten = set(theirs["forgotten"])
        assert not forgotten & {e for node in got["nodes"].values() for e, *_ in node}
        assert not forgotten & set(got["day"])
        assert theirs["ids"][-1] in got["day"]  # the save given a forgotten seq again
        assert got["nodes"]["garden->roses"] == []  # its only binding was forgotten
        assert "garden->bulbs" in got["nodes"]  # a related path of the rebinding

        # this process writes again after catching up: the next catch-up reads nothing of it
        await mine.save("Gina raked the leaves.", topic_path="garden->leaves")
        mark = engine.recall._mark
        assert mark is not None and mark == engine.store.last_write_marks()[1]
        got = await answers(engine, day)

    async with Memory(tmp_path, embedding={"provider": "hashing"}) as fresh:
        want = await answers(fresh.engine, day)
        assert fresh.engine.recall.full_loads == 1
    assert got["tree"] == want["tree"]
    assert got["recall"] == want["recall"]
    assert got["day"] == want["day"]
    assert {p: sorted(b) for p, b in got["nodes"].items()} == {
        p: sorted(b) for p, b in want["nodes"].items()
    }


async def test_a_forget_here_updates_the_index_without_a_reload(tmp_path: Path) -> None:
    async with Memory(tmp_path, embedding={"provider": "hashing"}) as mine:
        engine = mine.engine
        kept = await mine.save("Alice planted tulips.", topic_path="garden->tulips")
        gone = await mine.save("Bob planted more tulips.", topic_path="garden->tulips")
        await engine.topics()
        await mine.forget(gone.event_ids[0])
        recalled = await engine.recall_topic("garden->tulips")
        assert [m.event.id for m in recalled.memories] == list(kept.event_ids)
        node = await engine.topic("garden->tulips")
        assert node is not None and [b.slice_ref.slice_id for b in node.bindings] == list(
            kept.event_ids
        )
        assert engine.recall.full_loads == 1
