"""Hostile requests: other clients' latency while one client sends a hostile request at a time.

    python -m bench.hostile                            # every kind, 20 s phases, local embedder
    python -m bench.hostile --tree /tmp/mnemoql-before --out bench/results/hostile_before.md

``mnemoql serve`` runs in a subprocess on 127.0.0.1 (a fresh data directory, the embedded
store, the offline extractor, ``--embedder`` for queries and passages; ``--tree`` runs another
checkout's code, e.g. ``git archive`` of an older commit, with this interpreter). It is seeded
with LongMemEval user turns (``../shared/bench``; each saved with a one-event client
extraction, so no extraction model runs). Then phases alternate, each ``--seconds`` long:

- **quiet**: only the *other clients* run: 3 searchers (LongMemEval questions, their own
  connections and sessions) and 1 lister (``events`` with a small ``where``, ``memoryIndex``),
  each waiting ``--think`` seconds between requests;
- **hostile, one kind**: the same clients, plus one client sending that hostile request back to
  back, one at a time (the next when the previous answered). A phase ends after ``--seconds``
  and after the hostile request in flight has answered (at most ``--max-wait`` more seconds).
  The hostile client runs in a process of its own: building a 2.5 MB body in the other
  clients' event loop held them ~100-300 ms each time, counted as the server's latency.

The kinds are the requests of issue #13 (a 210k-character search, a 2.5 MB ``OR`` filter, a
5,000-person extraction, a body nested 100k deep) and the largest request of each kind the
caps still allow (a 2,000-character query, a 100-condition ``where``, a 300-entity extraction,
a 200,000-character save), and the floods of issue #29 item 6 (``*-x16``: 16 connections of
the one hostile client sending back to back: bad tokens, searches at the cap, searches over
it). Every client has a token of its own (the per-client limits of ``web/guards/limits.py``
tell them apart); a bad-token flood counts against the hostile client's address. For each
hostile phase the report gives the other clients' p50 / p95 and its ratio to the quiet p95
(the mean of the quiet phase before and after it), the answers the hostile client got and how
long they took. The DESIGN target: within 2x.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import multiprocessing
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench._common import command_line, data_dir, git_rev, machine_line, publish, table
from bench.load import HOST, free_port, stop_server, wait_ready

ROOT = Path(__file__).resolve().parents[1]
SPACE = "hostile"
SEARCH = (
    "query($q: String!, $s: String!) { search(query: $q, session: $s, resetSeen: true) "
    "{ items { eventId quote { text } } } }"
)
LIST = (
    'query { events(first: 20, where: {summary: {contains: "the"}}) { totalCount '
    "edges { node { id summary } } } memoryIndex { counts { events } } }"
)
SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds } }"
SAVE_MANY = "mutation($inputs: [SaveInput!]!) { saveMany(inputs: $inputs) { errors { code } } }"
EVENTS_WHERE = "query($w: EventWhere) { events(first: 5, where: $w) { edges { node { id } } } }"

Body = tuple[str, dict[str, Any] | None, str | None]  # query, variables, or a raw body


# ---------------------------------------------------------------- the hostile requests


def _query(chars: int) -> Body:
    words = "where did we decide to move the graph database migration and who owns it "
    return SEARCH, {"q": (words * (chars // len(words) + 1))[:chars], "s": "hostile"}, None


def _where(conditions: int) -> Body:
    tree = {"OR": [{"summary": {"contains": f"word{i:05d}"}} for i in range(conditions)]}
    return EVENTS_WHERE, {"w": tree}, None


def _where_content(conditions: int) -> Body:
    words = ["cycling", "recipe", "garden", "budget", "travel", "museum", "python", "piano"]
    tree = {"OR": [{"content": {"contains": f"{words[i % 8]}{i}"}} for i in range(conditions)]}
    return EVENTS_WHERE, {"w": tree}, None


def _extraction(persons: int) -> Body:
    people = [{"ref": f"p{i}", "name": f"Visitor {secrets.token_hex(3)} {i}"}
              for i in range(persons)]  # fmt: skip
    ex = {"events": [{"ref": "e1", "summary": "a crowd at the museum",
                      "participants": [{"person": p["ref"]} for p in people]}],
          "persons": people}  # fmt: skip
    text = f"A crowd met at the museum ({secrets.token_hex(4)})."
    return SAVE, {"input": {"content": text, "extraction": ex}}, None


def _nested(depth: int) -> Body:
    return "", None, '{"query": "{ __typename }", "variables": ' + "[" * depth + "]" * depth + "}"


def _big_save(chars: int) -> Body:
    line = "The heron waited by the pond while the volunteers counted birds along the shore. "
    text = f"({secrets.token_hex(4)}) " + (line * (chars // len(line) + 1))[:chars]
    ex = {"events": [{"ref": "e1", "summary": "a long field report"}]}
    return SAVE, {"input": {"content": text, "extraction": ex}}, None


KINDS: dict[str, tuple[str, Callable[[], Body]]] = {
    "query-210k": ("search query of 210,000 characters", lambda: _query(210_000)),
    "query-at-cap": ("search query of 2,000 characters (the cap; ~430 tokens)",
                     lambda: _query(2_000)),
    "where-2.5MB": ("where: OR of 65,000 conditions (2.5 MB)", lambda: _where(65_000)),
    "where-at-cap": ("where: OR of 100 content conditions (the cap)", lambda: _where_content(100)),
    "extraction-5000": ("client extraction with 5,000 persons", lambda: _extraction(5_000)),
    "extraction-at-cap": ("client extraction with 300 persons (the cap)",
                          lambda: _extraction(300)),
    "nested-100k": ("JSON body nested 100,000 deep", lambda: _nested(100_000)),
    "save-200k": ("save of 200,000 characters (~300 chunks to embed)",
                  lambda: _big_save(200_000)),
    "bad-tokens-x16": ("16 connections of requests with a bad token",
                       lambda: (LIST, None, None)),
    "query-at-cap-x16": ("16 connections of 2,000-character searches", lambda: _query(2_000)),
    "query-210k-x16": ("16 connections of 210,000-character searches",
                       lambda: _query(210_000)),
}  # fmt: skip
# kinds sent over this many connections at once (the others: one request at a time)
PARALLEL = {"bad-tokens-x16": 16, "query-at-cap-x16": 16, "query-210k-x16": 16}
BAD_TOKEN = "not-a-token-of-this-service-0123"


# ---------------------------------------------------------------- clients


@dataclass
class Phase:
    name: str
    latencies: list[float] = field(default_factory=list)  # every other client's request
    searches: list[float] = field(default_factory=list)  # the searchers' alone (they embed)
    errors: dict[str, int] = field(default_factory=dict)
    hostile: list[tuple[float, str]] = field(default_factory=list)  # (seconds, answer)
    seconds: float = 0.0


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _answer(r: httpx.Response) -> str:
    try:
        body = r.json()
    except ValueError:
        return f"HTTP {r.status_code}"
    if isinstance(body, dict) and body.get("errors"):
        return str((body["errors"][0].get("extensions") or {}).get("code") or "error")
    return "ok" if r.status_code == 200 else f"HTTP {r.status_code}"


async def other_client(
    i: int, base: str, token: str, questions: list[str], think: float,
    stop: asyncio.Event, phase: Callable[[], Phase],
) -> None:  # fmt: skip
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=180) as c:
        n = 0
        while not stop.is_set():
            if i == 3:
                payload: dict[str, Any] = {"query": LIST}
            else:
                q = questions[(i * 13 + n) % len(questions)]
                payload = {"query": SEARCH, "variables": {"q": q, "s": f"other-{i}"}}
            n += 1
            current = phase()
            t0 = time.perf_counter()
            try:
                r = await c.post("/graphql", json=payload)
                answer = _answer(r)
            except httpx.HTTPError as exc:
                answer = type(exc).__name__
            elapsed = time.perf_counter() - t0
            current.latencies.append(elapsed)
            if i != 3:
                current.searches.append(elapsed)
            if answer != "ok":
                current.errors[answer] = current.errors.get(answer, 0) + 1
            await asyncio.sleep(think)


def hostile_client(base: str, token: str, kind: str, seconds: float,
                   max_wait: float) -> list[tuple[float, str]]:  # fmt: skip
    """One hostile phase: ``kind``'s request back to back for ``seconds`` (and the one in flight),
    over ``PARALLEL[kind]`` connections at once (threads), else one.

    Runs in a process of its own (``hostile_pool``): building a 2.5 MB body, and collecting its
    65k dicts afterwards, holds an interpreter for 100-300 ms, which in the other clients'
    process would show up as their latency although the server answered them on time.
    """
    if kind.startswith("bad-tokens"):
        token = BAD_TOKEN
    connections = PARALLEL.get(kind, 1)
    if connections == 1:
        return _hostile_connection(base, token, kind, seconds, max_wait)
    with concurrent.futures.ThreadPoolExecutor(connections) as pool:
        runs = [pool.submit(_hostile_connection, base, token, kind, seconds, max_wait)
                for _ in range(connections)]  # fmt: skip
        return [answer for run in runs for answer in run.result()]


def _hostile_connection(base: str, token: str, kind: str, seconds: float,
                        max_wait: float) -> list[tuple[float, str]]:  # fmt: skip
    headers = {"Authorization": f"Bearer {token}", "content-type": "application/json"}
    deadline = time.monotonic() + seconds
    answers: list[tuple[float, str]] = []
    with httpx.Client(base_url=base, headers=headers, timeout=max_wait) as c:
        while time.monotonic() < deadline:
            query, variables, raw = KINDS[kind][1]()
            content = raw if raw is not None else json.dumps(
                {"query": query, "variables": variables})  # fmt: skip
            t0 = time.perf_counter()
            try:
                answer = _answer(c.post("/graphql", content=content))
            except httpx.HTTPError as exc:
                answer = type(exc).__name__
            answers.append((time.perf_counter() - t0, answer))
    return answers


def hostile_pool() -> concurrent.futures.ProcessPoolExecutor:
    """The hostile client's process (spawned, so it shares nothing with the other clients)."""
    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=1, mp_context=multiprocessing.get_context("spawn")
    )
    pool.submit(pct, [0.0], 50).result()  # started, and this module imported, before a phase
    return pool


