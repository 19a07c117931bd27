"""What a question names and asks, for the person and dated routes (engine/retrieval/speakers.py)."""

from __future__ import annotations

from mnemoql.engine.retrieval.speakers import MAX_NAMES, asks_when, named_people


def test_a_capitalised_name_is_read_and_the_question_word_is_not() -> None:
    assert named_people("What did Caroline research?") == ["Caroline"]
    assert named_people("When did Melanie paint a sunrise?") == ["Melanie"]


def test_a_pair_of_capitalised_words_is_read_whole_then_word_by_word() -> None:
    assert named_people("Where is Mary Ann's house?") == ["Mary Ann", "Mary", "Ann"]


def test_first_person_and_lowercase_questions_name_nobody() -> None:
    assert named_people("How much did I pay for the bike?") == []
    assert named_people("what did caroline research?") == []  # not read: said in the docs


def test_at_most_max_names_are_looked_up() -> None:
    names = named_people("Did Anna, Boris, Carla, Dmitri and Elena meet Frank?")
    assert names == ["Anna", "Boris", "Carla", "Dmitri"] and len(names) == MAX_NAMES


def test_a_question_that_asks_when() -> None:
    for q in (
        "When did Melanie paint a sunrise?",
        "How many days ago did I buy a smoker?",
        "What day of the week did I meet Juan?",
        "How long ago did I move?",
        "我什么时候去的日本？",
    ):
        assert asks_when(q), q


def test_a_question_that_does_not_ask_when() -> None:
    for q in ("How long was I in Japan for?", "What did I buy?", "Where did I go?"):
        assert not asks_when(q), q
