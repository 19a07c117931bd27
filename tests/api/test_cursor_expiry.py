"""A cursor that is gone, over GraphQL (issue 30): ``CURSOR_EXPIRED`` once its TTL passed, kept
apart from ``CURSOR_INVALID`` for a token the memory never issued. The session state is swept
as of a later time instead of waiting."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.api.conftest import Api, offline_settings, running

SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds } }"
SEARCH = (
    'query($q: String, $c: String) { search(query: $q, cursor: $c, session: "s") '
    "{ cursor expandConcepts items { eventId } } }"
)
EXPAND = (
    'query($c: String!, $id: ID!) { expand(cursor: $c, conceptId: $id, session: "s") '
    "{ cursor items { eventId } } }"
)


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    async with running(offline_settings(tmp_path / "data")) as api:
        for n in range(8):
            ex = {
                "events": [{"ref": "e", "summary": f"harbour log {n}", "concepts": ["c"]}],
                "concepts": [{"ref": "c", "name": "harbour"}],
            }
            content = f"Harbour log {n}: the ferry left late. " + f"entry {n} " * 10
            await api.gql(SAVE, input={"content": content, "extraction": ex})
        yield api


async def test_a_cursor_past_its_ttl_is_cursor_expired(api: Api) -> None:
    page = (await api.gql(SEARCH, q="harbour ferry"))["search"]
    assert page["cursor"] and page["expandConcepts"]
    ttl = api.app.state.memory.settings.sessions.ttl_s
    await api.app.state.memory.cursors.state.sweep(time.time() + ttl + 1)  # 15 minutes on
    for query, variables in (
        (EXPAND, {"c": page["cursor"], "id": page["expandConcepts"][0]}),
        (SEARCH, {"c": page["cursor"]}),
    ):
        err = await api.error(query, **variables)
        assert err["extensions"]["code"] == "CURSOR_EXPIRED", err
        assert "expired" in err["message"] and "search again" in err["message"]


async def test_a_cursor_never_issued_stays_cursor_invalid(api: Api) -> None:
    err = await api.error(EXPAND, c="cur_0000000000000000", id="concept_1")
    assert err["extensions"]["code"] == "CURSOR_INVALID"


async def test_a_fresh_cursor_is_unaffected_by_a_sweep(api: Api) -> None:
    page = (await api.gql(SEARCH, q="harbour ferry"))["search"]
    await api.app.state.memory.cursors.state.sweep(time.time())
    more = (await api.gql(SEARCH, c=page["cursor"]))["search"]
    seen = {i["eventId"] for i in page["items"]}
    assert more["items"] and not seen & {i["eventId"] for i in more["items"]}
