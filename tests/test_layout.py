"""The card's layout: our packages are the ones imported, the SDL snapshot is current, and the
engine never imports the web layers."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import prompts
import schema
from resolvers import schema as gql_schema

ROOT = Path(__file__).resolve().parents[1]


def test_schema_and_prompts_are_our_packages() -> None:
    # PyPI has packages called `schema` and `prompts`; make sure ours win.
    assert Path(schema.__file__).resolve().parent == ROOT / "schema"
    assert Path(prompts.__file__).resolve().parent == ROOT / "prompts"


def test_sdl_snapshot_matches_the_printed_schema() -> None:
    snapshot = ROOT / "schema.graphql"
    printed = gql_schema.as_str() + "\n"
    if os.environ.get("MNEMOQL_UPDATE_SDL") == "1":
        snapshot.write_text(printed, encoding="utf-8")
    assert snapshot.read_text(encoding="utf-8") == printed, (
        "schema.graphql is stale: review the API change, then run "
        "MNEMOQL_UPDATE_SDL=1 pytest tests/test_layout.py"
    )


def test_engine_never_imports_graphql_or_http_layers() -> None:
    banned = {"strawberry", "starlette", "uvicorn", "schema", "resolvers", "web", "graphql"}
    for path in (ROOT / "engine").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in banned, f"{path}: imports {name}"
