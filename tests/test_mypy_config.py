"""The mypy configuration keeps every layer of the card under ``strict``: ``web/`` is checked like
``engine/`` and ``resolvers/`` (issue 26), and no ``[[tool.mypy.overrides]]`` quietly relaxes it
again for a web module."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# what `strict = true` turns on (mypy --help); an override setting one of them false relaxes it
STRICT_FLAGS = frozenset(
    {
        "warn_unused_configs",
        "disallow_any_generics",
        "disallow_subclassing_any",
        "disallow_untyped_calls",
        "disallow_untyped_defs",
        "disallow_incomplete_defs",
        "check_untyped_defs",
        "disallow_untyped_decorators",
        "warn_redundant_casts",
        "warn_unused_ignores",
        "warn_return_any",
        "strict_equality",
        "extra_checks",
        "strict",
    }
)


def _mypy() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        config: dict[str, object] = tomllib.load(file)["tool"]["mypy"]
    return config


def _relaxes(key: str, value: object) -> bool:
    """Whether ``key = value`` in an override checks a module less than ``strict`` does."""
    if key in STRICT_FLAGS:
        return value is False
    if key == "follow_imports":
        return value != "normal"  # "silent" hides the module's errors, "skip" the module
    if key in ("ignore_errors", "implicit_reexport") or key.startswith("allow_"):
        return value is True
    if key == "disable_error_code":
        return bool(value)
    return False


def _matches(pattern: str, module: str) -> bool:
    """mypy's override patterns: ``a.b`` exactly, ``a.b.*`` that package and everything under
    it; any other ``*`` is read as fnmatch reads it (wider than mypy, never narrower)."""
    if pattern.endswith(".*") and (module + ".").startswith(pattern[:-1]):
        return True
    return fnmatch.fnmatchcase(module, pattern)


def _web_modules() -> list[str]:
    modules = []
    for path in sorted((ROOT / "web").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules.append(".".join(("mnemoql", *parts)))
    return modules


def test_mypy_checks_every_layer_of_the_card_strictly() -> None:
    config = _mypy()
    assert config.get("strict") is True
    packages = config.get("packages")
    assert isinstance(packages, list)
    for package in ("mnemoql.engine", "mnemoql.resolvers", "mnemoql.web"):
        assert package in packages, f"{package} is not in [tool.mypy] packages"


def test_no_mypy_override_relaxes_strictness_for_web() -> None:
    web = _web_modules()
    assert "mnemoql.web.mcp.server" in web and "mnemoql.web.guards" in web  # the walk works
    overrides = _mypy().get("overrides", [])
    assert isinstance(overrides, list)
    relaxed = []
    for override in overrides:
        patterns = override["module"]
        patterns = [patterns] if isinstance(patterns, str) else patterns
        hit = [m for m in web if any(_matches(p, m) for p in patterns)]
        loose = {k: v for k, v in override.items() if k != "module" and _relaxes(k, v)}
        if hit and loose:
            relaxed.append(f"{patterns} sets {loose} for {hit[0]} (and {len(hit) - 1} more)")
    assert not relaxed, "web/ must stay under strict mypy: " + "; ".join(relaxed)


def test_the_override_check_reads_mypys_patterns() -> None:
    # the cases the check above depends on, so that it cannot pass by matching nothing
    assert _matches("mnemoql.web.*", "mnemoql.web")
    assert _matches("mnemoql.web.*", "mnemoql.web.mcp.server")
    assert _matches("mnemoql.*", "mnemoql.web.app")
    assert _matches("mnemoql.web.app", "mnemoql.web.app")
    assert not _matches("mnemoql.webhooks.*", "mnemoql.web.app")
    assert not _matches("mnemoql.resolvers.*", "mnemoql.web.app")
    assert _relaxes("follow_imports", "silent")
    assert _relaxes("disallow_untyped_defs", False)
    assert _relaxes("ignore_errors", True)
    assert not _relaxes("disallow_untyped_defs", True)
    assert not _relaxes("follow_imports", "normal")


def test_only_named_untyped_libraries_may_be_missing() -> None:
    # a global ignore_missing_imports turns every unresolved import, ours too, into a silent Any
    config = _mypy()
    assert "ignore_missing_imports" not in config
    overrides = config.get("overrides", [])
    assert isinstance(overrides, list)
    for override in overrides:
        if override.get("ignore_missing_imports"):
            patterns = override["module"]
            assert not any(str(p).startswith("mnemoql") for p in patterns), patterns
