"""The bench's bulk writer (``bench.neo4j_spaces --write bulk``) writes what ``apply_save``
writes: the 10 x 100,000 measurement is only honest if it does. Live: needs
``MNEMOQL_TEST_NEO4J_*`` (see factory_neo4j.py)."""

from __future__ import annotations

import pytest

from bench.neo4j_spaces import check_bulk, plan_records, space_plans
from bench.search_latency import TextLikeVectors
from tests.store import factory_neo4j


def test_plan_records_allocate_ids_as_a_save_does() -> None:
    records = list(plan_records(space_plans(5, 1_500, TextLikeVectors())))
    nodes = [r for r in records if r["kind"] == "node"]
    assert [r["id"] for r in nodes[:2]] == ["event_1", "event_2"]
    # the first plan's 1,000 events, then its 500 concepts, then the second plan's events
    assert nodes[1_000]["id"] == "concept_1" and nodes[1_500]["id"] == "event_1001"
    assert records[0]["kind"] == "meta" and len(nodes) == 2_000


async def test_the_bulk_writer_writes_the_graph_of_apply_save() -> None:
    reason = factory_neo4j.unreachable()
    if reason is not None:
        pytest.skip(f"neo4j store unavailable: {reason}")
    t = factory_neo4j.target()
    assert t is not None
    verdict = await check_bulk((t.uri, t.user, t.password), 300, TextLikeVectors())
    assert "identical" in verdict
