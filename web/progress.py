"""Progress bars of the ``mnemoql`` data commands: one line on a terminal, periodic lines
elsewhere (a log file, CI), with records/s and an ETA."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


def eta(remaining: int, rate: float) -> str:
    """``h:mm:ss`` left at ``rate`` records per second (``?`` before the first record)."""
    if remaining <= 0:
        return "0:00:00"
    if rate <= 0:
        return "?"
    seconds = int(remaining / rate + 0.5)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    """A one-line progress bar on a terminal; plain periodic lines elsewhere."""

    def __init__(self, total: int, out: TextIO = sys.stderr, label: str = "saved") -> None:
        self.total, self.out, self.label = total, out, label
        self.done = 0
        self.failed = 0
        self.started = time.monotonic()
        self._last = 0.0

    def advance(self, ok: bool = True) -> None:
        self.done += 1
        self.failed += 0 if ok else 1
        now = time.monotonic()
        if now - self._last >= 0.1 or self.done == self.total:
            self._last = now
            self.draw()

    def draw(self) -> None:
        width = 30
        frac = self.done / self.total if self.total else 1.0
        bar = "#" * int(frac * width)
        rate = self.done / max(time.monotonic() - self.started, 1e-9)
        line = (
            f"[{bar:<{width}}] {self.done}/{self.total} {self.label}, "
            f"{self.failed} failed, {rate:.1f} records/s, ETA {eta(self.total - self.done, rate)}"
        )
        if self.out.isatty():
            self.out.write("\r" + line)
            if self.done == self.total:
                self.out.write("\n")
        elif self.done == self.total or self.done % 100 == 0:
            self.out.write(line + "\n")
        self.out.flush()



def phase_bars() -> Callable[[str, int, int], None]:
    """A progress callback drawing one bar per phase (revectorize's embedding / writing)."""
    bars: dict[str, Progress] = {}

    def progress(phase: str, done: int, total: int) -> None:
        bar = bars.get(phase)
        if bar is None:
            bar = bars[phase] = Progress(total, label=phase)
        while bar.done < done:
            bar.advance()

    return progress
