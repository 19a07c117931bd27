"""Schema evolution: ``schema.graphql`` against the SDL of the last release
(``docs/releases/<version>.graphql``) with graphql-inspector's diff (tests/web/js). A change it
rates breaking fails the suite unless CHANGELOG.md names it under ``## Unreleased`` /
``### Breaking`` (CHANGELOG.md, "How schema changes are made")."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from tests.web.served import JS, ROOT, need_js

CHANGELOG = ROOT / "CHANGELOG.md"
RELEASES = ROOT / "docs" / "releases"


def last_release() -> Path:
    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in path.stem.split("."))

    return max(RELEASES.glob("*.graphql"), key=version)


def schema_diff(before: Path, after: Path) -> list[dict[str, Any]]:
    node = need_js("@graphql-inspector/core")
    run = subprocess.run(
        [node, str(JS / "schema-diff.mjs"), str(before), str(after)],
        cwd=JS,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    changes: list[dict[str, Any]] = json.loads(run.stdout)
    return changes


def listed_breaking(changelog: str) -> set[str]:
    """The backticked names under ``### Breaking`` of ``## Unreleased``."""
    unreleased = re.search(r"^## Unreleased\n(.*?)(?=^## )", changelog + "\n## ", re.M | re.S)
    assert unreleased, "CHANGELOG.md has no '## Unreleased' section"
    breaking = re.search(r"^### Breaking\n(.*?)(?=^### |\Z)", unreleased[1], re.M | re.S)
    return set(re.findall(r"`([^`]+)`", breaking[1])) if breaking else set()


def unlisted(changes: list[dict[str, Any]], changelog: str) -> list[str]:
    """The breaking changes the changelog does not name."""
    listed = listed_breaking(changelog)
    return [
        f"{c['path']}: {c['message']}"
        for c in changes
        if c["level"] == "BREAKING" and c["path"] not in listed
    ]


def test_breaking_schema_changes_since_the_last_release_are_in_the_changelog() -> None:
    changes = schema_diff(last_release(), ROOT / "schema.graphql")
    missing = unlisted(changes, CHANGELOG.read_text(encoding="utf-8"))
    assert not missing, (
        "breaking schema changes since the last release, not in CHANGELOG.md (deprecate "
        "first, or name each under '## Unreleased' / '### Breaking'):\n" + "\n".join(missing)
    )


def test_the_check_catches_what_breaks_clients(tmp_path: Path) -> None:
    released = last_release()
    sdl = released.read_text(encoding="utf-8")
    assert "  conceptId: ID!\n" in sdl and "  aliasesAdded: [String!]!\n" in sdl
    changed = tmp_path / "changed.graphql"
    # a removed field, a field whose type changed, a new field, a deprecation
    changed.write_text(
        sdl.replace("type ConceptRef {\n", "type ConceptRef {\n  weight: Float\n", 1)
        .replace("  aliasesAdded: [String!]!\n", "  aliasesAdded: [String]\n", 1)
        .replace('  """The concept\'s id."""\n  conceptId: ID!\n', "", 1)
        .replace("  mismatch: Boolean!\n", '  mismatch: Boolean! @deprecated(reason: "x")\n', 1),
        encoding="utf-8",
    )
    changes = schema_diff(released, changed)
    breaking = {c["path"] for c in changes if c["level"] == "BREAKING"}
    assert breaking == {"ConceptRef.conceptId", "Merge.aliasesAdded"}, changes
    assert "ConceptRef.weight" in {c["path"] for c in changes}
    assert any(c["type"] == "FIELD_DEPRECATION_ADDED" for c in changes), changes  # not breaking
    empty = "# Changelog\n\n## Unreleased\n\n### Added\n\n- `ConceptRef.weight`\n\n## 0.1.0\n"
    assert len(unlisted(changes, empty)) == 2
    one = empty.replace("### Added", "### Breaking\n\n- `ConceptRef.conceptId` is gone\n\n### Added")
    assert [u.split(":")[0] for u in unlisted(changes, one)] == ["Merge.aliasesAdded"]
    # listed under an older release does not count: it must be in Unreleased
    older = empty.replace("## 0.1.0\n", "## 0.1.0\n\n### Breaking\n\n- `Merge.aliasesAdded`\n")
    assert len(unlisted(changes, older)) == 2
