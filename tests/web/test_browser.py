"""The explorer and GraphiQL pages in real headless Chromium, against a real server on loopback
with the demo memory: offline, drawn, clickable, searchable, read-only. Screenshots go to
``test-output/`` (gitignored).

Needs ``pip install playwright`` and Debian's ``chromium`` at /usr/bin/chromium (Playwright's
own browser download is never used). Skips without them unless CI=true or
MNEMOQL_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
import pytest

from mnemoql.engine.providers.offline import OfflineExtractor
from mnemoql.web.demo import demo_inputs
from tests.web.conftest import (
    LiveServer,
    call_failed,
    record_screenshot,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page, Request, Route, ViewportSize

pytestmark = pytest.mark.browser

TIMEOUT_MS = 15_000
VIEWPORT: ViewportSize = {"width": 1440, "height": 900}
LONG_EVENT = "retro_2025_06"
GRAPH = "{ graph(includeTopics: true) { nodes { id: nodeId label name } relationships { id: relationshipId type } } }"
# A GraphQL mutation operation: `mutation {`, `mutation Name`, `mutation(` -- not the word in prose.
MUTATION_OP = re.compile(r"\bmutation\s*[A-Za-z_({]")


class Watch:
    """Every request one browser context makes; anything not on 127.0.0.1 is aborted and kept."""

    def __init__(self, context: BrowserContext) -> None:
        self.requests: list[Request] = []
        self.blocked: list[str] = []
        self.errors: list[str] = []
        context.route("**/*", self._route)
        context.on("request", lambda request: self.requests.append(request))
        context.on("page", self._page)

    @staticmethod
    def local(url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme == "data":
            return True
        if parts.scheme == "blob":  # blob:http://127.0.0.1:port/uuid (the export download)
            parts = urlsplit(url[len("blob:") :])
        return parts.scheme in {"http", "ws"} and parts.hostname == "127.0.0.1"

    def _route(self, route: Route, request: Request) -> None:
        if self.local(request.url):
            route.continue_()
        else:
            self.blocked.append(request.url)
            route.abort()

    def _page(self, page: Page) -> None:
        page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))
        page.on(
            "console",
            lambda msg: self.errors.append(f"console: {msg.text}") if msg.type == "error" else None,
        )

    def posts(self) -> list[str]:
        return [r.post_data or "" for r in self.requests if r.method == "POST"]

    def assert_offline(self) -> None:
        assert not self.blocked, f"requests to other hosts: {self.blocked}"
        others = [r.url for r in self.requests if not self.local(r.url)]
        assert not others, f"requests to other hosts: {others}"
        assert self.requests, "no requests were seen"

    def assert_clean(self) -> None:
        self.assert_offline()
        assert not self.errors, self.errors


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(viewport=VIEWPORT, accept_downloads=True, locale="en-GB")
    ctx.set_default_timeout(TIMEOUT_MS)
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def watch(context: BrowserContext) -> Watch:
    return Watch(context)


@pytest.fixture
def page(
    context: BrowserContext, watch: Watch, request: pytest.FixtureRequest, output_dir: Path
) -> Iterator[Page]:
    """A page; when the test fails, its screenshot is saved as test-output/failed-<test>.png."""
    pg = context.new_page()
    yield pg
    if call_failed(request) and not pg.is_closed():
        path = output_dir / f"failed-{request.node.name}.png"
        pg.screenshot(path=str(path), full_page=True)
        print(f"screenshot of the failure: {path}; page errors: {watch.errors}")


@pytest.fixture(scope="module")
def graph(live_server: LiveServer) -> dict[str, Any]:
    """The demo graph as GraphQL returns it (what the explorer must draw)."""
    data: dict[str, Any] = live_server.gql(GRAPH)["graph"]
    return data


def open_explorer(page: Page, server: LiveServer) -> dict[str, int]:
    page.goto(f"{server.url}/explorer")
    drawn: dict[str, int] = page.evaluate("() => window.mnemoqlExplorer.ready")
    page.wait_for_selector("body[data-state=ready]")
    return drawn


def click_node(page: Page, node_id: str) -> None:
    """A real mouse click on a drawn node: zoom in on it, then click a point of the node that
    no other node covers (the layout is random, so neighbours may overlap its centre)."""
    point = page.evaluate(
        """(id) => {
            const cy = window.mnemoqlExplorer.cy;
            const node = cy.getElementById(id);
            if (node.empty()) { throw new Error('no node ' + id); }
            cy.stop();
            cy.zoom(2);
            cy.center(node);
            const own = node.renderedBoundingBox({ includeLabels: false });
            const others = cy.nodes().not(node).filter(n => n.style('display') !== 'none')
                .map(n => n.renderedBoundingBox({ includeLabels: false }));
            const covered = (x, y) => others.some(b => x >= b.x1 && x <= b.x2 && y >= b.y1 && y <= b.y2);
            const p = node.renderedPosition();
            let best = { x: p.x, y: p.y };
            outer: for (const fy of [0.5, 0.3, 0.7, 0.2, 0.8]) {
                for (const fx of [0.5, 0.3, 0.7, 0.2, 0.8]) {
                    const x = own.x1 + fx * own.w, y = own.y1 + fy * own.h;
                    if (!covered(x, y)) { best = { x, y }; break outer; }
                }
            }
            const box = cy.container().getBoundingClientRect();
            return { x: box.left + best.x, y: box.top + best.y };
        }""",
        node_id,
    )
    page.mouse.click(point["x"], point["y"])
    page.wait_for_selector(f'#details[data-node-id="{node_id}"]')


def cy_eval(page: Page, body: str, arg: Any = None) -> Any:
    return page.evaluate(f"(arg) => {{ const cy = window.mnemoqlExplorer.cy; {body} }}", arg)


def screenshot(page: Page, out: Path, name: str) -> Path:
    path = out / name
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    record_screenshot(path)
    return path


def demo_events() -> int:
    """Events the demo memory holds: a line without an extraction of its own (the English
    chat) gives one per turn."""
    offline = OfflineExtractor()
    return sum(len((i.extraction or offline.extract_sync(i.content)).events) for i in demo_inputs())


def test_explorer_loads_offline_and_draws_the_whole_graph(
    page: Page, watch: Watch, live_server: LiveServer, graph: dict[str, Any]
) -> None:
    drawn = open_explorer(page, live_server)
    assert drawn["nodes"] == len(graph["nodes"]) > 0
    assert drawn["relationships"] == len(graph["relationships"])
    assert cy_eval(page, "return cy.nodes().length;") == len(graph["nodes"])
    assert page.get_attribute("#node-count", "data-nodes") == str(len(graph["nodes"]))
    assert page.get_attribute("#status", "data-state") == "ok"
    assert page.is_hidden("#empty-state")

    # the legend: one checkbox per label, with the label's count
    for label in ("Event", "Person", "Concept", "Location"):
        count = sum(n["label"] == label for n in graph["nodes"])
        item = page.locator(f'#legend label[data-legend-label="{label}"]')
        assert item.is_visible()
        assert f"({count})" in item.inner_text()
        assert page.is_checked(f"[data-testid=label-filter-{label}]")

    # a label filter hides exactly that label's nodes, and brings them back
    persons = sum(n["label"] == "Person" for n in graph["nodes"])
    page.click("[data-testid=label-filter-Person]")
    # (by the computed style: cytoscape's :hidden selector lags behind a class change)
    hidden_js = (
        "return cy.nodes().filter(n => n.style('display') === 'none').map(n => n.data('label'));"
    )
    assert cy_eval(page, hidden_js) == ["Person"] * persons
    visible = page.get_attribute("#node-count", "data-visible-nodes")
    assert visible == str(len(graph["nodes"]) - persons)
    page.click("[data-testid=label-filter-Person]")
    assert cy_eval(page, hidden_js) == []

    watch.assert_clean()
    requested = {urlsplit(r.url).path for r in watch.requests}
    assert {"/explorer", "/static/vendor/cytoscape/cytoscape.min.js", "/graphql"} <= requested


def test_clicking_a_node_shows_details_and_the_original_text(
    page: Page, watch: Watch, live_server: LiveServer, output_dir: Path
) -> None:
    content = next(i.content for i in demo_inputs() if i.id == LONG_EVENT)
    open_explorer(page, live_server)

    # a person: properties and neighbours, no text
    person = cy_eval(page, "return cy.nodes('[name = \"林晓\"]').id();")
    click_node(page, person)
    assert page.inner_text("#details-name") == "林晓"
    assert page.locator("#neighbours li").count() > 5
    assert page.locator("#event-content").count() == 0
    assert cy_eval(page, "return cy.$(':selected').map(n => n.id());") == [person]

    # the long event: its first 2,000 characters, then the rest with "Read more"
    click_node(page, LONG_EVENT)
    meta = page.locator("#content-meta")
    meta.wait_for()
    total = f"{len(content):,}"
    assert meta.inner_text().startswith(f"Characters 0–2,000 of {total}")
    assert page.text_content("#content-text") == content[:2000]
    assert page.locator("#properties").is_visible()
    screenshot(page, output_dir, "explorer-details.png")

    page.click("#read-more-button")
    page.wait_for_function(
        "(t) => document.getElementById('content-meta').textContent.startsWith(t)",
        arg=f"Characters 0–{total} of {total}",
    )
    assert page.text_content("#content-text") == content
    assert page.is_hidden("#read-more-button")
    watch.assert_clean()


def test_search_lists_results_and_highlights_their_nodes(
    page: Page, watch: Watch, live_server: LiveServer, output_dir: Path
) -> None:
    open_explorer(page, live_server)
    page.fill("#search-input", "CRDT 离线同步 offline sync")
    page.click("#search-button")
    results = page.locator("[data-testid=search-result]")
    results.first.wait_for()
    page.wait_for_selector("#status[data-state=ok]")

    ids = [results.nth(i).get_attribute("data-event-id") or "" for i in range(results.count())]
    assert 1 <= len(ids) <= 4
    drawn = [i for i in ids if page.get_attribute(f'[data-event-id="{i}"]', "data-drawn") == "true"]
    assert drawn == ids, "every demo event is in the drawing"
    hits = cy_eval(page, "return cy.nodes('.search-hit').map(n => n.id());")
    assert sorted(hits) == sorted(ids)
    # highlighted means drawn differently: the search-hit border, not the default white one
    colours = cy_eval(page, "return cy.nodes('.search-hit').map(n => n.style('border-color'));")
    assert set(colours) == {"rgb(245,158,11)"}
    assert page.locator("[data-testid=search-quote]").count() >= 1
    assert "CRDT" in page.inner_text("#search-results")

    # a result title selects its node
    results.first.locator("button.result-title").click()
    page.wait_for_selector(f'#details[data-node-id="{ids[0]}"]')
    page.wait_for_timeout(400)  # the centring animation
    screenshot(page, output_dir, "explorer.png")

    page.click("#search-clear")
    assert cy_eval(page, "return cy.nodes('.search-hit').length;") == 0
    assert page.is_hidden("#search-results-section")
    watch.assert_clean()


def test_no_mutation_is_reachable_from_the_explorer(
    page: Page, watch: Watch, live_server: LiveServer
) -> None:
    open_explorer(page, live_server)
    click_node(page, LONG_EVENT)
    page.locator("#content-meta").wait_for()
    page.click("#read-more-button")
    page.wait_for_selector("#read-more-button", state="hidden")
    page.click("#expand-button")
    page.wait_for_function("() => /^Expanded /.test(document.getElementById('status').textContent)")
    page.fill("#search-input", "公测 launch")
    page.press("#search-input", "Enter")
    page.locator("[data-testid=search-result]").first.wait_for()
    page.click("[data-testid=label-filter-Concept]")
    with page.expect_download() as download:
        page.click("#export-button")
    exported = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    assert exported["hiddenLabels"] == ["Concept"]
    assert exported["nodes"] and all(n["label"] != "Concept" for n in exported["nodes"])
    page.click("#reload-button")
    page.wait_for_selector("body[data-state=ready]")

    bodies = watch.posts()
    assert len(bodies) >= 6  # graph, event text, read more, neighbourhood, search, graph again
    for body in bodies:
        assert "mutation" not in body.lower(), body
        doc = json.loads(body)
        assert re.match(r"\s*query\b", doc["query"]), doc["query"]
    watch.assert_clean()

    # and the pages' own scripts hold no mutation operation at all
    for name in ("explorer.js", "auth.js", "graphiql.js"):
        source = httpx.get(f"{live_server.url}/static/{name}").text
        assert not MUTATION_OP.search(source), f"{name} contains a mutation operation"
    html = httpx.get(f"{live_server.url}/explorer").text
    assert "mutation" not in html.lower()


def test_graphiql_loads_offline_and_runs_a_query(
    page: Page, watch: Watch, live_server: LiveServer, output_dir: Path
) -> None:
    events = demo_events()
    page.goto(f"{live_server.url}/graphql")
    editor = page.locator(".graphiql-query-editor .CodeMirror")
    editor.wait_for()
    assert "query MemoryIndex" in editor.inner_text()
    # the schema arrived (introspection), so the explorer plugin lists the root fields
    page.wait_for_selector(".graphiql-explorer-root, .graphiql-explorer-node", timeout=TIMEOUT_MS)

    # Type a new query over the default one. It keeps the default's operation name: GraphiQL 3
    # updates its operationName a moment after an edit, and a run within that moment would send
    # the old name with the new text.
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(
        "query MemoryIndex {\n"
        "  memoryIndex { counts { events persons concepts locations } }\n"
        '  node(id: "diary_ch1_e06") { ... on Event { id summary } }\n'
        "}\n"
    )
    page.click(".graphiql-execute-button")
    response = page.locator(".graphiql-response")
    page.wait_for_function(
        "() => (document.querySelector('.graphiql-response') || {}).innerText?.includes('西湖')"
    )
    text = response.inner_text()
    assert f'"events": {events}' in text
    assert "团队在西湖庆祝公测第一周" in text
    assert '"errors"' not in text
    screenshot(page, output_dir, "graphiql.png")
    watch.assert_clean()
    posted = [json.loads(b) for b in watch.posts()]
    assert any("IntrospectionQuery" in (p.get("operationName") or "") for p in posted)
    assert any('"diary_ch1_e06"' in p.get("query", "") for p in posted)


LIVE_SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds createdPersons } }"


def test_the_explorer_follows_saves_and_forgets_live(
    page: Page, watch: Watch, live_server: LiveServer, output_dir: Path
) -> None:
    drawn = open_explorer(page, live_server)
    page.wait_for_selector("#live-state[data-state=live]")
    loads = sum("ExplorerGraph" in b for b in watch.posts())
    extraction = {
        "events": [
            {
                "ref": "e",
                "summary": "Zoë shows the live explorer",
                "participants": [{"person": "z"}],
            }
        ],
        "persons": [{"ref": "z", "name": "Zoë Live"}],
    }
    saved = live_server.gql(
        LIVE_SAVE, input={"content": "Zoë showed the live explorer.", "extraction": extraction}
    )["save"]
    event_id, person_id = saved["eventIds"][0], saved["createdPersons"][0]
    # the new event, its new person and the relationship between them appear, no reload
    page.wait_for_function(
        "([e, p]) => { const cy = window.mnemoqlExplorer.cy;"
        " return cy.getElementById(e).nonempty() && cy.getElementById(p).nonempty()"
        " && cy.getElementById(e).connectedEdges().length > 0; }",
        arg=[event_id, person_id],
    )
    assert cy_eval(page, "return cy.nodes().length;") == drawn["nodes"] + 2
    assert cy_eval(page, "return cy.getElementById(arg).data('name');", person_id) == "Zoë Live"
    assert page.get_attribute("#node-count", "data-nodes") == str(drawn["nodes"] + 2)
    assert "Live: saved" in page.inner_text("#status")
    screenshot(page, output_dir, "explorer-live.png")
    after = sum("ExplorerGraph" in b for b in watch.posts())
    assert after == loads, "the explorer reloaded the whole graph instead of applying the change"
    # forgetting takes them away again
    live_server.gql("mutation($id: ID!) { forget(eventId: $id) { deletedIds } }", id=event_id)
    page.wait_for_function(
        "(e) => window.mnemoqlExplorer.cy.getElementById(e).empty()", arg=event_id
    )
    assert cy_eval(page, "return cy.nodes().length;") == drawn["nodes"]
    watch.assert_clean()


def test_graphiql_runs_the_revectorize_subscription_with_its_progress(
    page: Page, watch: Watch, live_server: LiveServer, output_dir: Path
) -> None:
    frames: list[str] = []
    page.on(
        "websocket",
        lambda ws: ws.on("framereceived", lambda f: frames.append(f if isinstance(f, str) else "")),
    )
    page.goto(f"{live_server.url}/graphql")
    editor = page.locator(".graphiql-query-editor .CodeMirror")
    editor.wait_for()
    page.wait_for_selector(".graphiql-explorer-root, .graphiql-explorer-node", timeout=TIMEOUT_MS)
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    # the default's operation name again (see test_graphiql_loads_offline_and_runs_a_query)
    page.keyboard.insert_text(
        "subscription MemoryIndex {\n"
        "  revectorize { phase done total report { model events chunks } }\n"
        "}\n"
    )
    # GraphiQL re-parses the edited document a moment later; its fetcher picks the websocket
    # from that parsed document, and the explorer plugin shows it once it is there
    page.wait_for_function(
        "() => /subscription/.test(document.querySelector('.graphiql-explorer-root')?.innerText || '')"
    )
    page.click(".graphiql-execute-button")
    page.wait_for_function(
        "() => /\"phase\": \"done\"/.test((document.querySelector('.graphiql-response') || {}).innerText || '')",
        timeout=60_000,
    )
    text = page.locator(".graphiql-response").inner_text()
    assert '"report"' in text and f'"events": {demo_events()}' in text
    assert '"errors"' not in text
    screenshot(page, output_dir, "graphiql-subscription.png")
    watch.assert_clean()
    # it went over the websocket, not as a POST, and every step of the progress arrived
    assert not any("revectorize" in b for b in watch.posts())
    steps = [json.loads(f)["payload"]["data"]["revectorize"] for f in frames if '"next"' in f]
    assert {"embedding", "writing", "done"} <= {step["phase"] for step in steps}, steps
