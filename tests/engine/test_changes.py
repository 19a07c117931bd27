"""The live feed hub: READY first, every change in order, a slow subscriber gets RESYNC, and a
subscriber that stops is forgotten."""

from __future__ import annotations

import asyncio

import pytest

from mnemoql.engine.changes import Changes


async def test_ready_then_every_change_in_order() -> None:
    hub = Changes()
    hub.publish("SAVED", event_ids=["before"])  # published before: never seen
    feed = hub.subscribe()
    ready = await anext(feed)
    assert (ready.kind, ready.sequence) == ("READY", 1)
    assert hub.subscribers == 1
    hub.publish("SAVED", event_ids=["event_1"], node_ids=["person_1"])
    hub.publish("FORGOTTEN", deleted_ids=["event_1", "person_1"])
    saved, gone = await anext(feed), await anext(feed)
    assert (saved.kind, saved.sequence, saved.event_ids, saved.node_ids) == (
        "SAVED", 2, ("event_1",), ("person_1",),
    )  # fmt: skip
    assert (gone.kind, gone.deleted_ids) == ("FORGOTTEN", ("event_1", "person_1"))
    await feed.aclose()
    assert hub.subscribers == 0


async def test_a_subscriber_that_falls_behind_gets_one_resync() -> None:
    hub = Changes(buffer=3)
    slow, quick = hub.subscribe(), hub.subscribe()
    await anext(slow)
    await anext(quick)
    for i in range(3):
        hub.publish("SAVED", event_ids=[f"event_{i}"])
        assert (await anext(quick)).event_ids == (f"event_{i}",)
    hub.publish("SAVED", event_ids=["event_3"])  # slow's buffer was full
    assert (await anext(quick)).event_ids == ("event_3",)
    resync = await anext(slow)
    assert (resync.kind, resync.sequence) == ("RESYNC", 4)
    hub.publish("REVECTORIZED")
    assert (await anext(slow)).kind == "REVECTORIZED"
    await slow.aclose()
    await quick.aclose()


async def test_a_waiting_subscriber_wakes_on_publish() -> None:
    hub = Changes()
    feed = hub.subscribe()
    await anext(feed)
    waiting = asyncio.ensure_future(anext(feed))
    await asyncio.sleep(0)
    assert not waiting.done()
    hub.publish("MERGED", node_ids=["concept_2"])
    assert (await asyncio.wait_for(waiting, 5)).node_ids == ("concept_2",)
    await feed.aclose()


def test_the_buffer_must_hold_something() -> None:
    with pytest.raises(ValueError):
        Changes(buffer=0)
