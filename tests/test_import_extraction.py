"""A changelog imported as records with the offline defaults (issue #28), end to end: the real
``mnemoql import`` and ``mnemoql export`` as subprocesses, no model keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.engine.test_offline_extractor import CHANGELOG

ROOT = Path(__file__).resolve().parents[1]


def mnemoql(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MNEMOQL_EMBEDDING__PROVIDER": "hashing", "MNEMOQL_DATA_DIR": str(data_dir)}
    env.pop("DEEPSEEK_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "mnemoql.web.cli", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip


def test_a_changelog_import_gives_readable_persons_and_topics(tmp_path: Path) -> None:
    src = tmp_path / "news.jsonl"
    lines = [*CHANGELOG, "y" * 1500]  # positional records: no ids, no extraction
    src.write_text("\n".join(json.dumps({"content": c}) for c in lines), encoding="utf-8")
    data = tmp_path / "data"
    imported = mnemoql("import", str(src), data_dir=data)
    assert imported.returncode == 0, imported.stderr
    dumped = mnemoql("export", "-", data_dir=data)
    assert dumped.returncode == 0, dumped.stderr
    rows: list[dict[str, Any]] = [json.loads(x) for x in dumped.stdout.splitlines()]
    nodes = [r for r in rows if r["kind"] == "node"]
    persons = sorted(n["name"] for n in nodes if n["label"] == "Person")
    # no Person named by a common word ("False", "Fixed", "Patch", "Issue", "Python" ...)
    assert persons == [
        "Caleb Shortt", "Dong-hee Na", "Oren Milman", "Shin-myoung-serp", "Victor Stinner"
    ]  # fmt: skip
    assert not [n for n in nodes if n["label"] == "Location"]  # "Argument Clinic" is none
    concepts = [n["name"] for n in nodes if n["label"] == "Concept"]
    assert len(concepts) <= 2 * len(CHANGELOG)
    # the run of one character is saved but gets no topic; no topic takes every entry
    events = {n["content"]: n["id"] for n in nodes if n["label"] == "Event"}
    bound = {r["event_id"]: r["path"] for r in rows if r["kind"] == "binding"}
    assert events["y" * 1500] not in bound
    paths = list(bound.values())
    assert paths and max(paths.count(p) for p in paths) <= len(CHANGELOG) // 2
    assert not any(set(p.casefold()) <= {"y", "-", ">"} for p in paths)
