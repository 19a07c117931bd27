"""Searches while another agent saves a long document into the same memory (issue #30).

    python -m bench.search_during_save
    python -m bench.search_during_save --paragraphs 800 --searchers 8 --out /tmp/sds.md

One embedded memory in a fresh data directory (the offline extractor and the hashing embedder,
so that the model is not what is timed), ``--notes`` short notes saved one by one, then three
phases in the same run:

1. *quiet*: ``--searchers`` agents search for ``--quiet-seconds``, each call a fresh session;
2. *during*: one agent saves a document of ``--paragraphs`` paragraphs while the same agents
   search until the save returns;
3. *save alone*: another document of the same size saved with nobody searching.

Reported: each phase's searches (count, p50 / p95 / max ms, measured by the agents), and the
long save's time with and without the searchers. A search used to go to the database thread
for its meta check and for some reads, and so waited behind the whole save's transaction.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

import numpy as np

from bench._common import RESULTS, command_line, git_rev, load_average, machine_line, publish, table
from mnemoql import Memory

WORDS = 3000  # the notes' vocabulary: w0 .. w2999


def text(rnd: random.Random, words: int) -> str:
    return " ".join(f"w{rnd.randrange(WORDS)}" for _ in range(words)) + "."


def document(rnd: random.Random, paragraphs: int) -> str:
    return "\n\n".join(text(rnd, 120) for _ in range(paragraphs))


async def searches(memory: Memory, agents: int, until: asyncio.Event, tag: str) -> list[float]:
    """Each agent searches (a fresh session per call, a short pause between) until ``until``."""
    times: list[float] = []

    async def agent(a: int) -> None:
        rnd, i = random.Random(a), 0
        while not until.is_set():
            query = f"w{rnd.randrange(WORDS)} w{rnd.randrange(WORDS)}"
            t0 = time.perf_counter()
            await memory.search(query, session=f"{tag}-{a}-{i}")
            times.append(time.perf_counter() - t0)
            i += 1
            await asyncio.sleep(0.002)

    await asyncio.gather(*(agent(a) for a in range(agents)))
    return times


async def measure(args: argparse.Namespace) -> str:
    load, started = load_average(), time.monotonic()
    rnd = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="mnemoql-sds-") as tmp:
        async with Memory(Path(tmp), locale="en", embedding={"provider": "hashing"}) as memory:
            for i in range(args.notes):
                await memory.save(f"note {i}: {text(rnd, 60)}")
            await memory.search("w1 w2", session="warm-up")
            phases: dict[str, list[float]] = {}
            saves: dict[str, float] = {}

            stop = asyncio.Event()
            quiet = asyncio.create_task(searches(memory, args.searchers, stop, "quiet"))
            await asyncio.sleep(args.quiet_seconds)
            stop.set()
            phases["quiet"] = await quiet

            stop = asyncio.Event()
            during = asyncio.create_task(searches(memory, args.searchers, stop, "during"))
            t0 = time.perf_counter()
            await memory.save(document(rnd, args.paragraphs))
            saves["with the searchers"] = time.perf_counter() - t0
            stop.set()
            phases["during the long save"] = await during

            t0 = time.perf_counter()
            await memory.save(document(rnd, args.paragraphs))
            saves["alone"] = time.perf_counter() - t0

    rows = []
    for name, got in phases.items():
        ms = np.asarray(got) * 1000
        rows.append(
            [
                name,
                f"{len(ms)}",
                f"{np.percentile(ms, 50):.1f} / {np.percentile(ms, 95):.1f}",
                f"{ms.max():.1f}",
            ]
        )
    return "\n".join(
        [
            "# Searches during another agent's long save (embedded)",
            "",
            f"Command: `{command_line()}`",
            "",
            f"Commit {git_rev()}; {machine_line(load)}; {args.notes} notes saved one by one, "
            f"then a document of {args.paragraphs} paragraphs (~{args.paragraphs * 120} words); "
            f"{args.searchers} searching agents; offline extractor, hashing embedder; load average "
            f"at the end {load_average()}; {time.monotonic() - started:.0f} s.",
            "",
            table(["searches", "count", "p50 / p95 ms", "max ms"], rows),
            "",
            f"The long save: {saves['with the searchers'] * 1000:.0f} ms with the searchers, "
            f"{saves['alone'] * 1000:.0f} ms alone.",
            "",
        ]
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--notes", type=int, default=2000)
    p.add_argument("--paragraphs", type=int, default=400)
    p.add_argument("--searchers", type=int, default=4)
    p.add_argument("--quiet-seconds", type=float, default=5.0)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default=str(RESULTS / "search_during_save.md"))
    args = p.parse_args()
    for name in ("notes", "paragraphs", "searchers"):
        if getattr(args, name) <= 0:
            p.error(f"--{name.replace('_', '-')} must be positive")
    if args.quiet_seconds <= 0:
        p.error("--quiet-seconds must be positive")
    publish(asyncio.run(measure(args)), args.out)


if __name__ == "__main__":
    main()
