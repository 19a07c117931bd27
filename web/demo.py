"""``mnemoql demo``: a small sample memory, loaded into its own data dir and served.

The sample (``demo_data.jsonl``, next to this file) was written for this project: a small team
building a note-taking app, in Chinese and English, with people, places, concepts, dates and
positional ids (``diary_ch1_e01`` ...) so that ``nearby`` has records to read. Most lines carry
a hand-written extraction, so the graph is the same on every machine without a model; a few
lines go through the configured extractor (the offline one when no key is set).

Every line is saved with the idempotency key ``demo:<line number>``: loading twice, or running
``mnemoql demo`` again on the same data dir, replays instead of duplicating.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from mnemoql.engine.config import Settings, load_settings
from mnemoql.engine.errors import MnemoError
from mnemoql.engine.extraction_input import parse_extraction
from mnemoql.engine.ingest import SaveInput
from mnemoql.engine.memory import Memory

DEMO_DATA = Path(__file__).with_name("demo_data.jsonl")
KEY_PREFIX = "demo:"

FIRST_QUERY = """\
query FirstSteps {
  search(query: "Why did the team choose a CRDT for offline sync?", resetSeen: true) {
    cursor
    nearbyEvents
    text(locale: EN)
  }
}"""

NEARBY_HINT = (
    "then read the records around one of its nearbyEvents (the diary_ch1_e01..e06 entries\n"
    "and other x_chN_eM ids) with the cursor it returned:\n"
    '  query { nearby(cursor: "<cursor>", eventId: "<an id from nearbyEvents>") '
    "{ text(locale: EN) } }"
)


@dataclass(slots=True)
class DemoReport:
    """What one load did: ``saved`` new lines, ``replayed`` lines that were already there."""

    saved: int = 0
    replayed: int = 0
    revectorized: bool = False
    event_ids: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.saved + self.replayed


def demo_inputs(path: Path = DEMO_DATA) -> list[SaveInput]:
    """Every line of the sample as a save input with its idempotency key.

    Raises:
        ValueError: A line is not a valid save input (the message names the line).
    """
    items: list[SaveInput] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw: dict[str, Any] = json.loads(line)
            if raw.get("extraction") is not None:
                raw["extraction"] = parse_extraction(raw["extraction"])
            raw["idempotency_key"] = f"{KEY_PREFIX}{n}"
            items.append(SaveInput.model_validate(raw))
        except (ValueError, MnemoError) as exc:
            raise ValueError(f"{path.name}:{n}: not a save input: {exc}") from exc
    return items


ProgressFn = Callable[[int, int], None]  # (done, total)


async def load_demo(
    memory: Memory, path: Path = DEMO_DATA, progress: ProgressFn | None = None
) -> DemoReport:
    """Save every line of the sample into ``memory``, in file order; idempotent.

    A demo memory embedded with another model (the configuration changed since the last run)
    is re-embedded first: it is sample data, so that is always safe.
    """
    report = DemoReport()
    if (await memory.index()).mismatch:
        await memory.revectorize()
        report.revectorized = True
    items = demo_inputs(path)
    for done, item in enumerate(items, 1):
        outcome = await memory.save(item)
        if outcome.result.replayed:
            report.replayed += 1
        else:
            report.saved += 1
        report.event_ids.extend(outcome.result.event_ids)
        if progress is not None:
            progress(done, len(items))
    return report


def with_demo(
    app: Starlette,
    path: Path = DEMO_DATA,
    on_loaded: Callable[[DemoReport], None] | None = None,
    progress: ProgressFn | None = None,
) -> Starlette:
    """``app`` (from ``create_app``) with the sample loaded at startup, before it serves."""
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a: Starlette) -> AsyncIterator[None]:
        async with inner(a):
            report = await load_demo(a.state.memory, path, progress)
            a.state.demo = report
            if on_loaded is not None:
                on_loaded(report)
            yield

    app.router.lifespan_context = lifespan
    return app


def demo_settings(data_dir: str | Path | None = None, port: int | None = None) -> Settings:
    """The user's settings with the demo's own data dir (default ``<data dir>/demo``), the
    embedded store and 127.0.0.1, so the demo never touches the user's memory."""
    target = Path(data_dir).expanduser() if data_dir else load_settings().data_dir / "demo"
    return load_settings(data_dir=target, store="embedded", host="127.0.0.1", port=port)


def banner(settings: Settings, report: DemoReport) -> str:
    base = f"http://{settings.host}:{settings.port}"
    what = f"{report.saved} new, {report.replayed} already there"
    if report.revectorized:
        what += "; re-embedded for the configured model first"
    return "\n".join(
        [
            f"mnemoql demo: {report.total} sample memories in {settings.data_dir} ({what})",
            "",
            f"  Graph explorer  {base}/explorer",
            f"  GraphiQL        {base}/graphql",
            "",
            "A first query to paste into GraphiQL:",
            "",
            FIRST_QUERY,
            "",
            NEARBY_HINT,
            "",
            "Ctrl-C stops the server; the demo memory stays in its directory.",
            "",
        ]
    )


def serve_demo(args: argparse.Namespace) -> int:
    """``mnemoql demo [--data-dir DIR] [--port P]``: load the sample, print the URLs, serve."""
    import uvicorn

    from mnemoql.web.app import create_app
    from mnemoql.web.progress import Progress

    settings = demo_settings(getattr(args, "data_dir", None), getattr(args, "port", None))
    bars: list[Progress] = []

    def tick(done: int, total: int) -> None:
        # the first run embeds every line (a minute on a slow machine with the local model)
        if not bars:
            bars.append(Progress(total, label="sample memories loaded"))
        bars[0].advance()

    def announce(report: DemoReport) -> None:
        print(banner(settings, report), flush=True)

    app = with_demo(create_app(settings), on_loaded=announce, progress=tick)
    print(f"mnemoql demo: loading the sample into {settings.data_dir} …", file=sys.stderr)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=getattr(args, "log_level", None) or "warning",
    )
    return 0
