from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemoql.engine.retrieval.terms import (
    _LATIN,
    DocTerms,
    coverage,
    coverages,
    normalise,
    query_terms,
    term_spans,
)


def test_spec_example_tokenizes_to_latin_token_and_cjk_bigrams() -> None:
    assert query_terms("Neo4j 的部署方式和方案演进") == {
        "neo4j",
        "部署",
        "署方",
        "方式",
        "方案",
        "案演",
        "演进",
    }


def test_english_keeps_len2_and_digits_and_drops_stopwords() -> None:
    terms = query_terms("What is the C++ build of v1.2.3 and e2e for 7 x in 2024?")
    assert terms == {"build", "v1.2.3", "e2e", "7", "2024"}


def test_latin_regex_joins_inner_punctuation() -> None:
    assert query_terms("foo-bar node.js a_b c#d x/y") == {"foo-bar", "node.js", "a_b", "c#d"}


def test_nfkc_and_lowercase_apply_first() -> None:
    assert query_terms("ＮＥＯ４Ｊ") == {"neo4j"}


def test_single_cjk_segment_is_a_unigram_and_stop_chars_split() -> None:
    # 我的猫 -> segments 我 | 猫 ; 是 splits too
    assert query_terms("我的猫是狗") == {"我", "猫", "狗"}


def test_stop_bigrams_are_dropped_but_their_neighbours_stay() -> None:
    assert query_terms("如何部署") == {"何部", "部署"}
    assert query_terms("我们什么时候") == {"们什", "么时"}


def test_cjk_ranges_cover_extension_a_and_compat_ideographs() -> None:
    assert query_terms("\u3400\u3401") == {"\u3400\u3401"}
    # U+F900 normalises (NFKC) to U+8C48 and still counts as CJK
    assert query_terms("\uf900") == {"\u8c48"}


def test_membership_cjk_substring_latin_whole_token() -> None:
    doc = DocTerms("Neo4jX 的部署")
    assert doc.present("部署")
    assert not doc.present("署的")
    assert not doc.present("neo4j")  # only the whole token neo4jx is in the document
    assert DocTerms("use Neo4j.").present("neo4j")


_TEXT = st.text(alphabet="ab1.-+#_ /é的部Ａ", max_size=40)


@settings(max_examples=400, deadline=None)
@given(_TEXT, _TEXT)
def test_latin_membership_is_the_whole_token_rule(doc: str, query: str) -> None:
    """DocTerms finds a latin term by substring + boundary checks; it must agree with the
    rule itself: the term is one of the document's _LATIN tokens."""
    tokens = set(_LATIN.findall(normalise(doc)))
    prepared = DocTerms(doc)
    for term in {*_LATIN.findall(normalise(query)), *tokens}:
        assert prepared.present(term) == (term in tokens), (doc, term)


def test_latin_membership_boundaries() -> None:
    doc = DocTerms("x.neo4j-y neo4j.z a--b c.-d node.js")
    assert not doc.present("neo4j")  # inside x.neo4j-y and neo4j.z only
    assert doc.present("a") and doc.present("b") and doc.present("c") and doc.present("d")
    assert doc.present("node.js") and not doc.present("node") and not doc.present("js")


def test_coverage_counts_summary_and_content_prefix() -> None:
    terms = query_terms("Neo4j 部署")
    assert coverage(terms, "about neo4j", "") == pytest.approx(0.5)
    assert coverage(terms, "about neo4j", "部署") == pytest.approx(1.0)
    # summary and content are joined by a newline, so no bigram spans the seam
    assert coverage(frozenset({"部署"}), "部", "署") == 0.0


def test_coverage_ignores_content_beyond_32000() -> None:
    terms = frozenset({"部署"})
    assert coverage(terms, "", "x" * 31_998 + "部署") == 1.0
    assert coverage(terms, "", "x" * 31_999 + "部署") == 0.0


def test_coverage_without_terms_is_zero() -> None:
    assert coverage(frozenset(), "anything", "at all") == 0.0


def test_term_spans_are_in_original_code_points() -> None:
    text = "Ｎｅｏ４ｊ 的部署㎏方式 neo4j.x neo4j"
    spans = term_spans(text, ["neo4j", "部署", "方式", "missing"])
    assert spans == {"neo4j": [(0, 5), (21, 26)], "部署": [(7, 9)], "方式": [(10, 12)]}


def test_term_spans_survive_length_changing_normalisation() -> None:
    # e + combining acute composes to one code point; ㎏ expands to two
    text = "cafe\u0301 ㎏ 部署"
    assert term_spans(text, ["部署", "kg"]) == {"部署": [(8, 10)], "kg": [(6, 7)]}


def test_term_spans_find_overlapping_cjk_occurrences() -> None:
    assert term_spans("哈哈哈", ["哈哈"]) == {"哈哈": [(0, 2), (1, 3)]}


@pytest.mark.parametrize(
    "text",
    ["部署，方式（ＡＢＣ）……", "cafe\u0301", "İstanbul ①", "\u1100\u1161\u11a8", "plain", ""],
)
def test_normalise_equals_whole_string_nfkc_lower(text: str) -> None:
    assert normalise(text) == unicodedata.normalize("NFKC", text).lower()


def test_term_spans_map_back_through_expanding_punctuation() -> None:
    text = "……部署，Ｎｅｏ４ｊ"  # each … becomes three code points under NFKC
    assert term_spans(text, ["部署", "neo4j"]) == {"部署": [(2, 4)], "neo4j": [(5, 10)]}


@settings(max_examples=400, deadline=None)
@given(_TEXT, _TEXT)
def test_latin_term_spans_are_the_whole_tokens(text: str, query: str) -> None:
    """term_spans finds latin terms by substring + boundary checks; its spans must be those of
    the rule itself: the _LATIN tokens of the text that equal a term (texts whose normalised
    form keeps their length, so positions agree), and no span for a term that is no token."""
    norm = normalise(text)
    if len(norm) != len(text):
        return
    tokens = _LATIN.findall(normalise(query)) + [m.group() for m in _LATIN.finditer(norm)][:3]
    wanted = {*tokens, "a b", "-a"}  # two that no token can equal
    want: dict[str, list[tuple[int, int]]] = {}
    for m in _LATIN.finditer(norm):
        if m.group() in wanted:
            want.setdefault(m.group(), []).append((m.start(), m.end()))
    assert term_spans(text, wanted) == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_TEXT, _TEXT), max_size=6), _TEXT)
def test_coverages_is_coverage_per_document(docs: list[tuple[str, str]], query: str) -> None:
    terms = query_terms(query)
    many = coverages(terms, ((str(i), s, c) for i, (s, c) in enumerate(docs)))
    assert many == {str(i): coverage(terms, s, c) for i, (s, c) in enumerate(docs)}
