"""The long-query fade of the lexical signals (coverage weight, BM25 route weight)."""

from __future__ import annotations

import pytest

from mnemoql.engine.retrieval.ranking import LONG_QUERY_POWER, LONG_QUERY_TERMS, lexical_fade
from mnemoql.engine.retrieval.terms import query_terms


def test_questions_keep_spec_weights() -> None:
    for n in (0, 1, 8, LONG_QUERY_TERMS):
        assert lexical_fade(n) == 1.0


def test_long_queries_fade_by_the_power_of_the_length_ratio() -> None:
    assert lexical_fade(2 * LONG_QUERY_TERMS) == pytest.approx(0.5**LONG_QUERY_POWER)
    assert lexical_fade(LONG_QUERY_TERMS + 1) < 1.0
    assert lexical_fade(40) < lexical_fade(20) < 1.0


def test_zero_turns_the_fade_off() -> None:
    assert lexical_fade(500, 0) == 1.0


def test_a_three_utterance_cue_is_long_and_a_question_is_not() -> None:
    question = "What was the name of the hotel I stayed at in Lisbon last spring?"
    cue = (
        "Bart: I'm going to perform a magic trick at the New Year's Eve party! "
        "Assistant: That's fantastic, the audience will be captivated by your magic. "
        "Bart: I get a bit nervous too. Do you have any suggestions to help me relax "
        "before I go on stage in front of everyone at school?"
    )
    assert lexical_fade(len(query_terms(question))) == 1.0
    assert lexical_fade(len(query_terms(cue))) < 0.2


@pytest.mark.parametrize(
    ("query", "joins"),
    [
        ("which part XK-4471-B", True),
        ("order INV-2024-0032 status", True),
        ("upgrade to v2.3", True),
        ("GDPR rules for the newsletter", True),
        ('the "blue notebook" note', True),
        ("What did I buy last week?", False),
        ("how many days did the trip take in 2023", False),
        ("我上周买了什么", False),
    ],
)
def test_auto_lexical_route_joins_for_identifiers_and_quotes(query: str, joins: bool) -> None:
    from mnemoql.engine.retrieval.routes import lexical_route_for

    assert lexical_route_for(query, "auto") is joins
    assert lexical_route_for(query, True) is True
    assert lexical_route_for(query, False) is False


def test_cjk_terms_do_not_count_towards_the_fade() -> None:
    from mnemoql.engine.retrieval.terms import is_cjk_term

    cue = "我昨天和妈妈一起去公园散步，看到很多花开了，心情特别好，想起小时候的事情。"
    terms = query_terms(cue)
    assert len(terms) > LONG_QUERY_TERMS  # unigrams and bigrams: many terms
    assert lexical_fade(sum(not is_cjk_term(t) for t in terms)) == 1.0
