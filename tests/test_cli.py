"""The mnemoql command: import with a progress bar."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "MNEMOQL_EMBEDDING__PROVIDER": "hashing",
        "MNEMOQL_DATA_DIR": str(data_dir),
    }
    env.pop("DEEPSEEK_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "mnemoql.web.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_saves_every_line_and_reports_progress(tmp_path: Path) -> None:
    lines = [
        {"content": f"Alice wrote note {i} in Berlin.", "idempotency_key": f"k{i}"}
        for i in range(12)
    ]
    lines.append({"content": "第三章第二条", "id": "book_ch3_e02"})
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines), encoding="utf-8")
    data = tmp_path / "data"
    first = _run("import", str(src), data_dir=data)
    assert first.returncode == 0, first.stderr
    assert "13/13 lines, 0 failed" in first.stderr
    assert re.search(r"13/13 lines, 0 failed, [0-9.]+ records/s, ETA 0:00:00", first.stderr)
    assert "13 saved, 0 skipped, 0 failed of 13 lines" in first.stderr
    again = _run("import", str(src), data_dir=data)  # idempotency keys: no duplicates
    assert again.returncode == 0, again.stderr  # the line with a caller id is a replay too
    assert "0 saved, 13 skipped, 0 failed of 13 lines" in again.stderr


def test_import_rejects_a_malformed_line_before_writing(tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text('{"content": "ok"}\n{"contnt": "typo"}\n', encoding="utf-8")
    out = _run("import", str(src), data_dir=tmp_path / "d")
    assert out.returncode == 2 and "bad.jsonl:2" in out.stderr


def test_revectorize_command_switches_the_model_with_progress(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"content": "Alice moved to Berlin."}\n{"content": "Bob stayed in Paris."}\n', encoding="utf-8")
    data = tmp_path / "data"
    assert _run("import", str(src), data_dir=data).returncode == 0
    env = {**os.environ, "MNEMOQL_EMBEDDING__PROVIDER": "hashing", "MNEMOQL_DATA_DIR": str(data)}
    out = subprocess.run(
        [sys.executable, "-m", "mnemoql.web.cli", "revectorize"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "embedding" in out.stderr and "revectorized with hashing-bigram-v1/384: 2 events" in out.stderr


def test_a_wrong_setting_is_refused_with_its_variable_not_a_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "MNEMOQL_DATA_DIR": str(tmp_path), "MNEMOQL_EMBEDDING__THREADS": "0"}
    out = subprocess.run(
        [sys.executable, "-m", "mnemoql.web.cli", "serve", "--port", "1"], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 2
    assert "invalid settings" in out.stderr and "Traceback" not in out.stderr
    assert "MNEMOQL_EMBEDDING__THREADS" in out.stderr and "from 1 to 256" in out.stderr and "'0'" in out.stderr
    env["MNEMOQL_EMBEDDING__THREADS"] = "2"
    env["MNEMOQL_PORT"] = "not-a-port"
    out = subprocess.run(
        [sys.executable, "-m", "mnemoql.web.cli", "serve"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 2 and "port (MNEMOQL_PORT)" in out.stderr and "Traceback" not in out.stderr


def test_eta_reads_hours_minutes_seconds() -> None:
    from mnemoql.web.progress import eta

    assert eta(0, 5.0) == "0:00:00"
    assert eta(10, 0.0) == "?"
    assert eta(3_700, 1.0) == "1:01:40"
    assert eta(90, 2.0) == "0:00:45"
