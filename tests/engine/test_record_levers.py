"""Round 6's lexical and fusion levers for messages saved one at a time (issue #25):
the question's template words, word forms for BM25, first-person statements, sessions."""

from __future__ import annotations

from mnemoql.engine.retrieval.scoring import Scored, by_group, fuse
from mnemoql.engine.retrieval.speakers import states_in_first_person
from mnemoql.engine.retrieval.terms import with_word_forms, without_template


def test_template_words_leave_what_the_question_is_about() -> None:
    assert without_template("Can you remind me how many days ago I bought a smoker?") == (
        "Can you  me how  days  I bought a smoker?"
    )


def test_a_question_of_template_words_only_is_kept_whole() -> None:
    assert without_template("Remind me, how many?") == "Remind me, how many?"


def test_word_forms_find_the_inflections_bm25_does_not() -> None:
    text = with_word_forms("the initial quote for my colleagues")
    added = text.split()[5:]
    assert {"quoted", "quotes", "colleague", "initially"} <= set(added)
    assert text.startswith("the initial quote for my colleagues")


def test_singular_and_plural_only_leave_verbs_alone() -> None:
    added = with_word_forms("What vehicle model am I working on at parties?", verbs=False)
    assert set(added.split()[9:]) == {"vehicles", "models", "party"}


def test_function_and_template_words_get_no_forms() -> None:
    assert with_word_forms("what about these recently") == "what about these recently"


def test_a_first_person_statement_is_told_from_a_question() -> None:
    assert states_in_first_person("User: Hi! I've been relying on food delivery lately.")
    assert not states_in_first_person("User: Can you remind me what I paid for it?")
    assert not states_in_first_person("Assistant: The park is open until nine.")
    # the speaker word is not a statement of its own
    assert not states_in_first_person("User: What should my team do?")


def _scored(i: str, score: float) -> Scored:
    return Scored(i, None, None, score, 0.0, score)


def test_by_group_orders_sessions_by_their_total_score() -> None:
    ranked = [_scored("a1", 0.5), _scored("b1", 0.4), _scored("b2", 0.3), _scored("x", 0.2)]
    group = {"a1": "a", "b1": "b", "b2": "b"}.get
    # session b (0.7) before a (0.5); each in its own order; no session, no place
    assert by_group(ranked, group) == ["b1", "b2", "a1"]
    assert by_group(ranked, group, top=1) == ["b1", "b2"]


def test_an_extra_list_counts_in_the_fusion_and_weight_zero_leaves_it_out() -> None:
    base = fuse(["a", "b"], ["a", "b"], {})
    assert [s.id for s in base] == ["a", "b"]
    lifted = fuse(["a", "b"], ["a", "b"], {}, extra=[(["b"], 2.0)])
    assert [s.id for s in lifted] == ["b", "a"]
    off = fuse(["a", "b"], ["a", "b"], {}, extra=[(["b", "c"], 0.0)])
    assert [s.id for s in off] == ["a", "b"]
