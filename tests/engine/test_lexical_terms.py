"""The lexical route's tokens and query strings (engine/store/lexical.py)."""

from __future__ import annotations

from mnemoql.engine.store.lexical import (
    MAX_QUERY_TERMS,
    doc_terms,
    fts5_match,
    indexed_text,
    lucene_query,
    query_terms,
)


def test_words_are_normalised_and_stop_words_dropped() -> None:
    assert doc_terms("The Quick brown FOX, and the fox!") == ["quick", "brown", "fox", "fox"]
    assert doc_terms("ｎｅｏ４ｊ node.js C++ São Paulo 2024 a") == [
        "neo4j", "node.js", "são", "paulo", "2024",
    ]  # fmt: skip
    assert doc_terms("I'm sure you'll see it") == ["sure", "see"]


def test_cjk_runs_become_bigrams_split_on_function_characters() -> None:
    assert doc_terms("我们讨论了图数据库") == ["我们", "们讨", "讨论", "图数", "数据", "据库"]
    assert doc_terms("猫和狗") == ["猫", "狗"]  # lone characters stay unigrams
    assert doc_terms("Neo4j 的部署") == ["neo4j", "部署"]


def test_query_terms_are_distinct_in_order_and_capped() -> None:
    assert query_terms("fox Fox box fox") == ["fox", "box"]
    many = " ".join(f"w{i}" for i in range(MAX_QUERY_TERMS + 10))
    assert len(query_terms(many)) == MAX_QUERY_TERMS
    assert indexed_text("Fox and box") == "fox box"


def test_query_strings_quote_every_term() -> None:
    assert fts5_match(["fox", 'say"hi']) == '"fox" OR "say""hi"'
    assert lucene_query(["fox", "a\\b"], ("text", "summary")) == (
        'text:("fox" "a\\\\b") OR summary:("fox" "a\\\\b")'
    )
    assert fts5_match([]) == ""
