"""The README's command-line error example runs as shown: each ``$ ... mnemoql ...`` line of
its ``console`` block prints the next line on stderr and exits with 2."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONSOLE = re.compile(r"^```console\n(.*?)^```", re.M | re.S)


def _examples() -> list[tuple[dict[str, str], list[str], str]]:
    """(environment, arguments, the line printed) of each mnemoql command in the README."""
    found: list[tuple[dict[str, str], list[str], str]] = []
    for block in CONSOLE.findall((ROOT / "README.md").read_text(encoding="utf-8")):
        lines = block.splitlines()
        for n, line in enumerate(lines):
            if not line.startswith("$ ") or "mnemoql " not in line:
                continue
            words = shlex.split(line[2:])
            env = dict(w.split("=", 1) for w in words if "=" in w and w.split("=")[0].isupper())
            args = [w for w in words if not ("=" in w and w.split("=")[0].isupper())]
            assert args[0] == "mnemoql", line
            found.append((env, args[1:], lines[n + 1]))
    return found


def test_the_readme_shows_the_language_setting_and_a_cli_error() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "| language | `MNEMOQL_LOCALE` (`en` or `zh`) | `en` |" in readme
    examples = _examples()
    assert len(examples) >= 2 and any(env.get("MNEMOQL_LOCALE") == "zh" for env, _, _ in examples)
    assert "$ echo $?\n2\n" in readme


def test_the_readme_cli_errors_are_what_the_command_prints(tmp_path: Path) -> None:
    for extra, args, shown in _examples():
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MNEMOQL_", "DSH_"))}
        env.update(MNEMOQL_DATA_DIR=str(tmp_path / "data"), MNEMOQL_EMBEDDING__PROVIDER="hashing")
        env.update(extra)
        run = subprocess.run(
            [str(Path(sys.executable).parent / "mnemoql"), *args],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert run.returncode == 2, run.stderr
        assert run.stderr == shown + "\n", (args, run.stderr)
