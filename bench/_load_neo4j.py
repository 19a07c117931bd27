"""``bench.load --store neo4j`` (issue 30, item 5): the load against independent replicas over
one Neo4j.

    python -m bench.load --store neo4j --processes 2 --follow-ups 5 --savers 2 --embedder hashing
    python -m bench.load --store neo4j --scaling --rounds 3 --follow-ups 5 --embedder hashing

Each of the N ``mnemoql serve`` processes is configured as docs/operations.md ("Replicas") tells
users to run replicas: ``MNEMOQL_STORE=neo4j MNEMOQL_NEO4J__URI=... MNEMOQL_NEO4J__USER=...
MNEMOQL_NEO4J__PASSWORD=... mnemoql serve --port P`` with access tokens, each with a data
directory of its own (as on separate machines: they share Neo4j and nothing else). The clients
are ``bench.load``'s (searchers, ``--follow-ups`` chains whose every request goes to the next
process, savers, the check of every acknowledged save read back through the API), round robin
without stickiness. The Neo4j server is ``--neo4j-uri`` / ``--neo4j-user`` / ``--neo4j-password``
(by default ``MNEMOQL_TEST_NEO4J_*``, as ``bench.second_writer --store neo4j``); every run gets a
fresh space, dropped afterwards (its nodes, session state and indexes).

**Not pinned.** ``bench.load --pin`` gives each server a core of its own so that the servers'
searches/s can be compared per core. Here the servers' work is only part of a search: Neo4j runs
the retrieval routes and keeps the session state, on the same cores (the shared instance is not
ours to pin, and on a 2-core machine no core would be left for it). So every process is left to
the scheduler and the report measures where the CPU went instead: the servers, Neo4j (when it
runs on this machine: the process listening on the URI's port), the load generator and the rest,
and the searches per core-second of servers and Neo4j together.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from urllib.parse import urlsplit

from bench import _pinning
from bench._common import command_line, load_average
from bench.load import (
    RESULTS,
    SEEDS,
    Outcome,
    case,
    machine,
    pct,
    process_cpu_s,
    run_load,
    table,
    write_report,
)
from bench.second_writer import drop_space

LOCAL = {"localhost", "127.0.0.1", "::1"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        choices=["embedded", "neo4j"],
        default="embedded",
        help="neo4j: independent servers over one Neo4j (a fresh space per run)",
    )
    p.add_argument("--neo4j-uri", default=os.environ.get("MNEMOQL_TEST_NEO4J_URI", ""))
    p.add_argument("--neo4j-user", default=os.environ.get("MNEMOQL_TEST_NEO4J_USER", "neo4j"))
    p.add_argument("--neo4j-password", default=os.environ.get("MNEMOQL_TEST_NEO4J_PASSWORD", ""))


def checked(p: argparse.ArgumentParser, args: argparse.Namespace) -> list[int]:
    """The process counts to run (``p.error`` on a combination this mode does not take)."""
    if not args.neo4j_uri or not args.neo4j_password:
        p.error("--store neo4j needs --neo4j-uri and --neo4j-password (or MNEMOQL_TEST_NEO4J_*)")
    if args.pin:
        p.error("--pin with --store neo4j: Neo4j needs the cores too (see bench/_load_neo4j.py)")
    for flag in ("data_from", "own_data", "own_sessions"):
        if getattr(args, flag):
            p.error(f"--{flag.replace('_', '-')} is for the embedded store only")
    if args.out == p.get_default("out"):  # never over the embedded store's results
        args.out = str(RESULTS / "load_neo4j.md")
    cores = os.cpu_count() or 1
    return [n for n in (1, 2, 4) if n <= cores] if args.scaling else [args.processes]


def listening_pid(port: int) -> int | None:
    """The process on this machine listening on TCP ``port`` (Linux /proc; None if not seen)."""
    sockets: set[str] = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                sockets.add(f"socket:[{cols[9]}]")
    for proc in Path("/proc").iterdir() if sockets else ():
        if proc.name.isdigit():
            try:
                if any(os.readlink(fd) in sockets for fd in (proc / "fd").iterdir()):
                    return int(proc.name)
            except OSError:
                continue  # gone, or not ours to read
    return None


@dataclass
class Neo4jSpace:
    """A fresh space on the Neo4j server: the servers' settings and Neo4j's local pid."""

    uri: str
    user: str
    password: str
    name: str
    pid: int | None  # the local Neo4j process, for its CPU; None when remote or not found
    before: float = 0.0  # its CPU (cores) in the seconds before the run: other users' work

    @staticmethod
    def fresh(args: argparse.Namespace) -> Neo4jSpace:
        url = urlsplit(args.neo4j_uri)
        local = url.hostname in LOCAL and url.port is not None
        pid = listening_pid(url.port) if local and url.port else None
        name = f"load{secrets.token_hex(5)}"
        return Neo4jSpace(args.neo4j_uri, args.neo4j_user, args.neo4j_password, name, pid)

    async def measure_before(self, seconds: float = 5.0) -> None:
        """Neo4j's CPU while this bench sends nothing (a shared server has other users)."""
        if self.pid:
            start = process_cpu_s(self.pid)
            await asyncio.sleep(seconds)
            self.before = (process_cpu_s(self.pid) - start) / seconds

    def env(self) -> dict[str, str]:
        """docs/operations.md's replica settings (the space comes with the tokens)."""
        return {
            "MNEMOQL_STORE": "neo4j",
            "MNEMOQL_NEO4J__URI": self.uri,
            "MNEMOQL_NEO4J__USER": self.user,
            "MNEMOQL_NEO4J__PASSWORD": self.password,
        }


