"""MNEMOQL_NEO4J__SPACE_INDEXES reaches the Neo4j store (no server needed: nothing is opened)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from mnemoql.engine.config import load_settings
from mnemoql.web.neo4j_boot import neo4j_store

BASE = {"MNEMOQL_NEO4J__MODE": "external", "MNEMOQL_NEO4J__URI": "bolt://127.0.0.1:1"}


def store_of(env: dict[str, str]) -> Any:
    return neo4j_store(load_settings({**BASE, **env}))


def test_space_indexes_default_to_auto_and_can_be_turned_off() -> None:
    assert load_settings(BASE).neo4j.space_indexes == "auto"
    assert store_of({}).space_indexes is True
    off = store_of({"MNEMOQL_NEO4J__SPACE_INDEXES": "off"})
    assert off.space_indexes is False
    assert off.index_min_events == 2000  # the routes stay indexed


def test_space_indexes_follow_the_index_threshold() -> None:
    store = store_of({"MNEMOQL_NEO4J__INDEX_MIN_EVENTS": "500"})
    assert (store.space_indexes, store.index_min_events) == (True, 500)


@pytest.mark.parametrize("value", ["on", "exact", ""])
def test_a_bad_space_indexes_value_is_refused(value: str) -> None:
    with pytest.raises(ValidationError, match="space_indexes"):
        load_settings({**BASE, "MNEMOQL_NEO4J__SPACE_INDEXES": value})
