"""Neo4j going away under a running service: a save cut off half-way writes nothing and
reports STORE_UNAVAILABLE, /readyz says 503 while the server is down, and once it is back the
same app saves and searches again without a restart.

The test owns its managed Neo4j (a temp home) so it can kill and restart it; like
``test_neo4j_managed.py`` it runs only with ``MNEMOQL_TEST_NEO4J_MANAGED=1`` or ``CI=true``
(about 60 s: two server starts and the driver's 10 s retry window).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mnemoql.engine.spaces import Spaces
from mnemoql.engine.store.neo4j import _save
from mnemoql.engine.store.neo4j.managed import ManagedNeo4j
from tests.api.conftest import Api, offline_settings, running
from tests.api.test_save import COUNTS, EXTRACTION, SAVE, TEXT

MANAGED = os.environ.get("MNEMOQL_TEST_NEO4J_MANAGED") == "1" or os.environ.get("CI") == "true"
pytestmark = pytest.mark.skipif(
    not MANAGED, reason="starts a real Neo4j: set MNEMOQL_TEST_NEO4J_MANAGED=1 (always on in CI)"
)
SEARCH = '{ search(query: "Berlin Neo4j migration") { items { eventId } } }'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedNeo4j]:
    home = tmp_path_factory.mktemp("neo4j-faults")
    managed = ManagedNeo4j(home, heap="512m", page_cache="64m")
    managed.install()
    managed.start()
    try:
        yield managed
    finally:
        managed.stop()


async def counts(api: Api) -> dict[str, int]:
    result: dict[str, int] = (await api.gql(COUNTS))["memoryIndex"]["counts"]
    return result


async def test_a_save_cut_off_by_an_outage_writes_nothing_and_the_service_recovers(
    server: ManagedNeo4j, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = offline_settings(
        tmp_path,
        store="neo4j",
        neo4j={"mode": "external", "uri": server.uri, "password": server.password},
    )
    async with running(settings) as api:
        spaces: Spaces = api.app.state.spaces
        spaces.revive_every_s = 0.0  # retry at once instead of once a second
        first = await api.gql(SAVE, input={"content": TEXT, "extraction": EXTRACTION})
        assert first["save"]["eventIds"] == ["event_1"]
        before = await counts(api)

        # Kill the server inside the save's transaction: events, chunks and entities are
        # written (uncommitted), the relations are next.
        original = _save.SaveTx._relations
        killed: list[float] = []

        async def kill_then_continue(self: _save.SaveTx) -> None:
            if not killed:
                await asyncio.to_thread(server.stop, 0.0)  # SIGTERM, then SIGKILL at once
                killed.append(time.monotonic())
            await original(self)

        monkeypatch.setattr(_save.SaveTx, "_relations", kill_then_continue)
        body = await api.post(
            SAVE, {"input": {"content": TEXT + " Again.", "extraction": EXTRACTION}}
        )
        assert killed, "the save reached its relations"
        (error,) = body["errors"]
        assert error["extensions"]["code"] == "STORE_UNAVAILABLE"
        assert "unavailable" in error["message"] and server.password not in str(body)
        assert time.monotonic() - killed[0] < 30, "the failure is reported promptly"
        monkeypatch.undo()

        ready = await api.client.get("/readyz")
        assert ready.status_code == 503 and ready.json() == {"status": "unavailable"}
        assert (await api.error(COUNTS))["extensions"]["code"] == "STORE_UNAVAILABLE"
        assert (await api.client.get("/healthz")).status_code == 200

        await asyncio.to_thread(server.start)  # same port, same password, same data
        ready = await api.client.get("/readyz")
        assert ready.status_code == 200 and ready.json() == {"status": "ready"}
        assert await counts(api) == before  # nothing of the cut-off save was committed
        again = await api.gql(SAVE, input={"content": TEXT + " Again.", "extraction": EXTRACTION})
        assert again["save"]["eventIds"] == ["event_2"]  # no id was burnt either
        found = await api.gql(SEARCH)
        assert {i["eventId"] for i in found["search"]["items"]} == {"event_1", "event_2"}
        after: dict[str, Any] = await counts(api)
        assert after["events"] == before["events"] + 1
