"""The names a question may hold, for the person route (engine/retrieval/speakers.py)."""

from __future__ import annotations

from mnemoql.engine.retrieval.speakers import MAX_NAMES, named_people


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
