"""The benches that read ``bench.search_latency``'s cached corpus (``search_pages``,
``search_hops``, ``ann_beam``, ``search_ab``) refuse a corpus that was never built: one line naming the command that builds
it, exit 2, and nothing created in the cache (an empty memory there would be opened next)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "bench",
    [
        ["bench.search_pages"],
        ["bench.search_hops"],
        ["bench.ann_beam"],
        ["bench.search_ab", "--beam", "2"],
    ],
)
def test_a_corpus_never_built_is_one_line_and_exit_2(bench: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "MNEMOQL_BENCH_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", *bench, "--size", "1234", "--out", str(tmp_path / "out")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "--sizes 1234" in lines[0] and "--build-only" in lines[0]
    assert not (tmp_path / "cache" / "latency-text-like-seed7-1234").exists()
