"""Load: 50 searching + 10 saving clients against a real server for a bounded time.

    python -m bench.load                    # 60 s, 50 searchers, 10 savers, the default embedder
    python -m bench.load --seconds 20 --embedder hashing
    python -m bench.load --model-batches 1,2,4,8,16   # the local model alone: time per query
    python -m bench.load --processes 2 --follow-ups 5 --savers 0   # replicas (issue 30)

``mnemoql serve`` runs in a subprocess on 127.0.0.1 (a free port, a fresh data directory, access
tokens: the savers write with a write token, the searchers read with a read token). Every client
is its own ``httpx.AsyncClient`` with its own connection. Searchers mostly search, sometimes
expand along a concept their last page offered, sometimes list events. Savers save distinct
notes, each with a unique caller id and an idempotency key, and re-send every fifth save with
the same key (it must be replayed, not saved twice).

With ``--processes N``, N independent ``mnemoql serve`` processes share the memory's data
directory and every request goes to the next one (round robin, no stickiness). With
``--follow-ups K`` each searcher instead runs chains: a search (resetting its session), then K
follow-ups on the page's cursor (the next page, ``search(cursor:)``, and ``expand`` in turn),
each on the next process; the report counts how many follow-ups succeeded and how many met a
cursor that was gone (``CURSOR_EXPIRED`` / ``CURSOR_INVALID``).

Afterwards every acknowledged save is checked by id: it exists exactly once, with the exact
content that was sent, and the event count equals seeds + distinct saves (nothing lost, nothing
duplicated). Latency percentiles are per operation, measured by the clients. Traffic goes to
loopback only; every loop stops at the deadline, and the server is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from bench import _pinning, _spy, _wrk
from bench._common import command_line, load_average

if TYPE_CHECKING:
    from bench._load_neo4j import Neo4jSpace

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
HOST = "127.0.0.1"
SPACE = "load"
SEEDS = 40
MAX_REQUESTS_PER_CLIENT = 100_000  # a second bound besides the deadline

SEARCH = (
    "query($q: String!, $s: String!, $r: Boolean!) { search(query: $q, session: $s, "
    "resetSeen: $r) { cursor items { eventId quote { text } } expandConcepts text } }"
)
EXPAND = (
    "query($c: String!, $id: ID!, $s: String!) { expand(cursor: $c, conceptId: $id, "
    "session: $s) { cursor items { eventId } text } }"
)
NEXT = (
    "query($c: String!, $s: String!) { search(cursor: $c, session: $s) { cursor items { eventId } "
    "expandConcepts } }"
)
FOLLOW_UPS = ("next page", "expand (follow-up)")
EVENTS = "{ events(first: 20) { totalCount edges { node { id summary } } } }"
SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds replayed createdPersons } }"
PEOPLE = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "李雷", "韩梅梅"]
PLACES = ["Berlin", "Hangzhou", "Lisbon", "Oslo", "Kyoto", "Toronto", "上海", "成都"]
TOPICS = [
    "the Neo4j migration",
    "offline sync with CRDTs",
    "the backup policy",
    "vector indexes",
    "the release checklist",
    "search latency",
    "the onboarding guide",
    "cost of embeddings",
    "图数据库的部署",
    "周报的格式",
]
QUERIES = [
    "what did we decide about the Neo4j migration?",
    "who worked on offline sync",
    "backup policy in Berlin",
    "vector index latency",
    "release checklist owner",
    "图数据库部署在哪里",
    "embedding cost",
    "onboarding guide for new people",
    "Alice Hangzhou",
    "what happened in Kyoto",
    "周报",
    "CRDT conflicts",
]


def note(rng: random.Random, saver: int, n: int) -> str:
    who, other = rng.sample(PEOPLE, 2)
    return (
        f"{who}: note {n} from saver {saver}. In {rng.choice(PLACES)} we discussed "
        f"{rng.choice(TOPICS)} with {other}; the decision was to "
        f"{rng.choice(['ship it', 'wait a week', 'measure first', 'ask the team'])}. "
        f"(ref {saver}-{n}-{rng.randrange(10**6)})"
    )


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    error_count: int = 0
    # documented outcomes a client handles, not failures: a cursor that is gone (past its TTL
    # or the session state's budget; before issue 30, evicted by the others' newer ones past
    # 32 per process) -> "run search again"
    expected: Counter[str] = field(default_factory=Counter)
    follow_ups: int = 0  # follow-ups sent (--follow-ups)
    follow_ups_ok: int = 0  # ... answered without an error
    answered: Counter[str] = field(default_factory=Counter)  # per operation, without an error

    def error(self, what: str) -> None:
        self.error_count += 1
        if len(self.errors) < 20:
            self.errors.append(what[:400])


@dataclass
class Saved:
    caller_id: str
    key: str
    content: str
    event_ids: list[str]


# ---------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def copy_memory(src: Path, data: Path) -> int:
    """Copy a memory (``memory.db`` and its ``.ann`` index directory, as bench.search_latency
    caches them) into ``data`` as the bench's space; its event count."""
    data.mkdir(parents=True)
    dst = data / f"memory-{SPACE}.db"
    with sqlite3.connect(str(src)) as conn:  # a consistent copy, WAL included
        with sqlite3.connect(str(dst)) as out:
            conn.backup(out)
        count = int(conn.execute("SELECT COUNT(*) FROM nodes WHERE label = 'Event'").fetchone()[0])
    ann = src.with_name(src.name + ".ann")
    if ann.is_dir():
        shutil.copytree(ann, dst.with_name(dst.name + ".ann"))
    return count


