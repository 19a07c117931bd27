"""Real small filesystems for fault tests: a tmpfs of a few MiB (full disks) or mounted
read-only. Mounting needs root or CAP_SYS_ADMIN; without it the test skips with the reason."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_disk(where: Path, size: str = "16m", *, read_only: bool = False) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` until the block ends."""
    where.mkdir(parents=True)
    options = f"size={size}" + (",ro" if read_only else "")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {proc.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path) -> Path:
    """Write a file until the disk is full; returns it (delete it to free the disk)."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as f:
        for size in (1 << 16, 512, 1):  # then the last few bytes
            with contextlib.suppress(OSError):
                while True:
                    f.write(b"\0" * size)
    return filler
