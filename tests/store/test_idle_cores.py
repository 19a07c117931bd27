"""Whether a core is idle (``_idle``): the test that decides if a search hands its second index
search to a side thread. Read from the idle time of the process's own cores in /proc/stat, not
from the load average (which counts the search itself)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from mnemoql.engine.store.embedded import _idle
from mnemoql.engine.store.embedded._idle import IdleCores, idle_cores, read_sample


def _stat(path: Path, *cpus: tuple[int, int]) -> None:
    """A /proc/stat whose ``cpuN`` line N has (busy user time, idle time) ``cpus[N]``, a few
    jiffies of iowait and steal, and the lines that are not per-core."""
    lines = [f"cpu  {sum(b for b, _ in cpus)} 0 0 {sum(i for _, i in cpus)} 0 0 0 0 0 0"]
    lines += [f"cpu{n} {busy} 0 0 {idle} 5 0 0 3 7 0" for n, (busy, idle) in enumerate(cpus)]
    lines += ["intr 1 2 3", "ctxt 42", "btime 1700000000", "procs_running 1"]
    path.write_text("\n".join(lines) + "\n")


def test_a_sample_counts_only_the_cores_this_process_may_use(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    _stat(stat, (100, 900), (500, 500), (1000, 0))
    got = read_sample(frozenset({0, 1}), stat)
    assert got is not None
    # idle + iowait of cpu0 and cpu1; total = user .. steal (guest is inside user already)
    assert (got.idle, got.total) == (900 + 5 + 500 + 5, (100 + 900 + 5 + 3) + (500 + 500 + 5 + 3))
    assert read_sample(frozenset({7}), stat) is None  # none of its lines
    assert read_sample(frozenset({0}), tmp_path / "missing") is None


def test_idle_cores_between_two_samples(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    both = frozenset({0, 1})
    _stat(stat, (1000, 1000), (1000, 1000))
    before = read_sample(both, stat)
    # then cpu0 busy all along (100 jiffies) and cpu1 idle all along (100)
    _stat(stat, (1100, 1000), (1000, 1100))
    after = read_sample(both, stat)
    assert before is not None and after is not None
    assert idle_cores(before, after, 2) == pytest.approx(1.0, rel=1e-9)
    assert idle_cores(after, after, 2) is None  # no time between them


def test_spare_when_half_a_core_lay_idle_and_not_when_both_were_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_idle, "SAMPLE_S", 0.0)  # every call samples again
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 9.0, 9.0))  # the old rule: never
    stat = tmp_path / "stat"
    _stat(stat, (0, 0), (0, 0))
    cores = IdleCores(stat, frozenset({0, 1}))
    # one search's own thread: cpu0 busy, cpu1 idle, and a little of cpu1 for the side thread
    _stat(stat, (100, 0), (30, 70))
    assert cores.spare()
    assert cores.idle == pytest.approx(2 * 70 / 200, rel=1e-9)
    # another process took the second core
    _stat(stat, (200, 0), (125, 75))
    assert not cores.spare()
    assert cores.idle == pytest.approx(2 * 5 / 200, rel=1e-9)


def test_the_load_average_rule_stands_where_no_idle_time_can_be_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_idle, "SAMPLE_S", 0.0)
    cores = IdleCores(tmp_path / "missing", frozenset({0, 1}))
    monkeypatch.setattr(os, "getloadavg", lambda: (0.9, 0.0, 0.0))
    assert cores.spare()
    monkeypatch.setattr(os, "getloadavg", lambda: (1.2, 0.0, 0.0))
    assert not cores.spare()


def test_a_process_pinned_to_one_core_never_hands_work_to_a_side_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_idle, "SAMPLE_S", 0.0)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    stat = tmp_path / "stat"
    _stat(stat, (0, 0), (0, 0))
    cores = IdleCores(stat, frozenset({0}))
    _stat(stat, (0, 100), (0, 100))  # idle, but a side thread would share the one core
    assert not cores.spare()


def test_pinning_elsewhere_starts_over_on_the_new_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_idle, "SAMPLE_S", 0.0)
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 9.0, 9.0))
    affinity = {0, 1}
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(affinity), raising=False)
    stat = tmp_path / "stat"
    _stat(stat, (0, 0), (0, 0), (0, 0), (0, 0))
    cores = IdleCores(stat)
    _stat(stat, (100, 0), (100, 0), (0, 100), (0, 100))  # 0 and 1 busy, 2 and 3 idle
    assert not cores.spare()
    affinity.clear()
    affinity.update({2, 3})
    assert not cores.spare()  # a first sample of the new cores: the (busy) load rule
    _stat(stat, (200, 0), (200, 0), (0, 200), (0, 200))
    assert cores.spare()
    assert cores.cores == frozenset({2, 3})
    assert cores.idle == pytest.approx(2.0, rel=1e-9)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/stat is Linux's")
def test_this_machines_idle_time_is_read() -> None:
    cores = IdleCores()
    time.sleep(_idle.SAMPLE_S + 0.05)
    cores.spare()
    assert cores.idle is not None
    assert -0.05 <= cores.idle <= len(cores.cores) + 0.05
