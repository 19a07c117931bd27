"""The card's layout: our packages are the ones imported, the SDL snapshot is current, and the
engine never imports the web layers."""

from __future__ import annotations

import ast
import os
from pathlib import Path

from mnemoql import prompts, schema
from mnemoql.resolvers import schema as gql_schema

ROOT = Path(__file__).resolve().parents[1]


def test_schema_and_prompts_are_our_packages() -> None:
    # PyPI has packages called `schema` and `prompts`; make sure ours win.
    assert Path(schema.__file__).resolve().parent == ROOT / "schema"
    assert schema.__name__ == "mnemoql.schema"
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


def _imports(folder: Path) -> list[tuple[Path, str]]:
    found: list[tuple[Path, str]] = []
    for path in folder.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [(path, _ours(a.name)) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.append((path, _ours(node.module)))
    return found


def _ours(module: str) -> str:
    """`mnemoql.engine.x` -> `engine.x`: the card's folder names, for the rules below."""
    return module.removeprefix("mnemoql.")


def test_every_import_of_ours_goes_through_the_mnemoql_namespace() -> None:
    card = ("engine", "schema", "resolvers", "prompts", "web")
    for folder in (*card, "tests", "bench", "mnemoql"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.is_relative_to(ROOT / "mnemoql") and path.parent != ROOT / "mnemoql":
                continue  # the symlinked folders are checked under their own names
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = (
                    [a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module] if isinstance(node, ast.ImportFrom) and node.module
                    and node.level == 0 else []
                )
                for name in names:
                    assert name.split(".")[0] not in card, f"{path}: imports {name}"


def test_engine_never_imports_graphql_or_http_layers() -> None:
    banned = {"strawberry", "starlette", "uvicorn", "schema", "resolvers", "web", "graphql"}
    for path, name in _imports(ROOT / "engine"):
        assert name.split(".")[0] not in banned, f"{path}: imports {name}"


def test_the_mcp_and_graphql_edges_never_import_each_other() -> None:
    graphql = ("strawberry", "graphql", "schema", "resolvers", "web.app")
    for path, name in _imports(ROOT / "web" / "mcp"):
        assert not name.startswith(graphql), f"{path}: imports {name}"
    for folder in ("schema", "resolvers"):
        for path, name in _imports(ROOT / folder):
            assert not name.startswith(("mcp", "web")), f"{path}: imports {name}"