# ---------------------------------------------------------------- the run


def seeds(n: int) -> tuple[list[str], list[str]]:
    """``n`` LongMemEval user turns (short enough to be one chunk) and the 40 questions."""
    path = data_dir() / "longmemeval_s_dev40.json"
    items = json.loads(path.read_text(encoding="utf-8"))
    turns: list[str] = []
    for item in items:
        for session in item["haystack_sessions"]:
            turns += [t["content"] for t in session if t["role"] == "user"
                      and 40 <= len(t["content"]) <= 600]  # fmt: skip
    unique = list(dict.fromkeys(turns))[:n]
    return unique, [item["question"] for item in items]


async def seed(base: str, token: str, turns: list[str]) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=600) as c:
        for start in range(0, len(turns), 50):
            inputs = [{"content": t, "extraction": {"events": [{"ref": "e1", "summary": t[:150]}]}}
                      for t in turns[start:start + 50]]  # fmt: skip
            r = await c.post("/graphql", json={"query": SAVE_MANY, "variables": {"inputs": inputs}})
            body = r.json()
            assert not body.get("errors") and not body["data"]["saveMany"]["errors"], body


async def run(args: argparse.Namespace) -> list[Phase]:
    # one token per client: the 4 other clients, then the hostile one
    tokens = [secrets.token_urlsafe(24) for _ in range(5)]
    token, hostile_token = tokens[0], tokens[4]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MNEMOQL_", "DSH_NEO4J"))}
    for key in ("DEEPSEEK_API_KEY", "EMBEDDING_API_KEY", "TYPESAFE_API_KEY"):
        env.pop(key, None)  # offline models: nothing leaves the machine
    env["MNEMOQL_AUTH__TOKENS"] = json.dumps(
        [{"token": t, "space": SPACE, "scopes": ["read", "write"]} for t in tokens]
    )
    env["MNEMOQL_EMBEDDING__PROVIDER"] = args.embedder
    turns, questions = seeds(args.seeds)
    tree = Path(args.tree) if args.tree else ROOT
    phases: list[Phase] = []
    with tempfile.TemporaryDirectory(prefix="mnemoql-hostile-") as tmp:
        port = free_port()
        base = f"http://{HOST}:{port}"
        log = Path(tmp) / "server.log"
        cmd = [sys.executable, "-m", "mnemoql.web.cli", "serve", "--host", HOST,
               "--port", str(port), "--data-dir", str(Path(tmp) / "data"),
               "--log-level", "warning"]  # fmt: skip
        with log.open("wb") as out:
            proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT)
        pool = hostile_pool()
        try:
            await wait_ready(base, proc)
            t0 = time.monotonic()
            await seed(base, token, turns)
            print(f"seeded {len(turns)} memories in {time.monotonic() - t0:.0f} s", file=sys.stderr)
            current = Phase("warm-up")
            stop = asyncio.Event()
            clients = [asyncio.create_task(other_client(
                i, base, tokens[i], questions, args.think, stop, lambda: current))
                for i in range(4)]  # fmt: skip
            await asyncio.sleep(min(5.0, args.seconds))  # warm the caches; not reported
            schedule = ["quiet"]
            for kind in args.kinds:
                schedule += [kind, "quiet"]
            loop = asyncio.get_running_loop()
            for name in schedule:
                current = Phase(name)
                started = time.monotonic()
                print(f"phase {name} ...", file=sys.stderr)
                if name == "quiet":
                    await asyncio.sleep(args.seconds)
                else:
                    current.hostile = await loop.run_in_executor(
                        pool, hostile_client, base, hostile_token, name, args.seconds,
                        args.max_wait,
                    )  # fmt: skip
                current.seconds = time.monotonic() - started
                phases.append(current)
            stop.set()
            await asyncio.gather(*clients)
        finally:
            pool.shutdown(cancel_futures=True)
            stop_server(proc)
        text = log.read_text(encoding="utf-8", errors="replace")
        if args.server_log:
            Path(args.server_log).write_text(text, encoding="utf-8")
    return phases


