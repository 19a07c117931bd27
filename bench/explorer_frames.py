"""Where a pan frame's time goes in headless Chromium: CPU per frame, not frame intervals.

    python -m bench.explorer_frames --rounds 3

Frame intervals on this shared 2-core machine follow the load more than the page, so this
counts the CPU seconds all Chromium processes spend per animation frame (``/proc/<pid>/stat``)
while the same page does one of these, in turn, ``--rounds`` times, 120 frames each:

* ``idle``: nothing moves (the cost of producing frames at all);
* ``smalldiv`` / ``bigdiv``: a plain 100x100 / 1140x834 ``div`` (the atlas's drawing size) is
  moved 3 px per frame by a CSS transform: no canvas, no WebGL, nothing drawn by the page;
* ``atlas``: the atlas's drag (``bench.explorer.PAN``) on its start view (``?q=Ada``, 10k-node
  memory of ``bench.explorer``);
* ``classic``: the classic explorer's ``cy.panBy`` (``bench.explorer.CLASSIC_PAN``).

Also the atlas's main thread during its drag: sigma renders and long tasks. Nothing asserted.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
from typing import Any

import numpy as np

from bench.explorer import CHROMIUM, CLASSIC_PAN, PAN, START_QUERY, build, cache_dir, serving

TCK = os.sysconf("SC_CLK_TCK")
IDLE = """async (frames) => { const times = []; let last = null;
 await new Promise((done) => { let n = 0; function frame(t) {
   if (last !== null) times.push(t - last); last = t; n += 1;
   if (n <= frames) requestAnimationFrame(frame); else done(); }
 requestAnimationFrame(frame); }); return times; }"""
DIV = """async ([frames, w, h]) => { const d = document.createElement('div');
 d.style.cssText = `position:fixed;left:0;top:0;width:${w}px;height:${h}px;` +
   'background:linear-gradient(90deg,#fff,#abc);z-index:99';
 document.body.appendChild(d); const times = []; let last = null; let x = 0;
 await new Promise((done) => { let n = 0; function frame(t) {
   if (last !== null) times.push(t - last); last = t; x += 3;
   d.style.transform = `translate(${x}px,0)`; n += 1;
   if (n <= frames) requestAnimationFrame(frame); else done(); }
 requestAnimationFrame(frame); }); d.remove(); return times; }"""
WATCH = """() => { window.__renders = 0; window.__long = 0;
 window.__atlas.sigma.on('afterRender', () => { window.__renders += 1; });
 new PerformanceObserver((l) => { window.__long += l.getEntries()
   .reduce((a, e) => a + e.duration, 0); }).observe({type: 'longtask'}); }"""
FRAMES = 120


def chromium_cpu_s() -> float:
    total = 0.0
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            text = open(stat).read()  # noqa: SIM115
        except OSError:
            continue
        if "chrom" not in text[text.index("(") + 1 : text.rindex(")")].lower():
            continue
        fields = text[text.rindex(")") + 2 :].split()
        total += (int(fields[11]) + int(fields[12])) / TCK
    return total


def measure(page: Any, script: str, arg: object) -> tuple[float, float, float]:
    before = chromium_cpu_s()
    times = np.asarray(page.evaluate(script, arg))
    cpu_ms = 1000 * (chromium_cpu_s() - before) / len(times)
    return cpu_ms, float(np.percentile(times, 95)), float(times.mean())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--nodes", type=int, default=10000)
    args = p.parse_args()
    import asyncio

    from playwright.sync_api import sync_playwright

    from tests.web.conftest import CHROMIUM_ARGS

    path = cache_dir() / f"explorer-{args.nodes}"
    asyncio.run(build(path, args.nodes))
    runs: dict[str, list[tuple[float, float, float]]] = {}
    with serving(path) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
        page.goto(f"{base}/atlas?q={START_QUERY}&page=100")
        page.wait_for_function("() => window.__atlas.firstPaintMs !== null")
        page.wait_for_function("() => !window.__atlas.layoutRunning")
        page.evaluate(PAN, ["#atlas", 60, 3])  # the first drag promotes the layers
        page.evaluate(WATCH)
        cases: dict[str, tuple[str, object]] = {
            "idle": (IDLE, FRAMES),
            "smalldiv": (DIV, [FRAMES, 100, 100]),
            "bigdiv": (DIV, [FRAMES, 1140, 834]),
            "atlas": (PAN, ["#atlas", FRAMES, 3]),
        }
        for _ in range(args.rounds):
            for name, (script, arg) in cases.items():
                page.wait_for_timeout(300)
                runs.setdefault(name, []).append(measure(page, script, arg))
        renders = page.evaluate("() => [window.__renders, window.__long]")
        page.goto(f"{base}/explorer")
        page.evaluate("() => window.mnemoqlExplorer.ready")
        for _ in range(args.rounds):
            runs.setdefault("classic", []).append(measure(page, CLASSIC_PAN, [FRAMES, 3]))
        browser.close()
    print(f"load average {os.getloadavg()}; {args.rounds} rounds of {FRAMES} frames")
    for name, rows in runs.items():
        a = np.asarray(rows)
        cpu, p95, mean = a[:, 0].mean(), a[:, 1].mean(), a[:, 2].mean()
        print(f"{name:9s} Chromium CPU ms/frame {cpu:5.1f}  p95 {p95:5.1f}  mean {mean:5.1f}")
    print(f"atlas page over all rounds: {renders[0]} sigma renders, {renders[1]:.0f} ms long tasks")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
