"""The query-term tokenizer behind the coverage score and quote windows (SPEC §1.4).

Text is normalised with NFKC and lowercased. Latin/digit terms are regex tokens; CJK terms are
unigrams of one-character segments and overlapping bigrams of longer ones, after splitting runs
on function characters. The same rules read the query and the documents:

>>> sorted(query_terms("Neo4j 的部署方式和方案演进"))
['neo4j', '方式', '方案', '案演', '演进', '署方', '部署']
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

from mnemoql.engine.text import nfkc, nfkc_char, normalise

QUOTE_SCOPE = 32_000  # coverage and quotes only look at content[:32000] (S0:27)

_LATIN = re.compile(r"[a-z0-9]+(?:[._+#-][a-z0-9]+)*")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_CJK_STOP_CHARS = re.compile(r"[的了和与及或是在吗呢吧啊]+")

STOPWORDS = frozenset(
    {"the", "a", "an", "of", "to", "and", "or", "is", "are", "in", "on", "for", "with", "how"}
    | {"what", "which"}
)
STOP_BIGRAMS = frozenset(
    {"什么", "怎么", "如何", "哪些", "为什", "一下", "这个", "那个", "我们"}
    | {"你们", "他们", "是否", "可以", "之前", "以前", "时候", "有没", "没有"}
)


def is_cjk_term(term: str) -> bool:
    """True for a CJK unigram/bigram, False for a latin/digit token."""
    return bool(term) and _CJK.match(term[0]) is not None


def _keep_latin(token: str) -> bool:
    return (len(token) >= 2 or token.isdigit()) and token not in STOPWORDS


def _cjk_terms(run: str) -> Iterator[str]:
    for segment in _CJK_STOP_CHARS.split(run):
        if len(segment) == 1:
            yield segment
        for i in range(len(segment) - 1):
            bigram = segment[i : i + 2]
            if bigram not in STOP_BIGRAMS:
                yield bigram


def query_terms(text: str) -> frozenset[str]:
    """The distinct coverage terms of ``text`` (a query, usually).

    Args:
        text: Any text; it is normalised here.

    Returns:
        Latin/digit tokens (length >= 2 or all digits, English stopwords dropped) and CJK
        unigrams/bigrams (stop characters split runs, stop bigrams dropped).
    """
    norm = normalise(text)
    terms = {t for t in _LATIN.findall(norm) if _keep_latin(t)}
    for run in _CJK.findall(norm):
        terms.update(_cjk_terms(run))
    return frozenset(terms)


_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_JOINERS = frozenset("._+#-")


def _is_token_at(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` (a latin term found there) is a whole ``_LATIN`` token:
    no token runs into it from the left (a letter or digit, or a joiner after one) and none
    goes on to the right (a letter or digit, or a joiner before one)."""
    if start > 0:
        before = text[start - 1]
        if before in _ALNUM or (before in _JOINERS and start > 1 and text[start - 2] in _ALNUM):
            return False
    if end < len(text):
        after = text[end]
        if after in _ALNUM or (
            after in _JOINERS and end + 1 < len(text) and text[end + 1] in _ALNUM
        ):
            return False
    return True


class DocTerms:
    """A document prepared for membership tests: its normalised text.

    A CJK term is present when it is a substring of the normalised text; a latin term when it
    is one of the document's latin tokens (so ``neo4j`` is not present in ``neo4jx``). The
    latin test looks for the term as a substring and checks the token boundaries around each
    place it occurs, instead of tokenising the whole document: ranking tests every query term
    against ~60 candidate documents per search, and the tokenising was most of that
    (tests/engine/test_terms.py checks both agree on random texts).
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = normalise(text)

    def present(self, term: str) -> bool:
        """Whether one query term occurs in the document."""
        text = self.text
        if is_cjk_term(term):
            return term in text
        at = text.find(term)
        while at >= 0:
            if _is_token_at(text, at, at + len(term)):
                return True
            at = text.find(term, at + 1)
        return False

    def count(self, terms: Iterable[str]) -> int:
        """How many of ``terms`` are present."""
        return sum(1 for t in terms if self.present(t))


def coverage(terms: frozenset[str], summary: str, content: str) -> float:
    """Share of query terms present in ``summary + "\\n" + content[:32000]``.

    Args:
        terms: The query's terms (``query_terms(query_text)``).
        summary: The event summary.
        content: The event's full content; only the first 32000 code points count.

    Returns:
        A value in [0, 1]; 0 when there are no query terms.
    """
    if not terms:
        return 0.0
    doc = DocTerms(summary + "\n" + content[:QUOTE_SCOPE])
    return doc.count(terms) / len(terms)


_Sources = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]


def _normalise_with_offsets(text: str) -> tuple[str, _Sources | None]:
    """The normalised text and, per normalised code point, the source range it came from.

    ``None`` means the identity. When code points only map one to many (full-width forms,
    ``…`` -> ``...``) the ranges come from repeating source positions; with composition
    (combining marks) the text is normalised one base character plus its marks at a time,
    which agrees with the whole-string form for everything the term regexes can match.
    """
    mapped, where = nfkc(text)
    lowered = mapped.lower()
    if where is not None and len(lowered) == len(mapped):
        if len(mapped) == len(text):
            return lowered, None
        widths = np.ones(len(text), dtype=np.int64)
        widths[where] = [len(nfkc_char(text[i])) for i in where.tolist()]
        starts = np.repeat(np.arange(len(text), dtype=np.int64), widths)
        return lowered, (starts, starts + 1)
    parts: list[str] = []
    begin: list[int] = []
    end: list[int] = []
    i, n = 0, len(text)
    while i < n:
        j = i + 1
        while j < n and unicodedata.combining(text[j]):
            j += 1
        piece = normalise(text[i:j])
        parts.append(piece)
        begin.extend([i] * len(piece))
        end.extend([j] * len(piece))
        i = j
    return "".join(parts), (np.asarray(begin, dtype=np.int64), np.asarray(end, dtype=np.int64))


def term_spans(text: str, terms: Iterable[str]) -> dict[str, list[tuple[int, int]]]:
    """Every occurrence of each present term, as ``[start, end)`` code points of ``text``.

    Occurrences follow the membership rule: latin terms are whole latin tokens, CJK terms are
    (possibly overlapping) substrings. Terms that never occur are left out.

    Args:
        text: Original (not normalised) text, e.g. a quote region of an event's content.
        terms: Query terms.

    Returns:
        ``term -> spans`` in the coordinates of ``text``, in order of position.
    """
    norm, sources = _normalise_with_offsets(text)

    def span(a: int, b: int) -> tuple[int, int]:
        if sources is None:
            return a, b
        return int(sources[0][a]), int(sources[1][b - 1])

    wanted = set(terms)
    spans: dict[str, list[tuple[int, int]]] = {}
    latin = {t for t in wanted if not is_cjk_term(t)}
    if latin:
        for m in _LATIN.finditer(norm):
            if m.group() in latin:
                spans.setdefault(m.group(), []).append(span(m.start(), m.end()))
    for term in wanted - latin:
        at = norm.find(term)
        while at >= 0:
            spans.setdefault(term, []).append(span(at, at + len(term)))
            at = norm.find(term, at + 1)
    return spans