def report(args: argparse.Namespace, phases: list[Phase], load_at_start: str) -> str:
    rows = []
    quiet = [p for p in phases if p.name == "quiet"]
    for i, p in enumerate(phases):
        if p.name == "quiet":
            continue
        around = [phases[i - 1], phases[i + 1]] if i + 1 < len(phases) else [phases[i - 1]]
        ref = sum(pct(q.latencies, 95) for q in around) / len(around)
        ref_search = sum(pct(q.searches, 95) for q in around) / len(around)
        answers: dict[str, int] = {}
        for _, a in p.hostile:
            answers[a] = answers.get(a, 0) + 1
        shown = ", ".join(f"{a} x{n}" for a, n in answers.items())
        hostile_ms = [s * 1000 for s, _ in p.hostile]
        rows.append([
            KINDS[p.name][0], len(p.hostile), shown, f"{pct(hostile_ms, 50):.0f}",
            len(p.latencies),
            f"{pct(p.latencies, 50) * 1000:.0f} / {pct(p.latencies, 95) * 1000:.0f}",
            f"{ref * 1000:.0f}", f"**{pct(p.latencies, 95) / ref:.2f}x**",
            f"{pct(p.searches, 95) * 1000:.0f} / {ref_search * 1000:.0f}",
            f"{max(p.latencies, default=0) * 1000:.0f}",
            ", ".join(f"{k} x{v}" for k, v in p.errors.items()) or "0",
            f"{p.seconds:.0f}",
        ])  # fmt: skip
    quiet_rows = [[f"quiet {i}", len(q.latencies), f"{pct(q.latencies, 50) * 1000:.0f}",
                   f"{pct(q.latencies, 95) * 1000:.0f}", f"{pct(q.searches, 95) * 1000:.0f}",
                   f"{max(q.latencies, default=0) * 1000:.0f}",
                   ", ".join(f"{k} x{v}" for k, v in q.errors.items()) or "0"]
                  for i, q in enumerate(quiet)]  # fmt: skip
    tree = f"the tree at `{args.tree}`" if args.tree else f"this checkout ({git_rev()})"
    return "\n".join([
        "# Hostile requests: other clients' latency beside a quiet run",
        "",
        f"Command: `{command_line()}`",
        "",
        f"Code: {tree}. Machine: {machine_line(load_at_start)}; load average at the end "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}.",
        f"Server: `mnemoql serve` (one process), embedded store, `--embedder {args.embedder}`, "
        f"offline extractor, {args.seeds} LongMemEval user turns saved. Other clients: 3 "
        f"searchers + 1 lister, {args.think:g} s between requests; phases of {args.seconds:g} s.",
        "",
        table(["hostile request (one at a time)", "sent", "its answers", "its p50 ms",
               "other requests", "others p50 / p95 ms", "quiet p95 ms", "p95 / quiet",
               "searches p95 / quiet ms", "others max ms", "others' errors", "phase s"], rows),
        "",
        "*others* are every request of the 4 other clients; *searches* the 3 searchers' alone "
        "(the lister never waits for the embedder). *quiet* is the mean of the quiet phases "
        "before and after. An error (`TIMEOUT`) counts with its latency.",
        "",
        "Quiet phases (before, between and after the hostile ones):",
        "",
        table(["phase", "requests", "p50 ms", "p95 ms", "searches p95 ms", "max ms", "errors"],
              quiet_rows),
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    p.add_argument("--seeds", type=int, default=300, help="memories saved before the phases")
    p.add_argument("--think", type=float, default=0.1, help="other clients' pause (s)")
    p.add_argument("--max-wait", type=float, default=150.0,
                   help="how long a hostile request may take before the client gives up")
    p.add_argument("--kinds", default=",".join(KINDS),
                   help=f"comma-separated subset of: {', '.join(KINDS)}")
    p.add_argument("--embedder", choices=["local", "hashing"], default="local")
    p.add_argument("--tree", help="run the server from this checkout instead (a baseline)")
    p.add_argument("--server-log", help="keep the server's output in this file")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "hostile.md"))
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    args.kinds = [k for k in args.kinds.split(",") if k]
    unknown = [k for k in args.kinds if k not in KINDS]
    if unknown:
        p.error(f"unknown kinds: {', '.join(unknown)}")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    phases = asyncio.run(run(args))
    publish(report(args, phases, load), args.out, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
