"""CORS in a real browser (issue #27 item 2): a page served from another loopback origin (another
port, as a frontend's dev server is) queries ``/graphql`` and subscribes over the websocket when
``MNEMOQL_HTTP__CORS_ORIGINS`` lists its origin, and is refused when it does not.

Headless Chromium at /usr/bin/chromium through Playwright, against a real ``mnemoql serve``;
skips without them unless CI=true or MNEMOQL_REQUIRE_BROWSER=1 (tests/web/conftest.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.web.served import Served, served

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.browser

PAGE = b"<!doctype html><title>frontend</title><p>a frontend on its own origin</p>"
# What a frontend does: a POST with a JSON body (a preflight first) and a graphql-transport-ws
# subscription. Each resolves to what it got, or to "refused: ..." when the browser blocked it.
CALLS = """
async ({api, ws}) => {
  const query = fetch(api + "/graphql", {
    method: "POST",
    headers: {"content-type": "application/json"},
    body: JSON.stringify({query: 'mutation { save(input: {content: "from the page"}) { eventIds } }'}),
  }).then(r => r.json()).then(b => b.data ? "saved " + b.data.save.eventIds.length : JSON.stringify(b))
    .catch(e => "refused: " + e.message);
  const subscription = new Promise(resolve => {
    const s = new WebSocket(ws, "graphql-transport-ws");
    s.onopen = () => s.send(JSON.stringify({type: "connection_init", payload: {}}));
    s.onmessage = e => {
      const m = JSON.parse(e.data);
      if (m.type === "connection_ack") {
        s.send(JSON.stringify({id: "1", type: "subscribe",
                               payload: {query: "subscription { memoryChanges { kind } }"}}));
      } else if (m.type === "next") {
        resolve(m.payload.data.memoryChanges.kind);
        s.close();
      }
    };
    s.onclose = e => resolve("refused: closed " + e.code);
  });
  return {query: await query, subscription: await subscription};
}
"""


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def frontends() -> Iterator[tuple[str, str]]:
    """Two page servers on loopback: their origins (one will be listed, one not)."""
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), _Page) for _ in range(2)]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    try:
        listed, other = (f"http://127.0.0.1:{s.server_address[1]}" for s in servers)
        yield listed, other
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, frontends: tuple[str, str]
) -> Iterator[Served]:
    env = {"MNEMOQL_HTTP__CORS_ORIGINS": json.dumps([frontends[0]])}
    with served(tmp_path_factory.mktemp("cors") / "data", env=env) as server:
        yield server


def calls_from(browser: Browser, origin: str, service: Served) -> dict[str, str]:
    context = browser.new_context()
    context.set_default_timeout(30_000)
    try:
        page: Page = context.new_page()
        page.goto(origin + "/")
        result: dict[str, str] = page.evaluate(CALLS, {"api": service.url, "ws": service.ws})
        return result
    finally:
        context.close()


def events(service: Served) -> int:
    count: int = service.gql("{ memoryIndex { counts { events } } }")["memoryIndex"]["counts"][
        "events"
    ]
    return count


def test_a_listed_origin_queries_and_subscribes(
    browser: Browser, frontends: tuple[str, str], service: Served
) -> None:
    before = events(service)
    result = calls_from(browser, frontends[0], service)
    assert result == {"query": "saved 1", "subscription": "READY"}, result
    assert events(service) == before + 1


def test_an_origin_not_listed_is_refused(
    browser: Browser, frontends: tuple[str, str], service: Served, tmp_path: Path
) -> None:
    before = events(service)
    result = calls_from(browser, frontends[1], service)
    assert result["query"].startswith("refused"), result
    assert result["subscription"].startswith("refused"), result
    assert events(service) == before  # the mutation never ran
    log = service.output()
    assert f"Origin '{frontends[1]}' is not allowed" in log
