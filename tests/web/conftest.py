"""Web tests: the demo memory, a real uvicorn server on loopback, and headless Chromium.

Browser tests need Playwright for Python (``pip install playwright``; never ``playwright
install``) and a system Chromium at ``/usr/bin/chromium`` (Debian: ``apt-get install chromium``).
A Chinese font (Debian: ``fonts-wqy-microhei``) makes the screenshots legible; without one the
tests still pass and warn. Without Playwright or Chromium they skip, except when ``CI=true`` or ``MNEMOQL_REQUIRE_BROWSER=1``: then they fail.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
import time
import warnings
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from mnemoql.web.app import create_app
from mnemoql.web.demo import DemoReport, load_demo, with_demo
from tests.api.conftest import Api, offline_settings, running

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "test-output"
CHROMIUM = Path(os.environ.get("MNEMOQL_CHROMIUM", "/usr/bin/chromium"))
# The flags that keep Chromium off the network on a closed machine (polyglot.md, "Known to work").
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
    "--metrics-recording-only",
]
_screenshots: list[Path] = []


def browser_required() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("MNEMOQL_REQUIRE_BROWSER") == "1"


def need_browser() -> None:
    """Skip (or, in CI, fail) unless Playwright and the system Chromium are there."""
    missing: list[str] = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the playwright package (pip install playwright)")
    if not (CHROMIUM.is_file() or shutil.which(str(CHROMIUM))):
        missing.append(f"{CHROMIUM} (apt-get install chromium)")
    if not missing:
        return
    reason = "browser tests need " + " and ".join(missing)
    if browser_required():
        pytest.fail(reason + " (required: CI=true or MNEMOQL_REQUIRE_BROWSER=1)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium through Playwright, headless and offline (``CHROMIUM_ARGS``), one per
    test module; a ``playwright.sync_api.Browser``."""
    need_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def cjk_font_missing() -> bool:
    """True when fontconfig knows no Chinese font: screenshots then show CJK text as boxes."""
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return False
    found = subprocess.run([fc_list, ":lang=zh"], capture_output=True, text=True, check=False)
    return not found.stdout.strip()


def record_screenshot(path: Path) -> None:
    """Remember a screenshot for the end-of-run summary, and print it with the test's output."""
    _screenshots.append(path)
    print(f"screenshot: {path}")
    if len(_screenshots) == 1 and cjk_font_missing():
        warnings.warn(
            "no Chinese font is installed, so the screenshots show CJK text as boxes "
            "(Debian: apt-get install fonts-wqy-microhei)",
            stacklevel=2,
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each phase's report on the item, so a fixture can tell that its test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


def call_failed(request: pytest.FixtureRequest) -> bool:
    report = getattr(request.node, "report_call", None)
    return report is None or report.failed


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _screenshots:
        terminalreporter.write_sep("-", "screenshots")
        for path in _screenshots:
            terminalreporter.write_line(str(path))


@contextlib.asynccontextmanager
async def demo_api(data_dir: Path) -> AsyncIterator[tuple[Api, DemoReport]]:
    """The app over ASGI with offline settings and the demo memory loaded once."""
    async with running(offline_settings(data_dir)) as api:
        report = await load_demo(api.app.state.memory)
        yield api, report


class LiveServer:
    """A real uvicorn server on 127.0.0.1 (a free port) in a background thread."""

    def __init__(self, app: Any) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="uvicorn", daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("uvicorn stopped during startup (see the log above)")
            if time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start within {timeout} s")
            time.sleep(0.02)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def gql(self, query: str, **variables: Any) -> dict[str, Any]:
        r = httpx.post(f"{self.url}/graphql", json={"query": query, "variables": variables})
        r.raise_for_status()
        body: dict[str, Any] = r.json()
        assert not body.get("errors"), body["errors"]
        data: dict[str, Any] = body["data"]
        return data


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """create_app with offline settings in a tmp data dir, the demo loaded at startup."""
    data_dir = tmp_path_factory.mktemp("demo-server")
    server = LiveServer(with_demo(create_app(offline_settings(data_dir))))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def output_dir() -> Path:
    OUTPUT.mkdir(exist_ok=True)
    return OUTPUT
