"""bench/README.md's command block names every runnable bench with a one-line command, and
its helper line every other module, so a new bench cannot go unlisted."""

from __future__ import annotations

import re
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _block() -> list[str]:
    text = (BENCH / "README.md").read_text(encoding="utf-8")
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_every_runnable_bench_has_a_one_line_command() -> None:
    runnable = {
        p.stem
        for p in BENCH.glob("*.py")
        if not p.stem.startswith("_") and "__main__" in p.read_text(encoding="utf-8")
    }
    listed = {m for line in _block() for m in re.findall(r"-m bench\.(\w+)", line)}
    assert runnable - listed == set(), "add a line to bench/README.md's command block"
    assert listed <= runnable  # no stale command
    assert all(" # " in line or "  #" in line for line in _block()), "one line: command # what"


def test_every_other_bench_module_is_named_as_a_helper() -> None:
    text = (BENCH / "README.md").read_text(encoding="utf-8")
    helpers = text.split("Helpers, not commands:", 1)[1].split("\n\n", 1)[0]
    others = {
        p.name
        for p in BENCH.glob("*.py")
        if p.stem != "__init__" and "__main__" not in p.read_text(encoding="utf-8")
    }
    assert {name for name in others if f"`{name}`" not in helpers} == set()
