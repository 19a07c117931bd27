"""CPU pinning and the scaling table for ``bench.load --pin`` / ``--scaling`` (issue 30).

The target compares searches/s of two ``mnemoql serve`` processes, each pinned to its own core,
with one process pinned to one core. A server is pinned by starting it under ``taskset -c N``:
the affinity is set before the interpreter starts, so every thread it later starts (uvicorn's,
the embedder's workers) and every child it spawns inherits it; setting it on the pid after
``Popen`` would race with the threads the server starts while it boots. ``thread_cpus`` reads
every thread's affinity back, so the report shows the pinning held rather than assuming it.

The load generator (this process) gets the cores no server has, if any; on a 2-core machine
the 2-process case leaves none, so it runs unpinned and shares the servers' cores. The report
says which, and its own CPU use is measured beside the servers'.
"""

from __future__ import annotations

import os
import shutil
import statistics
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def available_cpus() -> list[int]:
    """The CPUs this process may run on, in order (the machine's, less any outer taskset)."""
    return sorted(os.sched_getaffinity(0))


def plan(processes: int, cpus: Sequence[int]) -> tuple[list[int], list[int]]:
    """(the CPU of server i, the CPUs left for the load generator: empty = run unpinned)."""
    if processes > len(cpus):
        raise ValueError(f"{processes} pinned processes need {processes} CPUs, have {len(cpus)}")
    return list(cpus[:processes]), list(cpus[processes:])


def pinned(cmd: list[str], cpu: int | None) -> list[str]:
    """``cmd`` started under ``taskset -c cpu`` (unchanged for ``None``)."""
    if cpu is None:
        return cmd
    taskset = shutil.which("taskset")
    if taskset is None:
        raise RuntimeError("--pin needs taskset (util-linux)")
    return [taskset, "-c", str(cpu), *cmd]


def thread_cpus(pid: int) -> set[int]:
    """The union of the affinities of every thread of ``pid`` (one CPU if the pinning held)."""
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out |= os.sched_getaffinity(int(task.name))
        except (ProcessLookupError, FileNotFoundError):
            continue  # a thread that ended meanwhile
    return out


def thread_count(pid: int) -> int:
    return sum(1 for _ in Path(f"/proc/{pid}/task").iterdir())


@contextmanager
def generator_on(cpus: Sequence[int]) -> Iterator[None]:
    """Run this process (every thread it has now; new ones inherit) on ``cpus`` for the block,
    then restore what it had. Empty ``cpus``: leave it as it is."""
    if not cpus:
        yield
        return
    before = {int(t.name): os.sched_getaffinity(int(t.name)) for t in _tasks()}
    for tid in before:
        os.sched_setaffinity(tid, set(cpus))
    try:
        yield
    finally:
        for task in _tasks():
            tid = int(task.name)
            os.sched_setaffinity(tid, before.get(tid, before[os.getpid()]))


def _tasks() -> list[Path]:
    return list(Path(f"/proc/{os.getpid()}/task").iterdir())


@dataclass
class Case:
    """One row of the scaling table: N pinned processes under the same load."""

    processes: int
    server_cpus: list[int]
    generator_cpus: list[int]  # empty: unpinned
    seconds: float
    searches: int
    p50_ms: float
    p95_ms: float
    follow_ups: int
    follow_ups_ok: int
    cursor_gone: int
    errors: int
    server_cpu_s: float
    generator_cpu_s: float
    other_cpu_s: float
    held: str  # what the servers' threads' affinities read back
    samples: list[str]  # a few error texts
    round: int = 1

    @property
    def rate(self) -> float:
        return self.searches / self.seconds if self.seconds else 0.0


def ratios(cases: list[Case]) -> list[float]:
    """Each case's searches/s over the 1-process case of its own round (same run, same data)."""
    base = {c.round: c.rate for c in cases if c.processes == 1}
    return [c.rate / base[c.round] if base.get(c.round) else float("nan") for c in cases]


