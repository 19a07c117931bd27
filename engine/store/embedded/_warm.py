"""Read a large memory's files into the page cache after open, in the background.

A search touches few rows, but they are random: at 1M events (a 7 GB database, 4 GB of vector
mirrors, 1.3 GB of indexes) each search reads ~80 event rows and ~400 mirror rows, and on a
cold page cache each is a disk read. Right after ``mnemoql serve`` starts, that made a search
3x slower than with the pages cached (bench/results/search_latency_1m.md), and random reads
warm a 7 GB file only over hours. One sequential read of the files at open costs a minute of
disk time at 140 MB/s and makes every later search a cache hit, as a database warms its
buffer pool.

The files are read in the order searches need them (ANN indexes, then vector mirrors; never
the SQLite database or its WAL: closing a descriptor of a database file releases the POSIX
locks SQLite holds on it for the whole process, and another process may then write beside
this one's connection, which corrupts the file) and only as far as half the memory the
system reports available: past that the reads would only push each other (and other
programs' pages) out of the cache. Small files are left to the page cache as they are.
``close()`` stops the reading between two blocks.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

BLOCK = 8 << 20  # bytes per read; ``close()`` waits at most one block
MIN_BYTES = 256 << 20  # smaller memories: nothing to do (the cache holds them after a search)
SHARE = 0.5  # of the memory the system reports available


def available_memory() -> int | None:
    """Bytes of memory the system could give the page cache (Linux: MemAvailable), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def files_under(paths: Sequence[Path]) -> list[Path]:
    """The regular files of ``paths`` (files or directories, in order), each once."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out += sorted(f for f in p.rglob("*") if f.is_file())
        elif p.is_file():
            out.append(p)
    return list(dict.fromkeys(out))


class PageWarmer:
    """Reads ``paths`` once on a daemon thread (see the module docstring).

    Args:
        paths: files or directories, most needed first.
        budget: bytes to read at most (default: ``SHARE`` of the available memory).
        min_bytes: read nothing when the files hold fewer bytes than this.
    """

    def __init__(
        self,
        paths: Sequence[Path],
        budget: int | None = None,
        min_bytes: int = MIN_BYTES,
        memory: Callable[[], int | None] = available_memory,
    ) -> None:
        self.paths = list(paths)
        self._budget = budget
        self._min = min_bytes
        self._memory = memory
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.read = 0  # bytes read so far
        self.seconds = 0.0
        self.done = threading.Event()  # set when the reading ended (finished, stopped, skipped)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="mnemoql-warm", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        t0 = time.perf_counter()
        try:
            files = files_under(self.paths)
            total = sum(f.stat().st_size for f in files)
            if total < self._min:
                return
            budget = self._budget
            if budget is None:
                avail = self._memory()
                budget = int(avail * SHARE) if avail is not None else 0
            buf = bytearray(BLOCK)
            for f in files:
                if not self._read(f, buf, budget):
                    break
            log.info(
                "page cache warmed with %d MB of %d MB in %.1f s",
                self.read >> 20,
                total >> 20,
                time.perf_counter() - t0,
            )
        except OSError as exc:  # a file replaced or removed meanwhile: warming is best effort
            log.debug("page cache warm-up stopped: %s", exc)
        finally:
            self.seconds = time.perf_counter() - t0
            self.done.set()

    def _read(self, file: Path, buf: bytearray, budget: int) -> bool:
        """Read ``file`` through; False once the budget is spent or close() was called."""
        with open(file, "rb", buffering=0) as f:
            while not self._stop.is_set():
                if self.read >= budget:
                    return False
                n = f.readinto(buf)
                if not n:
                    return True
                self.read += n
        return False
