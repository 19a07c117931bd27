"""The README's examples run: every ``python`` block as a script (the ``Client`` one against a
real ``mnemoql serve``), and every ``graphql`` block of the README and docs/operations.md is
validated against the schema. So they cannot rot when the API changes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import graphql
import pytest

from mnemoql.resolvers import schema as gql_schema
from tests.web.served import served

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.M | re.S)
README_URL = "http://127.0.0.1:8000"


def blocks(language: str, path: Path = ROOT / "README.md") -> list[str]:
    return [body for lang, body in FENCE.findall(path.read_text()) if lang == language]


def run(code: str, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MNEMOQL_", "DSH_"))}
    for name in ("DEEPSEEK_API_KEY", "EMBEDDING_API_KEY", "TYPESAFE_API_KEY", "PYTHONPATH"):
        env.pop(name, None)
    env["MNEMOQL_EMBEDDING__PROVIDER"] = "hashing"  # fast and deterministic; the rest as shipped
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, f"{code}\n---\n{result.stderr}"
    return result.stdout


def test_the_readme_has_the_python_examples() -> None:
    found = blocks("python")
    assert len(found) == 3, [b.splitlines()[:3] for b in found]
    assert "Memory(" in found[0] and "SyncMemory(" in found[1] and "Client(" in found[2]


def test_the_in_process_examples_run(tmp_path: Path) -> None:
    first, second, _ = blocks("python")
    out = run(first, tmp_path).splitlines()
    assert out[0].startswith("event_1 Alice: I moved to Berlin"), out
    assert out[-1] == "Alice: I mov 12", out
    out = run(second, tmp_path).splitlines()  # the same ./my-memory, another session
    assert any("event_1" in line for line in out), out
    assert out[-1] == "NOT_FOUND no event with id 'event_999'", out
    assert list((tmp_path / "my-memory").glob("memory*.db"))


def test_the_client_example_runs_against_a_server(tmp_path: Path) -> None:
    (_, _, client) = blocks("python")
    assert README_URL in client
    with served(tmp_path / "data") as server:
        out = run(client.replace(README_URL, server.url), tmp_path)
    assert out.splitlines() == ["['event_1'] True"], out


@pytest.mark.parametrize(
    "document", blocks("graphql") + blocks("graphql", ROOT / "docs" / "operations.md")
)
def test_the_graphql_examples_fit_the_schema(document: str) -> None:
    errors = graphql.validate(gql_schema._schema, graphql.parse(document))
    assert errors == [], errors