async def main_async(args: argparse.Namespace, counts: list[int]) -> int:
    """Each process count (alternating order per round, as ``--scaling`` does), each run in a
    fresh space dropped afterwards; one report."""
    os.environ["MNEMOQL_TEST_NEO4J_URI"] = args.neo4j_uri  # drop_space reads these
    os.environ["MNEMOQL_TEST_NEO4J_USER"] = args.neo4j_user
    os.environ["MNEMOQL_TEST_NEO4J_PASSWORD"] = args.neo4j_password
    runs: list[tuple[int, Neo4jSpace, Outcome]] = []
    for k in range(1, (args.rounds if args.scaling else 1) + 1):
        for n in counts if k % 2 else counts[::-1]:
            space = Neo4jSpace.fresh(args)
            await space.measure_before()
            print(f"neo4j: round {k}, {n} process(es), space {space.name}", file=sys.stderr)
            try:
                runs.append((k, space, await run_load(args, n, False, space)))
            finally:
                await drop_space(space.name)
    write_report(args, report(args, runs))
    return 0 if all(r.ok for _, _, r in runs) else 1


def row(k: int, space: Neo4jSpace, r: Outcome, base: float) -> str:
    c = case(r, k)
    s, cpu = r.elapsed, r.cpu
    other = max(0.0, cpu.busy_s - cpu.server_s - cpu.clients_s - cpu.store_s)
    work = cpu.server_s + cpu.store_s
    ratio = c.rate / base if base else None
    added = f"{(ratio - 1) / (c.processes - 1):+.2f}" if ratio and c.processes > 1 else "-"
    ok = f"{100 * c.follow_ups_ok / c.follow_ups:.1f} %" if c.follow_ups else "-"
    saves = r.stats.latencies.get("save", [])
    requests = sum(len(x) for x in r.stats.latencies.values())
    return (
        f"| {k} | {c.processes} | {c.rate:.1f} | {c.p50_ms:.0f} | {c.p95_ms:.0f} | "
        f"{c.follow_ups_ok}/{c.follow_ups} ({ok}) | {c.cursor_gone} | {c.errors} | "
        f"{r.check['saves']} ({pct([x * 1000 for x in saves], 95):.0f}) | "
        f"{'yes' if not r.check['problems'] else 'NO'} | {cpu.server_s / s:.2f} | "
        f"{cpu.store_s / s:.2f} ({space.before:.2f}) | {cpu.clients_s / s:.2f} | {other / s:.2f} | "
        f"{c.searches / work if work else float('nan'):.0f} | "
        f"{1000 * cpu.server_s / requests:.0f} / {1000 * cpu.store_s / requests:.0f} | "
        f"{f'{ratio:.2f}' if ratio else '-'} | {added} |"
    )


