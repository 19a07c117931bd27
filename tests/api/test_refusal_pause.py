"""A request refused for its size is answered after a pause (web/guards/pacing.py RefusalPause),
so a client repeating it back to back cannot hold the event loop (bench.hostile). The pause is
observed through its sum, never timed."""

from __future__ import annotations

import time

from starlette.routing import Route

from mnemoql.web.graphql_view import MemoryGraphQL
from mnemoql.web.guards import RefusalPause
from tests.api.conftest import Api

EVENTS_WHERE = "query($w: EventWhere) { events(first: 5, where: $w) { edges { node { id } } } }"


def _view(api: Api) -> MemoryGraphQL:
    for route in api.app.routes:
        if isinstance(route, Route) and route.path == "/graphql":
            view = route.app
            assert isinstance(view, MemoryGraphQL)
            return view
    raise AssertionError("no /graphql route")


async def test_a_refused_where_is_answered_after_a_pause(api: Api) -> None:
    view = _view(api)
    await api.gql("{ memoryIndex { counts { events } } }")
    await api.error("{ nope }")  # a validation error: no pause
    assert view.refusal_pause.paused_s == 0
    tree = {"OR": [{"summary": {"contains": f"w{i}"}} for i in range(500)]}
    r = await api.post(EVENTS_WHERE, {"w": tree})
    assert r["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED", r
    assert view.refusal_pause.paused_s > 0


async def test_the_pause_is_a_multiple_of_the_cost_and_bounded() -> None:
    pause = RefusalPause(factor=2.0, max_s=0.001)
    await pause.after({"BAD_USER_INPUT", None}, started=0.0)  # not a size refusal
    assert pause.paused_s == 0.0
    await pause.after({"LIMIT_EXCEEDED"}, started=0.0)  # arrived long ago: capped
    assert pause.paused_s == 0.001
    pause = RefusalPause(factor=2.0, max_s=10.0)
    started = time.perf_counter()
    await pause.after({"LIMIT_EXCEEDED"}, started)
    assert 0 < pause.paused_s <= 2.0 * (time.perf_counter() - started)
