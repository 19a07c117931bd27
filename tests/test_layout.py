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
    graphql = ("strawberry", "graphql", "schema", "resolvers", "web.app", "web.graphql_view")
    for path, name in _imports(ROOT / "web" / "mcp"):
        assert not name.startswith(graphql), f"{path}: imports {name}"
    for folder in ("schema", "resolvers"):
        for path, name in _imports(ROOT / folder):
            assert not name.startswith(("mcp", "web")), f"{path}: imports {name}"


# ---- the store's import graph: two adapters behind one protocol, below retrieval

PRODUCT = ("engine", "schema", "resolvers", "prompts", "web")
STORE = ROOT / "engine" / "store"
ADAPTERS = (STORE / "embedded", STORE / "neo4j")


def _module(path: Path) -> str:
    """`engine/store/neo4j/store.py` -> `engine.store.neo4j.store` (a package by its folder)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _product() -> dict[str, ast.Module]:
    return {
        _module(path): ast.parse(path.read_text(encoding="utf-8"))
        for folder in PRODUCT
        for path in (ROOT / folder).rglob("*.py")
    }


def _arrows(modules: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Each module's imports of ours, to the module imported (`from a import b` is an arrow to
    `a.b` when that is a module), lazy and TYPE_CHECKING imports included: they are arrows too."""
    out: dict[str, set[str]] = {}
    for name, tree in modules.items():
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets.update(_ours(a.name) for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                base = _ours(node.module)
                for a in node.names:
                    targets.add(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base)
        out[name] = targets & modules.keys()
    return out


def _circles(arrows: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in arrows.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(arrows):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_under_the_store() -> None:
    arrows = _arrows(_product())
    store = {m: {t for t in ts if t.startswith("engine.store")}
             for m, ts in arrows.items() if m.startswith("engine.store")}  # fmt: skip
    circles = _circles(store)
    assert not circles, circles


# the save pipeline and the modules of its steps (retrieval imports none of them)
SAVE_PATH = ("engine.ingest", "engine.save_plan", "engine.extraction_input")


def test_the_store_never_imports_what_stands_above_it() -> None:
    """Retrieval, and every engine module that uses the Store protocol, sit above the store;
    a store module importing one of them points an arrow up. Retrieval sits beside the save
    pipeline, not on it: it takes shared rules from below both (`engine.meta`)."""
    arrows = _arrows(_product())
    above = {m for m, ts in arrows.items()
             if m.startswith("engine.") and not m.startswith("engine.store")
             and ("engine.store.base" in ts or m.startswith("engine.retrieval"))}  # fmt: skip
    assert "engine.retrieval.pipeline" in above and "engine.ingest" in above
    up = [f"{module} -> {target}" for module, targets in sorted(arrows.items())
          for target in sorted(targets)
          if (module.startswith("engine.store") and target in above)
          or (module.startswith("engine.retrieval") and target in SAVE_PATH)]  # fmt: skip
    assert not up, "\n".join(up)


def _private_names(adapter: Path) -> dict[str, set[str]]:
    """`_name` -> the modules defining it, for every private attribute and method of the
    adapter's classes (what ``self._name`` assigns or a class body defines)."""
    names: dict[str, set[str]] = {}
    for path in adapter.rglob("*.py"):
        for cls in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(cls, ast.ClassDef):
                continue
            for node in ast.walk(cls):
                name = (
                    node.name if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                    else node.attr if isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name) and node.value.id == "self"
                    and isinstance(node.ctx, ast.Store) else None
                )
                if name and name.startswith("_") and not name.startswith("__"):
                    names.setdefault(name, set()).add(_module(path))
    return names


def test_no_module_outside_an_adapter_touches_its_private_names() -> None:
    """An adapter's private modules are imported only inside its package, and its classes'
    private attributes are read or written only in the module that defines the class (on
    `self`, or another object of that class): helpers reach the database through a public
    runner, and nothing wraps a store to call its private methods."""
    modules = _product()
    arrows = _arrows(modules)
    touches: list[str] = []
    owners: dict[str, set[str]] = {}
    for adapter in ADAPTERS:
        package = _module(adapter / "__init__.py")
        touches += [f"{module} imports {t}" for module, targets in sorted(arrows.items())
                    if not (module + ".").startswith(package + ".")
                    for t in sorted(targets)
                    if t.startswith(package + ".") and t.rpartition(".")[2].startswith("_")]  # fmt: skip
        for name, where in _private_names(adapter).items():
            owners.setdefault(name, set()).update(where)
    for module, tree in sorted(modules.items()):
        for node in ast.walk(tree):
            name = (
                node.attr if isinstance(node, ast.Attribute)
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                else node.args[1].value if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                else None
            )
            if isinstance(name, str) and module not in owners.get(name, {module}):
                where = " or ".join(sorted(owners[name]))
                touches.append(f"{module}:{node.lineno} touches {name} of {where}")
    assert not touches, "\n".join(touches)
