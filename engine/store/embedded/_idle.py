"""Whether a core this process may run on is idle now: the test a search asks before it hands
its second index search and its lexical route to a side thread (``_routes.route_pool``).

On Linux the answer comes from the idle time of the process's own cores in ``/proc/stat``,
sampled at most every ``SAMPLE_S`` and compared with the previous sample, so it reflects the
last fraction of a second. The 1-minute load average, the rule before this, counts the search
itself: one agent searching back to back keeps it near 1.0 on 2 cores, right at the limit, and
its searches ran both index searches one after the other on one core while the other was idle
(bench/results/search_latency_100k_s21.md). Elsewhere, or when ``/proc/stat`` cannot be read,
the load-average rule stands.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

STAT = Path("/proc/stat")
SAMPLE_S = 0.2  # how often the idle time is read again (the window it is averaged over)
# A side thread is worth its hand-off when at least half a core lay idle: a search of its own
# uses about one core, with the side thread a little more, so the rule does not switch the side
# thread off under the load it adds itself; another busy process takes the idle half away.
IDLE_CORES = 0.5


@dataclass(frozen=True, slots=True)
class Sample:
    at: float
    idle: int  # jiffies the cores spent idle or waiting for I/O
    total: int  # jiffies in all states


def read_sample(cores: frozenset[int], stat: Path = STAT) -> Sample | None:
    """The idle and total time of ``cores`` (the ``cpuN`` lines of ``stat``), or None when
    the file cannot be read or lists none of them."""
    idle = total = 0
    seen = False
    try:
        lines = stat.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or not name[3:].isdigit() or int(name[3:]) not in cores:
            continue
        fields = [int(x) for x in rest.split()]
        # user nice system idle iowait irq softirq steal guest guest_nice: guest time is
        # already counted in user and nice
        idle += sum(fields[3:5])
        total += sum(fields[:8])
        seen = True
    return Sample(time.monotonic(), idle, total) if seen else None


def idle_cores(before: Sample, after: Sample, cores: int) -> float | None:
    """How many of ``cores`` lay idle on average between the two samples (None when no time
    was counted between them)."""
    spent = after.total - before.total
    if spent <= 0:
        return None
    return cores * (after.idle - before.idle) / spent


class IdleCores:
    """The idle cores among this process's over the last ``SAMPLE_S`` or more (``spare``).
    Shared by the threads of every store in the process; two threads that sample at once only
    read the file twice."""

    def __init__(self, stat: Path = STAT, cores: frozenset[int] | None = None) -> None:
        self.stat = stat
        self.fixed = cores  # else the process's affinity, read again at each sample
        self.cores = cores if cores is not None else _affinity()
        self.last = read_sample(self.cores, stat)
        self.idle: float | None = None

    def spare(self) -> bool:
        """True when at least ``IDLE_CORES`` of a core lay idle lately, among at least two
        cores (the load-average rule when the idle time cannot be read)."""
        last = self.last
        if last is None or time.monotonic() - last.at >= SAMPLE_S:
            self._sample()
        if len(self.cores) < 2:  # pinned to one core: a side thread would only share it
            return False
        if self.idle is None:  # no two samples to compare yet, or no /proc/stat
            return _load_allows(len(self.cores))
        return self.idle >= IDLE_CORES

    def _sample(self) -> None:
        cores = self.fixed if self.fixed is not None else _affinity()
        if cores != self.cores:  # pinned elsewhere since: start over on the new cores
            self.cores, self.last, self.idle = cores, None, None
        now = read_sample(cores, self.stat)
        if now is None:
            self.idle = None
        elif self.last is not None:
            idle = idle_cores(self.last, now, len(cores))
            if idle is not None:
                self.idle = idle
        self.last = now


def _affinity() -> frozenset[int]:
    try:
        return frozenset(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return frozenset(range(os.cpu_count() or 1))


def _load_allows(cores: int) -> bool:
    """The rule where no idle time can be read: the 1-minute load average at least one below
    the cores."""
    try:
        return os.getloadavg()[0] <= cores - 1
    except OSError:  # no load average here
        return True


_PROCESS = IdleCores()


def spare_core() -> bool:
    """Whether this process likely has an idle core now (``IdleCores.spare``)."""
    return _PROCESS.spare()