def start_server(
    data: Path, port: int, env: dict[str, str], log: Path, cpu: int | None = None
) -> subprocess.Popen[bytes]:
    """``mnemoql serve`` on ``port``; with ``cpu``, it and all its threads on that CPU alone."""
    cmd = [
        sys.executable,
        "-m",
        "mnemoql.web.cli",
        "serve",
        "--host",
        HOST,
        "--port",
        str(port),
        "--data-dir",
        str(data),
        "--log-level",
        "warning",
    ]
    out = log.open("wb")
    return subprocess.Popen(
        _pinning.pinned(cmd, cpu), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
    )


async def wait_ready(base: str, proc: subprocess.Popen[bytes], timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient(base_url=base, timeout=2.0) as c:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with {proc.returncode}")
            try:
                if (await c.get("/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.2)
    raise RuntimeError(f"the server was not ready within {timeout_s:.0f} s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


# ---------------------------------------------------------------- clients


async def gql(
    c: httpx.AsyncClient, stats: Stats, op: str, query: str, variables: dict[str, Any]
) -> dict[str, Any] | None:
    t0 = time.perf_counter()
    try:
        r = await c.post("/graphql", json={"query": query, "variables": variables})
    except httpx.HTTPError as exc:
        stats.error(f"{op}: {type(exc).__name__}: {exc}")
        return None
    stats.latencies[op].append(time.perf_counter() - t0)
    if r.status_code != 200:
        stats.error(f"{op}: HTTP {r.status_code}: {r.text}")
        return None
    body: dict[str, Any] = r.json()
    if body.get("errors"):
        codes = {(e.get("extensions") or {}).get("code") for e in body["errors"]}
        if op == "expand" and len(codes) == 1 and codes <= {"CURSOR_INVALID", "CURSOR_EXPIRED"}:
            stats.expected[f"expand: cursor gone ({codes.pop()})"] += 1
            return None
        gone = {"CURSOR_INVALID", "CURSOR_EXPIRED"}
        if op in FOLLOW_UPS and len(codes) == 1 and codes <= gone:
            stats.expected[f"follow-up: cursor gone ({codes.pop()})"] += 1
            return None
        stats.error(f"{op}: {json.dumps(body['errors'], ensure_ascii=False)}")
        return None
    stats.answered[op] += 1
    data: dict[str, Any] = body["data"]
    return data


_FRESH = "today yesterday budget owner plan risk team week review Berlin Kyoto notes status "
FRESH_WORDS = tuple((_FRESH + "decision deadline migration backup latency index release").split())


def query_text(rng: random.Random, fresh: bool) -> str:
    """One of the fixed questions; with ``fresh`` three random words make every text new, so
    no query vector can come from the server's cache."""
    q = rng.choice(QUERIES)
    return f"{q} {' '.join(rng.sample(FRESH_WORDS, 3))}" if fresh else q


async def searcher(
    i: int, base: str, token: str, deadline: float, stats: Stats, seed: int, fresh: bool
) -> None:
    rng = random.Random(seed * 1000 + i)
    headers = {"Authorization": f"Bearer {token}"}
    last: dict[str, Any] | None = None
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120.0) as c:
        for n in range(MAX_REQUESTS_PER_CLIENT):
            if time.monotonic() >= deadline:
                return
            roll = rng.random()
            session = f"searcher-{i}"
            if roll < 0.1 and last and last.get("cursor") and last.get("expandConcepts"):
                await gql(
                    c,
                    stats,
                    "expand",
                    EXPAND,
                    {"c": last["cursor"], "id": last["expandConcepts"][0], "s": session},
                )
                last = None
            elif roll < 0.2:
                await gql(c, stats, "events", EVENTS, {})
            else:
                variables = {"q": query_text(rng, fresh), "s": session, "r": n % 4 == 0}
                data = await gql(c, stats, "search", SEARCH, variables)
                last = data["search"] if data else None


async def follower(
    i: int,
    bases: list[str],
    token: str,
    deadline: float,
    stats: Stats,
    seed: int,
    fresh: bool,
    follow_ups: int,
) -> None:
    """An agent that searches, then follows the page up ``follow_ups`` times (the next page
    and expand in turn), every request on the next process."""
    rng = random.Random(seed * 1000 + i)
    headers = {"Authorization": f"Bearer {token}"}
    session = f"follower-{i}"
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(
                httpx.AsyncClient(base_url=b, headers=headers, timeout=120.0)
            )
            for b in bases
        ]
        turn = i
        for _ in range(MAX_REQUESTS_PER_CLIENT):
            if time.monotonic() >= deadline:
                return
            turn += 1
            variables = {"q": query_text(rng, fresh), "s": session, "r": True}
            data = await gql(clients[turn % len(clients)], stats, "search", SEARCH, variables)
            page = data["search"] if data else None
            for k in range(follow_ups):
                if page is None or not page.get("cursor") or time.monotonic() >= deadline:
                    break
                turn += 1
                c = clients[turn % len(clients)]
                stats.follow_ups += 1
                if k % 2 and page.get("expandConcepts"):
                    ids = {"c": page["cursor"], "id": page["expandConcepts"][0], "s": session}
                    data = await gql(c, stats, "expand (follow-up)", EXPAND, ids)
                    page = data["expand"] if data else None
                else:
                    data = await gql(
                        c, stats, "next page", NEXT, {"c": page["cursor"], "s": session}
                    )
                    page = data["search"] if data else None
                stats.follow_ups_ok += data is not None


async def saver(
    i: int,
    base: str,
    token: str,
    deadline: float,
    stats: Stats,
    run: str,
    seed: int,
    saved: list[Saved],
) -> None:
    rng = random.Random(seed * 7919 + i)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=660.0) as c:
        for n in range(MAX_REQUESTS_PER_CLIENT):
            if time.monotonic() >= deadline:
                return
            item = {
                "content": note(rng, i, n),
                "id": f"load_s{i:02d}_e{n:05d}",
                "idempotencyKey": f"{run}:{i}:{n}",
            }
            data = await gql(c, stats, "save", SAVE, {"input": item})
            if data is None:
                continue
            result = data["save"]
            if result["replayed"] or result["eventIds"] != [item["id"]]:
                stats.error(f"save {item['id']}: unexpected result {result}")
                continue
            saved.append(
                Saved(item["id"], item["idempotencyKey"], item["content"], result["eventIds"])
            )
            if n % 5 == 4:  # the client retries: same key, must be replayed
                again = await gql(c, stats, "save (replay)", SAVE, {"input": item})
                if again is not None and (
                    not again["save"]["replayed"] or again["save"]["eventIds"] != result["eventIds"]
                ):
                    stats.error(f"replay {item['id']}: {again['save']}")


async def describe_models(base: str, token: str) -> str:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30.0) as c:
        q = "{ memoryIndex { model dimensions embedder extractor } }"
        info = (await c.post("/graphql", json={"query": q})).json()["data"]["memoryIndex"]
    return (
        f"embedder {info['embedder']} (`{info['model']}`, {info['dimensions']} dims), "
        f"extractor {info['extractor']}"
    )


