"""Tokens of the lexical (BM25) route, for documents and queries, and its query strings.

Both stores rank chunks and summaries with BM25 over the same kind of tokens: NFKC-lowercased
words for alphabetic scripts (English stop words dropped) and, for CJK text, overlapping
bigrams (a lone character as itself) after splitting runs on function characters -- the rules
of ``engine.retrieval.terms``, kept as a bag so term frequency counts. Bigrams were measured
against jieba's search-mode words and SQLite's trigram tokenizer on MADial zh (BM25 alone,
hit@5 0.581 / 0.531 / 0.350; docs/DECISIONS.md, "Lexical route"), and they are what Lucene's
``cjk`` analyser makes too, so the Neo4j full-text index agrees with the embedded FTS5 index.

>>> doc_terms("Alice moved to Berlin; 她搬到了柏林")
['alice', 'moved', 'berlin', '她搬', '搬到', '柏林']
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mnemoql.engine.text import normalise

# Bump when the tokens change: a store whose index was built by another version rebuilds it.
LEXICAL_VERSION = "bigram-v2"
# A query contributes at most this many distinct terms (long cues: the first ones).
MAX_QUERY_TERMS = 64
# The lexical route returns this many events, like the vector routes (SPEC §1.4's LIMIT 40).

_CJK_CLASS = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD_CHAR = rf"[^\W_{_CJK_CLASS}]"
_WORD = re.compile(rf"{_WORD_CHAR}+(?:[._+#-]{_WORD_CHAR}+)*")
_CJK_RUN = re.compile(rf"[{_CJK_CLASS}]+")
_CJK_STOP_CHARS = re.compile(r"[的了和与及或是在吗呢吧啊]+")

_STOP_TEXT = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves s t don ll re ve m d
"""
STOPWORDS = frozenset(_STOP_TEXT.split())


def _words(norm: str) -> list[str]:
    return [w for w in _WORD.findall(norm) if (len(w) >= 2 or w.isdigit()) and w not in STOPWORDS]


def _cjk(norm: str) -> list[str]:
    out: list[str] = []
    for run in _CJK_RUN.findall(norm):
        for segment in _CJK_STOP_CHARS.split(run):
            if len(segment) == 1:
                out.append(segment)
            out.extend(segment[i : i + 2] for i in range(len(segment) - 1))
    return out


def doc_terms(text: str) -> list[str]:
    """Every token of ``text`` in order (repeats kept: BM25 counts them)."""
    norm = normalise(text)
    return _words(norm) + _cjk(norm)


def indexed_text(text: str) -> str:
    """The tokens joined by spaces: what an FTS5 table of ``tokenize='unicode61 ...'`` stores."""
    return " ".join(doc_terms(text))


def query_terms(text: str) -> list[str]:
    """The distinct tokens of a query, in order of first appearance, at most MAX_QUERY_TERMS."""
    return list(dict.fromkeys(doc_terms(text)))[:MAX_QUERY_TERMS]


def _quoted(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def fts5_match(terms: Iterable[str]) -> str:
    """An FTS5 MATCH expression: any of the terms, each a quoted string."""
    return " OR ".join(_quoted(t) for t in terms)


def lucene_query(terms: Iterable[str], fields: Iterable[str]) -> str:
    """A Lucene query (Neo4j full-text) for any of the terms in any of ``fields``.

    Terms are quoted, so nothing in them is query syntax; inside quotes only ``"`` and ``\\``
    would need escaping, and the tokens never contain them.
    """
    quoted = " ".join('"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"' for t in terms)
    return " OR ".join(f"{f}:({quoted})" for f in fields)
