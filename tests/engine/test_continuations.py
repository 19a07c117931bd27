"""The order of a page's expand entries: concepts named by the query first."""

from __future__ import annotations

from engine.retrieval.evidence import ConceptRef, EvidenceItem, continuations
from engine.retrieval.terms import query_terms


def item(event_id: str, *concepts: tuple[str, str]) -> EvidenceItem:
    return EvidenceItem(
        event_id=event_id,
        create_time="2026-01-01T00:00:00Z",
        time=None,
        summary="s",
        concepts=tuple(ConceptRef(cid, name) for cid, name in concepts),
    )


ITEMS = [
    item("s1_ch1_e0", ("concept_1", "weather"), ("concept_2", "bike ride")),
    item("event_9", ("concept_3", "charity cycling event"), ("concept_1", "weather")),
    item("s1_ch1_e2", ("concept_4", "fundraising goal")),
]


def test_without_terms_concepts_keep_their_order_of_mention() -> None:
    got = continuations(ITEMS)
    assert got.expand_concepts == ("concept_1", "concept_2", "concept_3", "concept_4")
    assert got.nearby_events == ("s1_ch1_e0", "s1_ch1_e2")


def test_concepts_named_by_the_query_come_first_then_the_most_mentioned() -> None:
    terms = query_terms("How much more money did I raise than my goal in the charity cycling event?")
    got = continuations(ITEMS, terms)
    # 3 of the query's terms in "charity cycling event", 1 in "fundraising goal", then
    # "weather" (two items) before "bike ride" (one)
    assert got.expand_concepts == ("concept_3", "concept_4", "concept_1", "concept_2")
    assert got.nearby_events == ("s1_ch1_e0", "s1_ch1_e2")
