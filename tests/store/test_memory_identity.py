"""Issue #13, cases 1 and 2, through the ``Memory`` facade on every store: an id is never handed
out twice, a retried save never returns another memory's id, and an idempotency key reused for
other content is a CONFLICT. (The store contract holds the allocator's side; this is what a
client sees.)"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from mnemoql.engine.config import load_settings
from mnemoql.engine.errors import Conflict, Forgotten
from mnemoql.engine.ingest import SaveInput
from mnemoql.engine.memory import Memory
from mnemoql.engine.providers.factory import build_providers
from mnemoql.engine.store.base import Store


@pytest.fixture
async def memory(store: Store) -> AsyncIterator[Memory]:
    settings = load_settings({}, embedding={"provider": "hashing"})
    async with httpx.AsyncClient() as client:
        yield Memory(settings, store, build_providers(settings, client))


async def test_a_retried_save_of_a_forgotten_memory_is_refused_not_reassigned(
    memory: Memory,
) -> None:
    dave = await memory.save(SaveInput(content="Dave's note about the pond.", idempotency_key="K"))
    assert dave.result.event_ids == ["event_1"]
    await memory.forget("event_1")
    erin = await memory.save(SaveInput(content="Erin's tulips are blooming."))
    assert erin.result.event_ids == ["event_2"]  # not event_1 again
    with pytest.raises(Forgotten) as err:
        await memory.save(SaveInput(content="Dave's note about the pond.", idempotency_key="K"))
    assert err.value.code == "FORGOTTEN" and err.value.details["forgotten_ids"] == ["event_1"]
    assert (await memory.store.counts()).events == 1
    # a new key saves it anew, under a new id
    again = await memory.save(SaveInput(content="Dave's note about the pond.", idempotency_key="K2"))
    assert again.result.event_ids == ["event_3"]


async def test_a_key_reused_for_other_content_is_a_conflict(memory: Memory) -> None:
    first = await memory.save(SaveInput(content="Alice moved to Berlin.", idempotency_key="K"))
    replay = await memory.save(SaveInput(content="Alice moved to Berlin.", idempotency_key="K"))
    assert replay.result.replayed and replay.result.event_ids == first.result.event_ids
    with pytest.raises(Conflict) as err:
        await memory.save(SaveInput(content="Bob stayed in Paris.", idempotency_key="K"))
    assert err.value.code == "CONFLICT" and err.value.details["argument"] == "idempotencyKey"
    assert (await memory.store.counts()).events == 1