async def same_events(base: str, token: str, n: int) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60.0) as c:
        body = (await c.post("/graphql", json={"query": EVENTS})).json()
    found = body["data"]["events"]["totalCount"]
    if found != n:
        raise RuntimeError(f"{base} sees {found} events, not the {n} seeded")


async def seed_memory(base: str, token: str, n: int) -> None:
    rng = random.Random(1)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=600.0) as c:
        for k in range(n):
            variables = {"input": {"content": note(rng, 99, k), "idempotencyKey": f"seed:{k}"}}
            r = await c.post("/graphql", json={"query": SAVE, "variables": variables})
            body = r.json()
            if r.status_code != 200 or body.get("errors"):
                raise RuntimeError(f"seeding failed: {r.status_code} {body}")


# ---------------------------------------------------------------- verification


async def verify(
    base: str, token: str, saved: list[Saved], seeds: int, list_all: bool = True
) -> dict[str, Any]:
    """Every acknowledged save exists once, with its content; the totals add up. A large
    memory (``--data-from``) is not listed event by event: its total is checked instead."""
    headers = {"Authorization": f"Bearer {token}"}
    problems: list[str] = []
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120.0) as c:
        all_ids: list[str] = []
        after: str | None = None
        total = 0
        while True:
            q = (
                "query($a: String) { events(first: 100, after: $a) { totalCount "
                "edges { node { id } } pageInfo { hasNextPage endCursor } } }"
            )
            body = (await c.post("/graphql", json={"query": q, "variables": {"a": after}})).json()
            page = body["data"]["events"]
            total = page["totalCount"]
            all_ids += [e["node"]["id"] for e in page["edges"]]
            if not page["pageInfo"]["hasNextPage"] or not list_all:
                break
            after = page["pageInfo"]["endCursor"]
        seen = Counter(all_ids)
        dup = [i for i, k in seen.items() if k > 1]
        if dup:
            problems.append(f"ids listed more than once: {dup[:10]}")
        expected = Counter(s.caller_id for s in saved)
        if any(k > 1 for k in expected.values()):
            problems.append("a caller id was acknowledged twice")
        missing = [s.caller_id for s in saved if seen[s.caller_id] != 1] if list_all else []
        if missing:
            problems.append(f"{len(missing)} acknowledged saves missing: {missing[:10]}")
        if total != seeds + len(saved) or (list_all and len(all_ids) != total):
            problems.append(
                f"event count {total} (listed {len(all_ids)}) != {seeds} seeds + {len(saved)} saves"
            )
        # the exact content of every save, 100 at a time
        q = (
            "query($ids: [ID!]!) { nodes(ids: $ids) { id ... on Event { "
            "content(limit: 10000) { text } } } }"
        )
        wrong = 0
        for start in range(0, len(saved), 100):
            part = saved[start : start + 100]
            body = (
                await c.post(
                    "/graphql", json={"query": q, "variables": {"ids": [s.caller_id for s in part]}}
                )
            ).json()
            for s, node in zip(part, body["data"]["nodes"], strict=True):
                if node is None or node["content"]["text"] != s.content:
                    wrong += 1
        if wrong:
            problems.append(f"{wrong} saves with missing or different content")
    return {"events": total, "saves": len(saved), "problems": problems}