def scaling_table(cases: list[Case]) -> str:
    """The markdown table, each row's ratio against its round's one process on one core."""
    rows = [
        "| round | processes | server cores | load generator on | searches/s | p50 ms | p95 ms | "
        "follow-ups ok | cursor expiries | errors | server CPU (cores) | searches per server "
        "core-s | load generator CPU (cores) | other CPU (cores) | x one core | per added core |",
        "|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c, ratio in zip(cases, ratios(cases), strict=True):
        per_added = f"{(ratio - 1) / (c.processes - 1):+.2f}" if c.processes > 1 else "-"
        ok = f"{100 * c.follow_ups_ok / c.follow_ups:.1f} %" if c.follow_ups else "-"
        gen = ",".join(map(str, c.generator_cpus)) if c.generator_cpus else "unpinned (all)"
        per_core_s = c.searches / c.server_cpu_s if c.server_cpu_s else float("nan")
        rows.append(
            f"| {c.round} | {c.processes} | {','.join(map(str, c.server_cpus)) or 'any'} | "
            f"{gen} | {c.rate:.1f} | {c.p50_ms:.0f} | {c.p95_ms:.0f} | {ok} | {c.cursor_gone} | "
            f"{c.errors} | {c.server_cpu_s / c.seconds:.2f} | {per_core_s:.0f} | "
            f"{c.generator_cpu_s / c.seconds:.2f} | {c.other_cpu_s / c.seconds:.2f} | "
            f"{ratio:.2f} | {per_added} |"
        )
    return "\n".join(rows)


def medians(cases: list[Case]) -> list[str]:
    """One line per process count: the median ratio and searches/s over the rounds."""
    by: dict[int, list[tuple[float, float]]] = {}
    for c, ratio in zip(cases, ratios(cases), strict=True):
        by.setdefault(c.processes, []).append((ratio, c.rate))
    return [
        f"- {n} process(es), median of {len(v)} round(s): "
        f"**x{statistics.median(r for r, _ in v):.2f}** one core, "
        f"{statistics.median(s for _, s in v):.1f} searches/s"
        for n, v in sorted(by.items())
    ]


def scaling_report(command: str, machine: str, setup: str, cases: list[Case], pin: bool) -> str:
    """The markdown report of ``bench.load --scaling``."""
    how = (
        "server i under `taskset -c i`, the load generator (the clients: this Python process "
        "on one asyncio loop, or the wrk processes) on the CPUs left, or unpinned when none are"
        if pin
        else "none (the scheduler places everything)"
    )
    shared = sorted({c.processes for c in cases if pin and not c.generator_cpus})
    return "\n".join(
        [
            "# Load: scaling per core (issue 30)",
            "",
            f"Command: `{command}`",
            "",
            f"Machine: {machine}. Timings on a shared machine are noisy: rerun on a quiet one "
            "before quoting the ratio.",
            "",
            f"Each row: {setup}. Pinning: {how}.",
            "",
            scaling_table(cases),
            "",
            *medians(cases),
            "- *searches/s*: `search` requests with a query text answered without an error, per "
            "second (follow-ups on a cursor not counted); p50 / p95 of every `search` request, "
            "measured by the clients. Every searcher has a read token of its own.",
            "- *searches per server core-s*: searches over the servers' CPU seconds (flat if the "
            "work per search does not grow with the processes, whatever else runs).",
            "- *x one core*: searches/s over the 1-process row of the same round; *per added "
            "core*: (that - 1) / the cores added; rounds alternate the process counts.",
            "- Target (issue 30): 2 pinned processes >= 1.7x one, same run.",
            "- *server CPU* / *load generator CPU* / *other CPU*: core-seconds per second of the "
            "load (/proc), for the servers, this process (all the clients), and everything else "
            "on the machine (other work on a shared machine). Server CPU below the server "
            "cores means the servers waited for their own cores: taskset keeps a server on its "
            "core, not other processes off it, so on a busy machine compare *searches per "
            "server core-s* too.",
            *(
                f"- round {c.round}, {c.processes} process(es), read back after the load: {c.held}"
                for c in cases
            ),
            *(
                [
                    "- **The load generator shares the servers' cores** with "
                    f"{' and '.join(map(str, shared))} process(es): no CPU is left for it, "
                    "so it runs unpinned and the CPU it uses (its column) is taken from the "
                    "servers, while in the 1-process row it has a core of its own. On such a "
                    "machine the ratio understates what the servers alone would scale to."
                ]
                if shared
                else []
            ),
            *(
                f"- round {c.round}, {c.processes} process(es), error sample: `{e}`"
                for c in cases
                for e in c.samples
            ),
            "",
        ]
    )
