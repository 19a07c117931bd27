"""``bench.load --pin`` (issue 30): a server started through the pinning helper runs, with every
thread it starts, on its one CPU, and the load generator's pinning is undone afterwards. No
timings: the scaling figures are the bench's, not a test's."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import _pinning
from bench.load import HOST, free_port, start_server, stop_server, wait_ready

CPUS = _pinning.available_cpus()
pytestmark = pytest.mark.skipif(
    len(CPUS) < 2 or not sys.platform.startswith("linux"),
    reason="pinning is only observable with 2+ CPUs on Linux",
)

# a child that starts two threads after it starts, then says so and waits
THREADED = (
    "import threading, time\n"
    "for _ in range(2): threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)


def test_plan_gives_each_server_its_cpu_and_the_rest_to_the_generator() -> None:
    assert _pinning.plan(1, [0, 1, 2, 3]) == ([0], [1, 2, 3])
    assert _pinning.plan(2, [0, 1]) == ([0, 1], [])
    with pytest.raises(ValueError, match="need 3 CPUs"):
        _pinning.plan(3, [0, 1])


def test_a_pinned_child_and_the_threads_it_starts_stay_on_its_cpu() -> None:
    cpu = CPUS[-1]
    cmd = _pinning.pinned([sys.executable, "-c", THREADED], cpu)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        assert os.sched_getaffinity(proc.pid) == {cpu}
        assert _pinning.thread_count(proc.pid) >= 3
        assert _pinning.thread_cpus(proc.pid) == {cpu}
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_unpinned_child_keeps_every_cpu() -> None:
    assert _pinning.pinned(["true"], None) == ["true"]
    proc = subprocess.Popen([sys.executable, "-c", THREADED], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        assert _pinning.thread_cpus(proc.pid) == set(CPUS)
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_a_real_server_started_pinned_runs_all_its_threads_on_one_cpu(tmp_path: Path) -> None:
    cpu = CPUS[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOQL_")}
    env["MNEMOQL_EMBEDDING__PROVIDER"] = "hashing"
    port = free_port()
    proc = start_server(tmp_path / "data", port, env, tmp_path / "server.log", cpu)
    try:
        asyncio.run(wait_ready(f"http://{HOST}:{port}", proc))
        assert _pinning.thread_count(proc.pid) > 1  # uvicorn and the engine's threads
        assert _pinning.thread_cpus(proc.pid) == {cpu}
    finally:
        stop_server(proc)


def test_generator_pinning_is_undone_after_the_block() -> None:
    before = os.sched_getaffinity(0)
    with _pinning.generator_on([CPUS[0]]):
        assert os.sched_getaffinity(0) == {CPUS[0]}
    assert os.sched_getaffinity(0) == before
    with _pinning.generator_on([]):  # no CPU left: unpinned, untouched
        assert os.sched_getaffinity(0) == before


def _case(processes: int, searches: int, round_: int) -> _pinning.Case:
    return _pinning.Case(
        processes, list(range(processes)), [], 10.0, searches, 1.0, 2.0, 0, 0, 0, 0,
        5.0, 1.0, 0.0, "", [], round_,
    )  # fmt: skip


def test_each_ratio_is_against_the_one_process_row_of_its_own_round() -> None:
    cases = [_case(1, 100, 1), _case(2, 180, 1), _case(2, 150, 2), _case(1, 50, 2)]
    assert _pinning.ratios(cases) == [1.0, 1.8, 3.0, 1.0]
    assert "**x2.40** one core" in "\n".join(_pinning.medians(cases))
    table = _pinning.scaling_table(cases).splitlines()
    assert table[3].endswith("| 1.80 | +0.80 |")
