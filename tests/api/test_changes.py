"""What the memory publishes to its live feed (memoryChanges): one change per committed write,
none for a replay or a refused write."""

from __future__ import annotations

import asyncio

from tests.api.conftest import Api

SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds replayed } }"
EXTRACTION = {
    "events": [{"ref": "e", "summary": "tea with Ann", "participants": [{"person": "p"}]}],
    "persons": [{"ref": "p", "name": "Ann"}],
}


async def test_writes_publish_their_changes_and_replays_do_not(api: Api) -> None:
    feed = api.app.state.memory.changes.subscribe()
    assert (await anext(feed)).kind == "READY"
    one = {"content": "tea with Ann", "extraction": EXTRACTION, "idempotencyKey": "k1"}
    first = (await api.gql(SAVE, input=one))["save"]
    saved = await anext(feed)
    assert (saved.kind, saved.event_ids, saved.node_ids) == ("SAVED", ("event_1",), ("person_1",))
    assert (await api.gql(SAVE, input=one))["save"]["replayed"]  # nothing new: no change
    again = {"content": "more tea with Ann", "extraction": EXTRACTION}
    await api.gql(SAVE, input=again)
    second, merged = await anext(feed), await anext(feed)
    assert (second.kind, second.event_ids, second.node_ids) == ("SAVED", ("event_2",), ())
    assert (merged.kind, merged.node_ids) == ("MERGED", ("person_1",))
    err = await api.error(SAVE, input={"content": "x", "id": "topic:nope"})
    assert err["extensions"]["code"] == "INVALID_ID"
    await api.gql('mutation { forget(eventId: "event_2") { deletedIds } }')
    gone = await anext(feed)
    assert (gone.kind, gone.deleted_ids) == ("FORGOTTEN", ("event_2",))
    await api.gql("mutation { revectorize { events } }")
    assert (await anext(feed)).kind == "REVECTORIZED"
    waiting = asyncio.ensure_future(anext(feed))
    await asyncio.sleep(0.05)
    assert not waiting.done()  # the refused save published nothing either
    waiting.cancel()
    assert first["eventIds"] == ["event_1"]