# ---------------------------------------------------------------- report


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


def table(stats: Stats, seconds: float) -> str:
    rows = [
        "| operation | requests | per second | p50 ms | p95 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    order = ["search", "expand", "events", "save", "save (replay)"]
    for op in order + sorted(set(stats.latencies) - set(order)):
        lat = stats.latencies.get(op)
        if not lat:
            continue
        ms = [x * 1000 for x in lat]
        rows.append(
            f"| {op} | {len(ms)} | {len(ms) / seconds:.1f} | {pct(ms, 50):.0f} | "
            f"{pct(ms, 95):.0f} | {pct(ms, 99):.0f} | {max(ms):.0f} |"
        )
    return "\n".join(rows)


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads) so far; 0 off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu_s() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, all cores; zeros off Linux."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
    except OSError:
        return 0.0, 0.0
    ticks = [int(x) for x in first[1:9]]  # user nice system idle iowait irq softirq steal
    tck = os.sysconf("SC_CLK_TCK")
    return (sum(ticks) - ticks[3] - ticks[4]) / tck, sum(ticks) / tck


@dataclass
class CpuUse:
    """Where the machine's CPU went during the load: the server, the clients, the rest."""

    server_s: float
    clients_s: float
    busy_s: float
    total_s: float
    store_s: float = 0.0  # a local Neo4j's (--store neo4j), else 0

    @staticmethod
    def now(*server_pids: int, store: int | None = None) -> CpuUse:
        busy, total = machine_cpu_s()
        server = sum(process_cpu_s(pid) for pid in server_pids)
        store_s = process_cpu_s(store) if store else 0.0
        return CpuUse(server, time.process_time(), busy, total, store_s)

    def __sub__(self, other: CpuUse) -> CpuUse:
        return CpuUse(
            self.server_s - other.server_s,
            self.clients_s - other.clients_s,
            self.busy_s - other.busy_s,
            self.total_s - other.total_s,
            self.store_s - other.store_s,
        )

    def line(self, seconds: float) -> str:
        if self.total_s <= 0:
            return "- CPU: not measured (no /proc)"
        other = max(0.0, self.busy_s - self.server_s - self.clients_s - self.store_s)
        idle = max(0.0, self.total_s - self.busy_s)
        return (
            f"- CPU during the load ({self.total_s / seconds:.1f} cores x {seconds:.0f} s = "
            f"{self.total_s:.0f} core-s): server {self.server_s:.0f} core-s "
            f"({self.server_s / seconds:.2f} cores), clients {self.clients_s:.0f}, "
            + (f"Neo4j {self.store_s:.0f}, " if self.store_s else "")
            + f"other processes {other:.0f}, idle {idle:.0f}"
        )


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, {platform.system()}"
    )


@dataclass
class Outcome:
    """What one load run measured, for the single report and the scaling table."""

    processes: int
    server_cpus: list[int | None]
    generator_cpus: list[int]
    stats: Stats
    check: dict[str, Any]
    cpu: CpuUse
    elapsed: float
    model: str
    before: int
    load_at_start: str
    load_at_end: str
    tracebacks: int
    held: str  # the servers' threads' affinities, read back ("" unpinned)
    wrk: list[_wrk.WrkResult] = field(default_factory=list)  # --generator wrk: one per server

    @property
    def ok(self) -> bool:
        return self.stats.error_count == 0 and not self.check["problems"] and not self.tracebacks


