"""The graph explorers in headless Chromium on generated memories of 1k / 10k / 50k nodes.

    python -m bench.explorer                                   # 1k, 10k, 50k nodes
    python -m bench.explorer --sizes 1000,10000 --loads 5 --out bench/results/explorer.md

Each memory is written straight through ``store.apply_save`` (hashing vectors, no model) into
``~/.cache/mnemoql-bench/explorer-<nodes>`` and served by a real ``mnemoql serve --data-dir``
on loopback. Nodes are 60% events, 10% persons, 20% concepts and 10% locations; every event has
1-3 participants, a place and two concepts (30% of picks Zipf-distributed, so hubs exist, the
rest uniform); every 97th person is named "Ada ...": the start search.

Per size, in the system Chromium (headless, the test suite's flags, WebGL on SwiftShader):

* **atlas** (``/atlas?q=Ada``, sigma.js + graphology, neighbourhood-first): time to first paint
  (navigation start to sigma's first frame with the start nodes and their first neighbours),
  median of ``--loads`` fresh page loads; then frame times while panning (the camera moves a
  little every animation frame for ``--frames`` frames; p50 / p95 of the intervals between
  frames) and the JS heap, first on the start view, then after growing the view by expanding
  nodes (cursor pages of 100) until ``--grow`` nodes are drawn.
* **baseline: the classic explorer** (``/explorer``, cytoscape.js, one ``graph`` query of up to
  5,000 nodes) on the same server: time until its ``ready`` promise resolves (the graph drawn),
  then the same pan and heap measurements.

Timings are reported, never asserted; the machine is shared (2 cores), so read medians.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np

from bench._common import cache_dir, command_line, git_rev, load_average, machine_line, publish
from mnemoql.engine.drafts import EntityDraft, EventDraft, RelationDraft, SavePlan
from mnemoql.engine.model_settings import HASHING_EMBEDDING_MODEL, LOCAL_DIMENSIONS
from mnemoql.engine.models import Chunk, MemoryMeta
from mnemoql.engine.providers.hashing import HashingEmbedder
from mnemoql.engine.store.embedded import EmbeddedStore
from mnemoql.engine.text import content_hash, text_hash

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = os.environ.get("MNEMOQL_CHROMIUM", "/usr/bin/chromium")
PLAN_EVENTS = 500
WORDS = [
    "river",
    "garden",
    "ledger",
    "lantern",
    "market",
    "harbour",
    "bridge",
    "orchard",
    "signal",
    "archive",
    "meadow",
    "tower",
    "compass",
    "canvas",
    "anchor",
    "beacon",
    "quarry",
    "thicket",
    "summit",
    "valley",
    "forge",
    "parcel",
]
SURNAMES = [
    "Lovelace",
    "Hopper",
    "Turing",
    "Noether",
    "Curie",
    "Franklin",
    "Meitner",
    "Johnson",
    "Lamarr",
    "Ride",
]
START_QUERY = "Ada"


# ---------------------------------------------------------------- the generated memory


def shares(nodes: int) -> tuple[int, int, int, int]:
    events = int(nodes * 0.6)
    persons = int(nodes * 0.1)
    concepts = int(nodes * 0.2)
    return events, persons, concepts, nodes - events - persons - concepts


def zipf_pick(rng: np.random.Generator, n: int, k: int) -> list[int]:
    """k distinct indices in [0, n), small ones far likelier (hubs)."""
    picked: set[int] = set()
    while len(picked) < min(k, n):
        hub = rng.random() < 0.3
        picked.add(int(min(n - 1, rng.zipf(2.0) - 1)) if hub else int(rng.integers(0, n)))
    return sorted(picked)


def entity_names(persons: int, concepts: int, locations: int) -> list[tuple[str, str]]:
    out = [
        ("Person", f"{'Ada' if k % 97 == 0 else 'Sam'} {SURNAMES[k % len(SURNAMES)]} {k}")
        for k in range(persons)
    ]
    out += [("Concept", f"{WORDS[k % len(WORDS)]} idea {k}") for k in range(concepts)]
    out += [("Location", f"Place {k}") for k in range(locations)]
    return out


def plan(
    rng: np.random.Generator,
    embedder: HashingEmbedder,
    start: int,
    count: int,
    sizes: tuple[int, int, int, int],
) -> SavePlan:
    """``count`` events from number ``start``; the first plan also creates every entity."""
    _, persons, concepts, locations = sizes
    offsets = {"Person": 0, "Concept": persons, "Location": persons + concepts}
    entities: list[EntityDraft] = []
    if start == 0:
        names = entity_names(persons, concepts, locations)
        vectors = embedder.embed_sync([n for _, n in names])
        entities = [
            EntityDraft(f"x{k}", label, name, [], None, vectors[k])  # type: ignore[arg-type]
            for k, (label, name) in enumerate(names)
        ]

    def ref(label: str, k: int) -> str:  # existing ids after the first plan: person_N etc.
        return f"x{offsets[label] + k}" if start == 0 else f"{label.lower()}_{k + 1}"

    summaries = []
    for i in range(start, start + count):
        words = " ".join(rng.choice(WORDS, 5).tolist())
        summaries.append(f"event {i}: {words}")
    vectors = embedder.embed_sync(summaries)
    events, relations = [], []
    for j, summary in enumerate(summaries):
        content = summary + ". " + " ".join(rng.choice(WORDS, 40).tolist())
        chunk = Chunk("", 0, 0, len(content), content, text_hash(content), vectors[j])
        day = f"2025-{1 + (start + j) % 12:02d}-{1 + (start + j) % 28:02d}"
        events.append(
            EventDraft(f"e{j}", summary, content, day, content_hash(content), vectors[j], [chunk])
        )
        for k in zipf_pick(rng, persons, int(rng.integers(1, 4))):
            relations.append(RelationDraft("PARTICIPATED_IN", ref("Person", k), f"e{j}"))
        for k in zipf_pick(rng, locations, 1):
            relations.append(RelationDraft("OCCURRED_AT", f"e{j}", ref("Location", k)))
        for k in zipf_pick(rng, concepts, 2):
            relations.append(RelationDraft("MENTIONS", f"e{j}", ref("Concept", k)))
    return SavePlan(
        events=events,
        entities=entities,
        relations=relations,
        create_time="2026-01-01T00:00:00+00:00",
        create_date="2026-01-01",
        meta=MemoryMeta(HASHING_EMBEDDING_MODEL, LOCAL_DIMENSIONS, "2026-01-01T00:00:00+00:00"),
    )


async def build(path: Path, nodes: int, seed: int = 7) -> float:
    """Write the memory once (``complete`` marks it); the seconds it took, 0 when cached."""
    if (path / "complete").is_file():
        return 0.0
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    t0 = time.perf_counter()
    store = EmbeddedStore(path / "memory.db")
    await store.open()
    rng = np.random.default_rng(seed)
    sizes = shares(nodes)
    embedder = HashingEmbedder()
    written = 0
    while written < sizes[0]:
        count = min(PLAN_EVENTS, sizes[0] - written)
        await store.apply_save(plan(rng, embedder, written, count, sizes))
        written += count
    await store.close()
    seconds = time.perf_counter() - t0
    (path / "complete").write_text(json.dumps({"nodes": nodes, "write_s": seconds}))
    return seconds


# ---------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(data: Path) -> Iterator[str]:
    mnemoql = Path(sys.executable).parent / "mnemoql"
    port = free_port()
    env = {**os.environ, "MNEMOQL_EMBEDDING__PROVIDER": "hashing"}
    env.pop("DEEPSEEK_API_KEY", None)
    cmd = [
        str(mnemoql),
        "serve",
        "--data-dir",
        str(data),
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=sys.stderr)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError("mnemoql serve exited")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                    break
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------- the browser

# a drag as a user makes it: mousedown in the middle of the drawing, one mousemove per animation
# frame, mouseup; the intervals between frames are the frame times
PAN = """async ([selector, frames, step]) => {
  const box = document.querySelector(selector).getBoundingClientRect();
  let x = box.left + box.width / 2 - (frames * step) / 2;
  const y = box.top + box.height / 2;
  const target = document.elementFromPoint(x, y);
  const fire = (type) => target.dispatchEvent(new MouseEvent(type, {
    clientX: x, clientY: y, button: 0, buttons: type === 'mouseup' ? 0 : 1,
    bubbles: true, cancelable: true, view: window }));
  fire('mousedown');
  const times = [];
  let last = null;
  await new Promise((done) => {
    let n = 0;
    function frame(t) {
      if (last !== null) times.push(t - last);
      last = t;
      x += step;
      fire('mousemove');
      n += 1;
      if (n <= frames) requestAnimationFrame(frame); else done();
    }
    requestAnimationFrame(frame);
  });
  fire('mouseup');
  return times;
}"""

# the classic explorer pans by cytoscape's API (a synthetic drag there lands on a node of its
# grid and moves the node); it redraws on each viewport change, as during a drag
CLASSIC_PAN = """async ([frames, step]) => {
  const cy = window.mnemoqlExplorer.cy;
  const times = [];
  let last = null;
  await new Promise((done) => {
    let n = 0;
    function frame(t) {
      if (last !== null) times.push(t - last);
      last = t;
      cy.panBy({ x: -step, y: 0 });
      n += 1;
      if (n <= frames) requestAnimationFrame(frame); else done();
    }
    requestAnimationFrame(frame);
  });
  return times;
}"""

GROW = """async (target) => {
  const a = window.__atlas;
  const tried = new Set();
  while (a.graph.order < target) {
    const open = a.graph.nodes().filter((id) => !tried.has(id))
      .sort((x, y) => a.graph.degree(y) - a.graph.degree(x)).slice(0, 6);
    if (!open.length) break;
    open.forEach((id) => tried.add(id));
    await Promise.all(open.map((id) => a.expand(id).catch(() => 0)));
  }
  return a.graph.order;
}"""


def heap_mb(page: Page) -> float:
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    cdp.detach()
    return float(metrics.get("JSHeapUsedSize", 0.0)) / 1e6


def pan(page: Page, selector: str, frames: int) -> tuple[float, float]:
    if selector == "#cy":
        times: list[float] = page.evaluate(CLASSIC_PAN, [frames, 3])
    else:
        times = page.evaluate(PAN, [selector, frames, 3])
    arr = np.asarray(times)
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 95))


VIEWPORT = {"width": 1440, "height": 900}


def new_page(browser: Browser) -> Page:
    context = browser.new_context(
        viewport={"width": VIEWPORT["width"], "height": VIEWPORT["height"]}
    )
    context.set_default_timeout(300_000)
    return context.new_page()


def first_paints(browser: Browser, url: str, painted: str, loads: int) -> tuple[list[float], Page]:
    """``loads`` fresh page loads of ``url``: the ms of each first paint (the value of the
    ``painted`` script, awaited), and the last page, still open."""
    paints: list[float] = []
    for _ in range(loads):
        page = new_page(browser)
        page.goto(url)
        paints.append(float(page.evaluate(painted)))
        if len(paints) < loads:
            page.context.close()
    return paints, page


def atlas_run(browser: Browser, base: str, loads: int, frames: int, grow: int) -> dict[str, Any]:
    paints, page = first_paints(
        browser,
        f"{base}/atlas?q={START_QUERY}&page=100",
        """() => new Promise((done) => { const check = () => window.__atlas.firstPaintMs !== null
          ? done(window.__atlas.firstPaintMs) : setTimeout(check, 20); check(); })""",
        loads,
    )
    page.wait_for_function("() => !window.__atlas.layoutRunning")
    start_nodes = int(page.evaluate("() => window.__atlas.graph.order"))
    start_pan = pan(page, "#atlas", frames)
    start_heap = heap_mb(page)
    t0 = time.perf_counter()
    grown = int(page.evaluate(GROW, grow))
    grow_s = time.perf_counter() - t0
    page.wait_for_function("() => !window.__atlas.layoutRunning")
    big_pan = pan(page, "#atlas", frames)
    big_heap = heap_mb(page)
    edges = int(page.evaluate("() => window.__atlas.graph.size"))
    page.context.close()
    return {
        "paint": statistics.median(paints),
        "paints": paints,
        "start_nodes": start_nodes,
        "start_pan": start_pan,
        "start_heap": start_heap,
        "grown": grown,
        "grown_edges": edges,
        "grow_s": grow_s,
        "big_pan": big_pan,
        "big_heap": big_heap,
    }


def classic_run(browser: Browser, base: str, loads: int, frames: int) -> dict[str, Any]:
    paints, page = first_paints(
        browser,
        f"{base}/explorer",
        "() => window.mnemoqlExplorer.ready.then(() => performance.now())",
        loads,
    )
    nodes = int(page.evaluate("() => window.mnemoqlExplorer.cy.nodes().length"))
    result = {
        "paint": statistics.median(paints),
        "paints": paints,
        "nodes": nodes,
        "pan": pan(page, "#cy", frames),
        "heap": heap_mb(page),
    }
    page.context.close()
    return result


# ---------------------------------------------------------------- the report


def ms(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def report(
    args: argparse.Namespace, rows: list[dict[str, Any]], start_load: str, wall: float
) -> str:
    lines = [
        "# The graph explorers at 1k / 10k / 50k nodes (headless Chromium)",
        "",
        f"Command: `{command_line()}`",
        "",
        f"Commit {git_rev()}; {machine_line(start_load)}; load average at the end "
        f"{load_average()}; wall time {wall:,.0f} s. Chromium `{chromium_version()}`, headless, "
        "the test suite's flags (`--disable-gpu`: WebGL runs on SwiftShader, on the CPU); "
        f"viewport {args.viewport}. First paint: median of {args.loads} fresh page loads, ms "
        "from navigation start. Pan: a mouse drag across the drawing, one 3 px mousemove per "
        f"animation frame for {args.frames} frames (the classic explorer: `cy.panBy` 3 px per "
        "frame), p50 / p95 of the frame intervals (ms; 16.7 = 60 fps). During a drag the atlas "
        "moves its drawn layers as bitmaps and its camera once, on release "
        "(`explorer_sigma_drag.md`: the run before, with sigma's own drag). Heap: Chromium's "
        "JSHeapUsedSize (MB). Targets (issue #28) at 10k nodes: first paint <= 2 s, pan p95 <= "
        "33 ms. The machine is shared by several sessions (2 cores): figures are noisy, read the "
        "medians and the load average.",
        "",
        "| memory nodes | explorer | nodes drawn | first paint ms | pan p50 / p95 ms "
        "| JS heap MB |",
        "|---|---|---|---|---|---|",
    ]

    def pans(p50_p95: tuple[float, float]) -> str:
        return f"{ms(p50_p95[0])} / {ms(p50_p95[1])}"

    for r in rows:
        a, c = r["atlas"], r["classic"]
        n = f"{r['nodes']:,}"
        lines += [
            f"| {n} | atlas, start view (`?q={START_QUERY}`) | {a['start_nodes']:,} | "
            f"{ms(a['paint'])} | {pans(a['start_pan'])} | {a['start_heap']:.1f} |",
            f"| {n} | atlas, grown by clicks ({a['grow_s']:.0f} s of paged expansion) | "
            f"{a['grown']:,} ({a['grown_edges']:,} edges) | – | {pans(a['big_pan'])} | "
            f"{a['big_heap']:.1f} |",
            f"| {n} | baseline: classic `/explorer` (cytoscape, whole graph up to 5,000) | "
            f"{c['nodes']:,} | {ms(c['paint'])} | {pans(c['pan'])} | {c['heap']:.1f} |",
        ]
    lines += ["", "First paints of every load (ms):", ""]
    for r in rows:
        lines.append(
            f"- {r['nodes']:,} nodes (memory written in {r['write_s']:.0f} s, 0 = cached): atlas "
            + ", ".join(ms(x) for x in r["atlas"]["paints"])
            + "; classic "
            + ", ".join(ms(x) for x in r["classic"]["paints"])
        )
    return "\n".join(lines) + "\n"


def chromium_version() -> str:
    out = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else "unknown"


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--sizes", default="1000,10000,50000")
    p.add_argument("--loads", type=int, default=5)
    p.add_argument("--frames", type=int, default=240)
    p.add_argument("--grow", type=int, default=3000)
    p.add_argument("--viewport", default="1440x900", help="WIDTHxHEIGHT of the page")
    p.add_argument("--out", default="bench/results/explorer.md")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server on the way out
    VIEWPORT["width"], VIEWPORT["height"] = (int(x) for x in args.viewport.split("x"))
    from playwright.sync_api import sync_playwright

    from tests.web.conftest import CHROMIUM_ARGS

    start_load = load_average()
    t0 = time.perf_counter()
    rows = []
    for nodes in [int(s) for s in args.sizes.split(",")]:
        path = cache_dir() / f"explorer-{nodes}"
        write_s = asyncio.run(build(path, nodes))
        print(f"{nodes:,} nodes: memory ready ({write_s:.0f} s)", file=sys.stderr, flush=True)
        with serving(path) as base, sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            try:
                atlas = atlas_run(browser, base, args.loads, args.frames, min(args.grow, nodes))
                classic = classic_run(browser, base, args.loads, args.frames)
            finally:
                browser.close()
        rows.append({"nodes": nodes, "write_s": write_s, "atlas": atlas, "classic": classic})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    publish(report(args, rows, start_load, time.perf_counter() - t0), args.out)


if __name__ == "__main__":
    main()
