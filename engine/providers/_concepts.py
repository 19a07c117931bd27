"""Concepts of the offline extractor (engine/providers/offline.py): which words and noun
phrases are concepts, how salient each mention is, and how many concepts a save's length lets
it keep (``concepts_kept``).
"""

from __future__ import annotations

import math
import re

from mnemoql.engine.providers import _english as english
from mnemoql.engine.providers._namewords import NOT_NAMES, VERBISH, name_key

MAX_CONCEPTS_PER_SAVE = 16
# One concept per this many characters of a save (the rest are the least salient).
CHARS_PER_CONCEPT = 150
CJK_WEIGHT = 3
_CJK = re.compile(r"[\u4e00-\u9fff]")
# A reference number ("gh-issue-92173", "bpo-32782", "PEP-8") or a version: no concept.
_REFERENCE = re.compile(r"^(?:[A-Za-z]+-)+\d[\d.]*$|^v?\d+(?:[.\d]+)*[a-z]?\d*$")


def english_concepts(text: str, exclude: set[str]) -> list[tuple[str, int]]:
    """Content noun phrases (``_english``) with their first position, names left out: a
    phrase holding a person or place word keeps only the words around it."""
    out: list[tuple[str, int]] = []
    folded = text.casefold()
    for phrase in english.noun_phrases(text):
        parts: list[list[str]] = [[]]
        for word in phrase.split():
            if (
                name_key(word) in exclude
                or name_key(word) in NOT_NAMES
                or name_key(word) in VERBISH
                or not concept_word(word)
            ):
                parts.append([])
            else:
                parts[-1].append(word)
        for words in parts:
            if not words or (len(parts) > 1 and english.lone_ambiguous(" ".join(words))):
                continue
            name = " ".join(_common_case(w) for w in words)
            if name_key(name) not in exclude:
                out.append((name, folded.find(name_key(name))))
    return out


def _techy(phrase: str) -> bool:
    """An identifier (Neo4j, MemoryRuntime, gpt-4): it names a specific thing, so it counts
    double where common words often do not."""
    tail = phrase[1:]
    return " " not in phrase and (
        any(c.isdigit() or c == "_" for c in phrase) or tail != tail.lower()
    ) and not phrase.isupper()


# Salience weights per mention: an identifier or acronym names one specific thing; a phrase of
# several words says more than one word; a capitalised name mid-sentence sits between.
IDENTIFIER = 2.0
PHRASE = 1.5
PROPER = 1.5


def phrase_salience(phrase: str) -> float:
    if _techy(phrase) or (phrase.isupper() and len(phrase) >= 2 and phrase.isalnum()):
        return IDENTIFIER
    return PHRASE if " " in phrase else 1.0


def concept_word(word: str) -> bool:
    """Not a reference number or version ("gh-issue-92173", "3.11.2"), not a run of one
    character ("yyyy..."), not a lone letter."""
    letters = [c for c in word.casefold() if c.isalnum()]
    return len(letters) >= 2 and len(set(letters)) > 1 and not _REFERENCE.match(word)


def concept_allowance(text: str) -> float:
    """How many concepts a save's length allows: one per CHARS_PER_CONCEPT characters (a
    Chinese character counts as CJK_WEIGHT, it says about as much as that many latin ones)."""
    cjk = len(_CJK.findall(text))
    return (len(text) - cjk + CJK_WEIGHT * cjk) / CHARS_PER_CONCEPT


def concept_budget(text: str) -> int:
    """The most concepts one save keeps: its allowance rounded, at least 1 and at most
    MAX_CONCEPTS_PER_SAVE (``concepts_kept`` says how many of them it does keep)."""
    return max(1, min(MAX_CONCEPTS_PER_SAVE, round(concept_allowance(text))))


def concepts_kept(saliences: list[float], allowance: float) -> int:
    """How many of a save's concepts (their saliences, the most salient first) it keeps: the
    whole part of its allowance, and one more when that concept's salience times the
    allowance's fraction is at least one half. That is rounding weighted by salience: a lone
    word needs half an allowance (75 characters), a phrase or a name a third (50), an
    identifier a quarter, so a short chat message keeps a name or a phrase but no lone common
    word ("video", "guys"). Never more than ``concept_budget``."""
    cap = max(1, min(MAX_CONCEPTS_PER_SAVE, round(allowance)))
    whole = math.floor(allowance)
    n = min(cap, whole, len(saliences))
    if n < cap and n < len(saliences) and saliences[n] * (allowance - whole) >= 0.5:
        n += 1
    return n


def _common_case(word: str) -> str:
    """A capitalised dictionary word (a sentence start) in lower case; names, acronyms and
    identifiers as written."""
    if word[:1].isupper() and word[1:].islower() and english.readings(word):
        return word.lower()
    return word