def server_env(args: argparse.Namespace, tokens: list[dict[str, Any]]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MNEMOQL_", "DSH_NEO4J"))}
    for key in ("DEEPSEEK_API_KEY", "EMBEDDING_API_KEY", "TYPESAFE_API_KEY"):
        env.pop(key, None)  # offline models: no traffic beyond loopback
    env["MNEMOQL_AUTH__TOKENS"] = json.dumps(tokens)
    env["MNEMOQL_EMBEDDING__PROVIDER"] = args.embedder
    for setting in args.set:
        key, _, value = setting.partition("=")
        env[key] = value
    return env


async def run_load(
    args: argparse.Namespace, processes: int, pin: bool, neo4j: Neo4jSpace | None = None
) -> Outcome:
    """``processes`` servers over a fresh copy of the same data (or ``neo4j``'s space), the load,
    the check. With ``pin``, server i on CPU i and this process on the CPUs left (if any)."""
    run, space = secrets.token_hex(4), neo4j.name if neo4j else SPACE
    write_token, read_token = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    tokens = [
        {"token": write_token, "space": space, "scopes": ["read", "write"]},
        {"token": read_token, "space": space, "scopes": ["read"]},
    ]
    # with --follow-ups or --scaling every agent has a read token of its own (the per-client
    # fair share then applies to each agent, not to all fifty as one client: a scaling run
    # measures the servers, not that one client's in-flight cap)
    own = bool(args.follow_ups or args.scaling)
    agent_tokens = [secrets.token_urlsafe(24) for _ in range(args.searchers if own else 0)]
    tokens += [{"token": t, "space": space, "scopes": ["read"]} for t in agent_tokens]
    env = server_env(args, tokens) | (neo4j.env() if neo4j else {})
    server_cpus: list[int | None] = [None] * processes
    generator_cpus: list[int] = []
    if pin:
        cpus, generator_cpus = _pinning.plan(processes, _pinning.available_cpus())
        server_cpus = list(cpus)
    stats = Stats()
    saved: list[Saved] = []
    load_at_start = load_average()
    with tempfile.TemporaryDirectory(prefix="mnemoql-load-") as tmp:
        data, log = Path(tmp) / "data", Path(tmp) / "server.log"
        # diagnostics: --own-data gives each server its own copy (nothing shared between them),
        # --own-sessions its own directory whose space database is a symlink to the first's
        # (the database shared, each session file ``<db>-sessions`` its own)
        apart = args.own_data or args.own_sessions or neo4j is not None
        datas = [data.with_name(f"data-{n}") if apart else data for n in range(processes)]
        for d in dict.fromkeys(datas if args.own_data else datas[:1]):
            before = copy_memory(Path(args.data_from), d) if args.data_from else 0
        for d in datas[1:] if args.own_sessions else []:
            d.mkdir(parents=True)
            db = f"memory-{SPACE}.db"
            (d / db).symlink_to(datas[0] / db)
        ports = [free_port() for _ in range(processes)]
        bases = [f"http://{HOST}:{port}" for port in ports]
        base = bases[0]
        logs = [log.with_name(f"server-{n}.log") for n in range(processes)]
        procs = [
            start_server(d, port, env, lg, cpu)
            for d, port, lg, cpu in zip(datas, ports, logs, server_cpus, strict=True)
        ]
        proc = procs[0]
        try:
            t0 = time.monotonic()
            for b, p in zip(bases, procs, strict=True):
                await wait_ready(b, p)
            ready_s = time.monotonic() - t0
            for b in bases if args.own_data else [base]:
                await seed_memory(b, write_token, SEEDS)
            for b in bases if args.own_sessions else []:  # the symlink held: all see the seeds
                await same_events(b, read_token, SEEDS)
            model = await describe_models(base, read_token)
            print(
                f"{processes} server(s) ready in {ready_s:.1f} s; {SEEDS} seed saves; "
                f"{args.searchers} searchers + {args.savers} savers for {args.seconds} s"
                + (f"; servers on CPUs {server_cpus}" if pin else ""),
                file=sys.stderr,
            )
            with _pinning.generator_on(generator_cpus):
                started = time.monotonic()
                store_pid = neo4j.pid if neo4j else None
                cpu_at_start = CpuUse.now(*(p.pid for p in procs), store=store_pid)
                spy = (
                    _spy.start_py_spy(args.py_spy, proc.pid, args.seconds) if args.py_spy else None
                )
                deadline = started + args.seconds
                by_wrk = args.generator == "wrk"
                wrk_run = (
                    asyncio.to_thread(
                        _wrk.run,
                        bases,
                        agent_tokens or [read_token],
                        args.searchers * (processes if args.per_server else 1),
                        args.seconds,
                        Path(tmp),
                        _wrk.script(SEARCH, QUERIES, list(FRESH_WORDS)),
                        args.seed,
                        generator_cpus,
                    )
                    if by_wrk
                    else None
                )
                searchers = (
                    follower(
                        i,
                        bases,
                        agent_tokens[i],
                        deadline,
                        stats,
                        args.seed,
                        args.fresh_queries,
                        args.follow_ups,
                    )
                    if args.follow_ups
                    else searcher(
                        i,
                        bases[i % len(bases)],
                        agent_tokens[i] if agent_tokens else read_token,
                        deadline,
                        stats,
                        args.seed,
                        args.fresh_queries,
                    )
                    for i in range(0 if by_wrk else args.searchers)
                )
                wrks: list[_wrk.WrkResult] = []

                async def generated() -> None:
                    if wrk_run is not None:
                        wrks.extend(await wrk_run)

                await asyncio.gather(
                    generated(),
                    *searchers,
                    *(
                        saver(
                            i,
                            bases[i % len(bases)],
                            write_token,
                            deadline,
                            stats,
                            run,
                            args.seed,
                            saved,
                        )
                        for i in range(args.savers)
                    ),
                )
                elapsed = time.monotonic() - started
                cpu = CpuUse.now(*(p.pid for p in procs), store=store_pid) - cpu_at_start
                if wrks:  # wrk's own CPU is the generator's; its duration is the load's
                    cpu.clients_s += sum(w.cpu_s for w in wrks)
                    elapsed = max(w.seconds for w in wrks)
                    stats.answered["search"] += sum(w.answered for w in wrks)
                    failed = sum(w.failed for w in wrks)
                    if failed:
                        stats.error(f"search (wrk): {failed} not answered (HTTP != 200 or errors)")
                        stats.error_count += failed - 1
            held = "; ".join(
                f"server {n}: {_pinning.thread_count(p.pid)} threads on CPUs "
                f"{sorted(_pinning.thread_cpus(p.pid))}"
                for n, p in enumerate(procs)
            )
            if spy is not None:
                spy.wait(timeout=60)
            check = await verify(base, read_token, saved, before + SEEDS, not before)
        finally:
            for p in procs:
                stop_server(p)
        server_log = "".join(lg.read_text(encoding="utf-8", errors="replace") for lg in logs)
        if args.server_log:
            Path(args.server_log).write_text(server_log, encoding="utf-8")
    return Outcome(
        processes,
        server_cpus,
        generator_cpus,
        stats,
        check,
        cpu,
        elapsed,
        model,
        before,
        load_at_start,
        load_average(),
        server_log.count("Traceback"),
        held if pin else "",
        wrks,
    )


def write_report(args: argparse.Namespace, report: str) -> None:
    print(report)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(report, encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)


def pin_line(r: Outcome) -> str:
    gen = (
        f"CPUs {r.generator_cpus}"
        if r.generator_cpus
        else "no CPU left: unpinned, sharing the servers' cores"
    )
    return (
        f"- pinned (taskset -c, read back per thread after the load): {r.held}; the load "
        f"generator (this process, {r.cpu.clients_s / r.elapsed:.2f} cores): {gen}"
    )


def case(r: Outcome, k: int) -> _pinning.Case:
    lat = [x * 1000 for x in r.stats.latencies.get("search", [])]
    p50, p95 = pct(lat, 50), pct(lat, 95)
    if r.wrk:
        p50, p95 = _wrk.merged_percentile(r.wrk, 50), _wrk.merged_percentile(r.wrk, 95)
    return _pinning.Case(
        r.processes,
        [c for c in r.server_cpus if c is not None],
        r.generator_cpus,
        r.elapsed,
        r.stats.answered["search"],
        p50,
        p95,
        r.stats.follow_ups,
        r.stats.follow_ups_ok,
        sum(n for what, n in r.stats.expected.items() if "cursor gone" in what),
        r.stats.error_count + len(r.check["problems"]) + r.tracebacks,
        r.cpu.server_s,
        r.cpu.clients_s,
        max(0.0, r.cpu.busy_s - r.cpu.server_s - r.cpu.clients_s),
        r.held or "not pinned",
        r.stats.errors[:2],
        k,
    )


async def scaling_async(args: argparse.Namespace) -> int:
    """1 process on 1 core, then 2 on 2 (and 4 on 4 where the machine has them), back to back,
    each on a fresh copy of the same data with the same clients, seeds and queries."""
    cpus = _pinning.available_cpus() if args.pin else list(range(os.cpu_count() or 1))
    counts = [n for n in (1, 2, 4) if n <= len(cpus)]
    results, cases = [], []
    for k in range(1, args.rounds + 1):
        for n in counts if k % 2 else counts[::-1]:  # alternate: drift hits both alike
            print(f"scaling: round {k}, {n} process(es)", file=sys.stderr)
            results.append(await run_load(args, n, args.pin))
            cases.append(case(results[-1], k))
    first = results[0]
    setup = (
        (
            "N independent `mnemoql serve` processes, **each over its own copy** of the data "
            "(`--own-data`: a diagnostic, they share no file; "
            if args.own_data
            else "N independent `mnemoql serve` processes over one space database, **each with "
            "its own session file** (`--own-sessions`: a diagnostic; "
            if args.own_sessions
            else "N independent `mnemoql serve` processes over a fresh copy of the same data ("
        )
        + f"{SEEDS} seed saves, same seeds), embedded store, `--embedder {args.embedder}` "
        f"({first.model}); "
        f"{args.searchers} searchers"
        + (f" x {args.follow_ups} follow-ups" if args.follow_ups else "")
        + f" + {args.savers} savers for {args.seconds:.0f} s, round robin; queries: "
        + ("every text new" if args.fresh_queries or args.generator == "wrk" else "fixed questions")
        + (
            "; load generator: wrk (one per server, 1 thread, "
            + (
                "searchers connections each"
                if args.per_server
                else "searchers / processes connections"
            )
            + ", searches only: `bench/_wrk.py`)"
            if args.generator == "wrk"
            else "; load generator: this Python process (httpx clients)"
        )
    )
    report = _pinning.scaling_report(
        command_line(),
        f"{machine()}. Load average at the start {first.load_at_start}, at the end "
        f"{results[-1].load_at_end}",
        setup,
        cases,
        args.pin,
    )
    write_report(args, report)
    return 0 if all(r.ok for r in results) else 1


async def main_async(args: argparse.Namespace) -> int:
    if args.scaling:
        return await scaling_async(args)
    r = await run_load(args, args.processes, args.pin)
    stats, check, before, elapsed, model = r.stats, r.check, r.before, r.elapsed, r.model
    load_at_start, tracebacks, cpu = r.load_at_start, r.tracebacks, r.cpu
    ok = r.ok
    report = "\n".join(
        [
            "# Load: concurrent searching and saving",
            "",
            f"Command: `{command_line()}`",
            "",
            f"Machine: {machine()}. Server: `mnemoql serve` (uvicorn), "
            + (
                "one process"
                if args.processes == 1
                else f"{args.processes} independent processes over one data directory, each "
                "request to the next (round robin)"
            )
            + f" on {HOST}, "
            f"embedded store, `--embedder {args.embedder}`: {model}; access tokens on.",
            f"Clients: {args.searchers} searchers ("
            + ("each its own read token" if args.follow_ups else "read token")
            + f") + {args.savers} savers "
            f"(write token), each its own httpx client, for {elapsed:.1f} s "
            f"after {SEEDS} seed saves"
            + (f" into a copy of `{args.data_from}` ({before:,} events)" if before else "")
            + "; queries: "
            + (
                "every text new (a fixed question + 3 random words)"
                if args.fresh_queries
                else f"{len(QUERIES)} fixed questions"
            )
            + f". Load average at the start {load_at_start}, at the end {r.load_at_end}.",
            "",
            table(stats, elapsed),
            "",
            cpu.line(elapsed),
            *([pin_line(r)] if args.pin else []),
            f"- errors: **{stats.error_count}** (HTTP, GraphQL or transport); server tracebacks: "
            f"{tracebacks}",
            *(
                [
                    f"- follow-ups: {stats.follow_ups_ok} of {stats.follow_ups} answered "
                    f"(**{100 * stats.follow_ups_ok / max(1, stats.follow_ups):.1f} %**); "
                    f"{args.follow_ups} per search, the next page and expand in turn, each on "
                    "the next process"
                ]
                if args.follow_ups
                else []
            ),
            *(
                f"- expected, not errors: {what}: {n} (a cursor past its TTL or the session "
                "state's budget; the client runs search again)"
                for what, n in stats.expected.items()
            ),
            f"- acknowledged saves: {check['saves']} (each re-sent once in five with its "
            "idempotency key: replayed, not duplicated); events afterwards: "
            f"{check['events']} = {before + SEEDS:,} before + {check['saves']} saves",
            f"- checked by id: every save exists exactly once with the exact content sent: "
            f"**{'yes' if not check['problems'] else 'NO'}**",
            *(f"- problem: {p}" for p in check["problems"]),
            *(f"- error sample: `{e}`" for e in stats.errors[:5]),
            "",
            *(
                [
                    f"py-spy ({_spy.SPY_RATE} Hz, every thread, on CPU or not; its own sampling "
                    "takes CPU too): where each thread's time went",
                    "",
                    _spy.spy_breakdown(args.py_spy, _spy.SPY_RATE),
                    "",
                ]
                if args.py_spy and Path(args.py_spy).is_file()
                else []
            ),
            "Latencies are measured by the clients (request sent to response parsed), so they "
            "include queueing: the server is one Python process whose event loop runs the query "
            "embeddings, the saves' extraction and embedding and the GraphQL work for all the "
            "clients, and the clients share the machine's cores with it. A single search on an "
            "idle server is far faster (bench/results/search_latency.md); this run measures "
            "correctness and throughput under contention.",
            "",
        ]
    )
    write_report(args, report)
    return 0 if ok else 1


def model_batches(sizes: list[int], queries: int = 240, seed: int = 7) -> str:
    """The local model alone, one OpenMP thread per engine as the server runs it: model time per
    fresh query (``query_text``'s shape) when ``n`` queries share each call, on one engine and
    on two engines at once (the server's two workers), twice over. A markdown table."""
    import threading

    from mnemoql.engine.providers.local import LocalEmbedder

    emb = LocalEmbedder(threads=1, workers=2)
    rng = random.Random(seed)
    engines = [emb._load_engine() for _ in range(2)]
    rows: list[str] = []

    def run(engine: Any, texts: list[str], n: int, out: list[float]) -> None:
        if engine.set_threads is not None:
            engine.set_threads(1)
        wall, cpu = time.perf_counter(), time.thread_time()
        for i in range(0, len(texts), n):
            engine.engine.encode(texts[i : i + n], True)
        out += [time.perf_counter() - wall, time.thread_time() - cpu]

    for e in engines:  # warm: weights paged in
        run(e, [query_text(rng, True) for _ in range(8)], 4, [])
    tokens = [engines[0].engine.token_count(query_text(rng, True), True) for _ in range(200)]
    for rep in (1, 2):
        for n in sizes:
            for count in (1, 2):
                results: list[list[float]] = [[] for _ in range(count)]
                threads = [
                    threading.Thread(
                        target=run,
                        args=(engines[i], [query_text(rng, True) for _ in range(queries)], n, r),
                    )
                    for i, r in enumerate(results)
                ]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                wall = max(r[0] for r in results)
                cpu = sum(r[1] for r in results) / count
                rows.append(
                    f"| {rep} | {count} | {n} | {1000 * wall / queries:.1f} | "
                    f"{1000 * cpu / queries:.1f} | {count * queries / wall:.0f} |"
                )
    head = (
        f"Fresh queries of {min(tokens)}-{max(tokens)} tokens (mean "
        f"{sum(tokens) / len(tokens):.1f}), {queries} per engine per row.\n\n"
        "| round | engines at once | queries per call | wall ms per query per engine | "
        "CPU ms per query | queries/s together |\n|---:|---:|---:|---:|---:|---:|\n"
    )
    return head + "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    from bench import _load_neo4j  # it runs the load through this module's run_load

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=60.0, help="duration of the load (default 60)")
    p.add_argument("--searchers", type=int, default=50)
    p.add_argument("--savers", type=int, default=10)
    p.add_argument(
        "--processes", type=int, default=1, help="independent serve processes (round robin)"
    )
    p.add_argument(
        "--follow-ups",
        type=int,
        default=0,
        help="searchers run chains: a search, then this many follow-ups on its cursor",
    )
    p.add_argument(
        "--embedder",
        choices=["auto", "local", "hashing"],
        default="auto",
        help="the server's embedder (auto: the local model where it can run)",
    )
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--pin",
        action="store_true",
        help="server i on CPU i alone (taskset), the load generator on the CPUs left",
    )
    p.add_argument(
        "--rounds", type=int, default=1, help="with --scaling: repeat the cases (medians)"
    )
    p.add_argument(
        "--scaling",
        action="store_true",
        help="1 process, then 2 (and 4 with 4+ CPUs), back to back; a table of the ratio",
    )
    p.add_argument(
        "--fresh-queries", action="store_true", help="make every search text new (no cache hits)"
    )
    p.add_argument(
        "--generator",
        choices=["python", "wrk"],
        default="python",
        help="the searchers: httpx clients in this process, or wrk (C; fresh texts, searches "
        "only, one wrk per server: bench/_wrk.py)",
    )
    p.add_argument(
        "--per-server",
        action="store_true",
        help="with --generator wrk: --searchers connections to each server (the same queue "
        "depth per process whatever their count), not --searchers in all",
    )
    p.add_argument(
        "--own-data",
        action="store_true",
        help="a diagnostic, not the deployment: each server its own copy of the data (and its "
        "own session file), so the processes share nothing; needs --savers 0",
    )
    p.add_argument(
        "--own-sessions",
        action="store_true",
        help="a diagnostic: the servers share the space's database (a symlink) but each has "
        "its own session file",
    )
    p.add_argument("--server-log", help="keep the server's output in this file")
    p.add_argument(
        "--py-spy",
        default="",
        metavar="FILE",
        help="sample the server with py-spy (pip install py-spy) during the load into FILE "
        "(collapsed stacks per thread)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="MNEMOQL_X=V",
        help="a setting for the server, e.g. MNEMOQL_EMBEDDING__WORKERS=2 (repeatable)",
    )
    p.add_argument(
        "--data-from",
        default="",
        help="serve a copy of this memory.db (e.g. a bench.search_latency corpus) instead of "
        "an empty memory",
    )
    p.add_argument(
        "--out", default=str(RESULTS / "load.md"), help="the markdown report ('' for none)"
    )
    p.add_argument(
        "--model-batches",
        default="",
        metavar="N,N,...",
        help="no server: time the local model alone with N fresh queries per call and print "
        "a table (how much sharing a call saves)",
    )
    _load_neo4j.add_arguments(p)
    args = p.parse_args(argv)
    if args.model_batches:
        try:
            sizes = [int(n) for n in args.model_batches.split(",")]
        except ValueError:
            p.error(f"--model-batches takes whole numbers, e.g. 1,2,4 (got {args.model_batches!r})")
        if not sizes or min(sizes) < 1 or max(sizes) > 64:
            p.error("--model-batches sizes must be between 1 and 64")
        print(model_batches(sizes))
        return 0
    if not 1 <= args.processes <= 8:
        p.error("--processes must be between 1 and 8")
    if args.pin and not args.scaling and args.processes > len(_pinning.available_cpus()):
        p.error(f"--pin needs a CPU per process: {len(_pinning.available_cpus())} available")
    if args.pin and not shutil.which("taskset"):
        p.error("--pin needs taskset (util-linux)")
    if not 1 <= args.rounds <= 20:
        p.error("--rounds must be between 1 and 20")
    if args.generator == "wrk" and not _wrk.available():
        p.error("--generator wrk needs wrk (apt-get install wrk)")
    if args.own_data and args.own_sessions:
        p.error("--own-data already gives each server its own session file")
    if args.own_data and args.savers:
        p.error("--own-data needs --savers 0 (the check reads one server's memory)")
    if args.per_server and args.generator != "wrk":
        p.error("--per-server needs --generator wrk")
    if args.generator == "wrk" and args.follow_ups:
        p.error("--generator wrk sends searches only: drop --follow-ups")
    if args.scaling and args.processes != 1:
        p.error("--scaling chooses the process counts itself: drop --processes")
    if not 0 <= args.follow_ups <= 20:
        p.error("--follow-ups must be between 0 and 20")
    if not 1 <= args.seconds <= 3600:
        p.error("--seconds must be between 1 and 3600")
    for setting in args.set:
        if not setting.startswith("MNEMOQL_") or "=" not in setting:
            p.error(f"--set takes MNEMOQL_NAME=value (got {setting!r})")
    if args.store == "neo4j":
        return asyncio.run(_load_neo4j.main_async(args, _load_neo4j.checked(p, args)))
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    raise SystemExit(main())
