"""The query-term tokenizer behind the coverage score and quote windows (SPEC §1.4).

Text is normalised with NFKC and lowercased. Latin/digit terms are regex tokens; CJK terms are
unigrams of one-character segments and overlapping bigrams of longer ones, after splitting runs
on function characters. The same rules read the query and the documents:

>>> sorted(query_terms("Neo4j 的部署方式和方案演进"))
['neo4j', '方式', '方案', '案演', '演进', '署方', '部署']
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

from mnemoql.engine.store import lexical
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


def _occurs(text: str, term: str, cjk: bool) -> bool:
    """Whether a normalised text holds a term: a CJK one as a substring, a latin one as a
    whole token (found as a substring, its boundaries checked by ``_is_token_at``)."""
    if cjk:
        return term in text
    at = text.find(term)
    while at >= 0:
        if _is_token_at(text, at, at + len(term)):
            return True
        at = text.find(term, at + 1)
    return False


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
        return self.has(term, is_cjk_term(term))

    def has(self, term: str, cjk: bool) -> bool:
        """``present`` for a term already known to be CJK (``cjk``) or latin."""
        return _occurs(self.text, term, cjk)

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


def coverages(terms: frozenset[str], docs: Iterable[tuple[str, str, str]]) -> dict[str, float]:
    """``coverage`` of many ``(id, summary, content)`` documents (a search's candidates),
    with the terms sorted into CJK and latin once rather than once per document, and no
    ``DocTerms`` built per document (a search tests some 300 term/document pairs)."""
    if not terms:
        return {doc_id: 0.0 for doc_id, _, _ in docs}
    kinds = [(t, is_cjk_term(t)) for t in terms]
    n = len(terms)
    out: dict[str, float] = {}
    for doc_id, summary, content in docs:
        text = normalise(summary + "\n" + content[:QUOTE_SCOPE])
        out[doc_id] = sum(1 for term, cjk in kinds if _occurs(text, term, cjk)) / n
    return out


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


@functools.lru_cache(maxsize=64)
def _term_kinds(terms: frozenset[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``term_spans``' terms sorted once per query (a page cuts a few quotes with them): the
    latin terms that are one ``_LATIN`` token each, in order, and the CJK terms.

    A latin term occurs where it is a whole _LATIN token: found as a substring with the token
    boundaries checked around it (``DocTerms.present``'s rule), in C instead of tokenising the
    whole text. Only a term that is itself one token can equal a token."""
    wanted = set(terms)
    latin = {t for t in wanted if not is_cjk_term(t)}
    tokens = tuple(t for t in sorted(latin) if _LATIN.fullmatch(t) is not None)
    return tokens, tuple(wanted - latin)


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
    latin, others = _term_kinds(terms if isinstance(terms, frozenset) else frozenset(terms))
    spans: dict[str, list[tuple[int, int]]] = {}
    for term in latin:
        size = len(term)
        at = norm.find(term)
        while at >= 0:
            if _is_token_at(norm, at, at + size):
                spans.setdefault(term, []).append((at, at + size))
            at = norm.find(term, at + 1)
    for term in others:
        size = len(term)
        at = norm.find(term)
        while at >= 0:
            spans.setdefault(term, []).append((at, at + size))
            at = norm.find(term, at + 1)
    if sources is None:  # the normalised text's positions are the text's own
        return spans
    starts, ends = sources
    return {t: [(int(starts[a]), int(ends[b - 1])) for a, b in occ] for t, occ in spans.items()}


# Words of how a question is asked rather than what it asks about: a memory's message that
# repeats them is one that asks the same kind of thing ("Can you remind me how many ...?"),
# not the one that states the answer. BM25 already drops function words
# (``engine.store.lexical.STOPWORDS``); these are what is left of the template.
_TEMPLATE_TEXT = """
    remind recall remember tell told mention mentioned previous earlier conversation chat
    discussion many much long total number different type types kind kinds currently current
    recently recent now ago exactly actually please wondering thinking planning looking
    know think like get got going back any tips suggestions recommend recommended suggest
    suggested
"""
TEMPLATE_WORDS = frozenset(_TEMPLATE_TEXT.split())
_WORD = re.compile(r"[\w'’]+|[^\w\s]+|\s+")


def without_template(query: str) -> str:
    """``query`` without its ``TEMPLATE_WORDS`` (case-insensitive, whole words), for the
    lexical route; the query itself when nothing else would be left."""
    kept = [w for w in _WORD.findall(query) if w.lower() not in TEMPLATE_WORDS]
    out = "".join(kept).strip()
    return out if lexical.query_terms(out) else query


def _number_forms(word: str) -> set[str]:
    """A word's singular or plural (``colleagues`` <-> ``colleague``, ``parties`` <-> ``party``)."""
    if word.endswith(("ing", "ed", "ly")):
        return set()  # a verb's or an adverb's form, not a noun's
    if word.endswith("ies") and len(word) > 4:
        return {word[:-3] + "y"}
    if word.endswith("es") and len(word) > 4:
        return {word[:-2], word[:-1]}
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return {word[:-1]}
    if word.endswith("y") and len(word) > 3 and word[-2] not in "aeiou":
        return {word[:-1] + "ies"}
    return {word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s")}


def _forms(word: str) -> set[str]:
    """English inflections around ``word``: its stem (``quoted`` -> ``quote``, ``colleagues``
    -> ``colleague``; the word itself when it has no ending) and the stem's plural, past and
    ``-ing`` forms, and ``-ly`` for an adjective's ending."""
    stems: set[str] = set()
    if word.endswith("ies") and len(word) > 4:
        stems.add(word[:-3] + "y")
    elif word.endswith("es") and len(word) > 4:
        stems |= {word[:-2], word[:-1]}
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        stems.add(word[:-1])
    elif word.endswith("ied") and len(word) > 4:
        stems.add(word[:-3] + "y")
    elif word.endswith("ed") and len(word) > 4:
        stems |= {word[:-2], word[:-1]}
    elif word.endswith("ing") and len(word) > 5:
        stems |= {word[:-3], word[:-3] + "e"}
    elif word.endswith("ly") and len(word) > 5:
        stems.add(word[:-2])
    else:
        stems.add(word)
    out: set[str] = set()
    for s in stems:
        if len(s) < 3:
            continue
        e = s.endswith("e")
        out |= {s, s + "s", s + ("d" if e else "ed"), (s[:-1] if e else s) + "ing"}
        if s.endswith("y") and len(s) > 3:
            out |= {s[:-1] + "ies", s[:-1] + "ied"}
        if s.endswith(("al", "ful", "ous", "ive", "ent", "ant", "ic", "ar")):
            out.add(s + "ly")
    out.discard(word)
    return out


def with_word_forms(query: str, verbs: bool = True) -> str:
    """``query`` followed by the other inflections of its latin words of 4+ letters (the
    lexical route's index keeps words as written: ``quote`` does not find ``quoted``);
    without ``verbs``, only their singular or plural."""
    words = [
        w
        for w in _LATIN.findall(normalise(query))
        if w.isalpha() and len(w) >= 4 and w not in TEMPLATE_WORDS and w not in lexical.STOPWORDS
    ]
    forms = _forms if verbs else _number_forms
    extra = dict.fromkeys(f for w in words for f in sorted(forms(w)) if f not in words)
    return " ".join([query, *extra]) if extra else query