def medians(cases: list[_pinning.Case]) -> list[str]:
    """Per process count over the rounds: median searches/s and ratio to one process."""
    ratios = dict(zip(map(id, cases), _pinning.ratios(cases), strict=True))
    counts = sorted({c.processes for c in cases})
    if 1 not in counts or counts == [1]:
        return []  # nothing to compare
    return [
        f"- {n} process(es), median of {len(of)} round(s): {median(c.rate for c in of):.1f} "
        f"searches/s, **x{median(ratios[id(c)] for c in of):.2f}** one process"
        for n in counts
        for of in [[c for c in cases if c.processes == n]]
    ]


def report(args: argparse.Namespace, runs: list[tuple[int, Neo4jSpace, Outcome]]) -> str:
    base = {k: r.stats.answered["search"] / r.elapsed for k, _, r in runs if r.processes == 1}
    first, last = runs[0][2], runs[-1][2]
    where = (
        f"Neo4j at `{args.neo4j_uri}` (pid {runs[0][1].pid}, its CPU measured)"
        if runs[0][1].pid
        else f"Neo4j at `{args.neo4j_uri}` (not on this machine, or its process not seen: "
        "its CPU is in *other*)"
    )
    cases = [case(r, k) for k, _, r in runs]
    return "\n".join(
        [
            "# Load on Neo4j: independent replicas, round robin (issue 30)",
            "",
            f"Command: `{command_line()}`",
            "",
            f"Machine: {machine()}. Load average at the start {first.load_at_start}, at the "
            f"end {last.load_at_end} (now {load_average()}).",
            "",
            f"Each row: N independent `mnemoql serve` processes, each with a data directory of "
            f"its own, over one {where}, configured as docs/operations.md's *Replicas* says "
            "(`MNEMOQL_STORE=neo4j`, `MNEMOQL_NEO4J__URI` / `__USER` / `__PASSWORD`, access "
            f"tokens), a fresh space per row (dropped after it); `--embedder {args.embedder}` "
            f"({first.model}); {args.searchers} searchers"
            + (
                f" each running chains of a search and {args.follow_ups} follow-ups (the next "
                "page and expand in turn), every request on the next process"
                if args.follow_ups
                else ", each on one process"
            )
            + f", + {args.savers} savers (round robin over the processes) for "
            f"{args.seconds:.0f} s after {SEEDS} seed saves; queries: "
            + ("every text new" if args.fresh_queries else "fixed questions")
            + ". Not pinned: Neo4j needs the same cores (bench/_load_neo4j.py).",
            "",
            "| round | processes | searches/s | p50 ms | p95 ms | follow-ups ok | cursor "
            "expiries | errors | saves acked (p95 ms) | every save once, exact content | "
            "servers CPU (cores) | Neo4j CPU (cores; in the 5 s before) | load generator CPU "
            "(cores) | other CPU (cores) | searches per core-s (servers + Neo4j) | CPU ms per "
            "request: servers / Neo4j | x one process | per added process |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
            *(row(k, space, r, base.get(k, 0.0)) for k, space, r in runs),
            "",
            *medians(cases),
            "- *searches/s*: `search` requests with a query text answered without an error "
            "(follow-ups not counted); p50 / p95 of every `search`, measured by the clients. "
            "*follow-ups ok*: follow-ups answered without an error; *cursor expiries*: "
            "`CURSOR_EXPIRED` / `CURSOR_INVALID` answers (the issue's target is 0).",
            "- *every save once*: each acknowledged save read back by id through the API "
            "(from Neo4j): exactly once, with the content sent; the event count is seeds + saves.",
            "- CPU columns: core-seconds per second of the load (/proc): the servers, the Neo4j "
            "process (in brackets: in the 5 s before the row, when this bench sent nothing: "
            "other users of a shared server), this process (all the clients), everything "
            "else on the machine. *CPU ms "
            "per request*: the servers' and Neo4j's CPU over every request the clients sent "
            "(searches, follow-ups, saves, replays, event lists).",
            *(
                f"- round {k}, {r.processes} process(es), {label}: {x}"
                for k, _, r in runs
                for label, xs in (("problem", r.check["problems"]), ("error", r.stats.errors[:3]))
                for x in xs
            ),
            "",
            "Per operation, per row (client-side latencies, queueing included):",
            "",
            *(
                f"Round {k}, {r.processes} process(es), {r.elapsed:.0f} s:\n\n"
                f"{table(r.stats, r.elapsed)}\n"
                for k, _, r in runs
            ),
        ]
    )
