"""English persons of the offline extractor: capitalisation, cues and name lists.

Capitalised runs ("Pablo Galindo") are persons when the name lists back them (a given name
first, a surname last) or a cue does ("with Bob", "Priya said", "Patch by ..."); a word the
English lexicon knows and no English-locale list holds ("Patch", "Python") never is. Chat
English too: given names typed in lower case ("thanks emma"), names joined to a person by
"and" / "," and performers' "DJ" / "Lil" names. ``english_entities`` also returns the places
(``_english_places``) and the other proper nouns, which become concepts.
"""

from __future__ import annotations

import re

from mnemoql.engine.providers import _english as english
from mnemoql.engine.providers._english_places import cued_places, known_place
from mnemoql.engine.providers._namewords import (
    CAP_SEQ,
    GROUP_WORDS,
    LOWER,
    NAME_PART,
    NOT_NAMES,
    VERBISH,
    given,
    name_key,
    ordinary,
)
from mnemoql.engine.providers.hashing import wordset
from mnemoql.engine.providers.lexicons import lexicons

_CJK = re.compile(r"[\u4e00-\u9fff]")
# Titles before a name: stripped from it, and they make even a word like "Trump" a person.
_TITLES = english.HONORIFICS | wordset(
    """president senator governor minister chancellor judge colonel general captain coach
    king queen prince princess pope saint lord lady professor doctor uncle aunt"""
)
# Stage-name prefixes: what follows is a performer's name, whatever its words.
_STAGE_NAME = re.compile(r"(?<![A-Za-z])(DJ|MC)\s+$")
_TITLE_BEFORE = re.compile(r"\b(?:mr|mrs|ms|dr|prof)\.?\s+$", re.IGNORECASE)
_PERSON_CUE_BEFORE = re.compile(
    r"\b(?:with|met|meet|meeting|told|asked|called|named|by|thanks|thank|dear|hi|hello|"
    r"hey|bye|mr|mrs|ms|dr|prof|friend|colleague|boss|wife|husband|brother|sister|mother|"
    r"father|cousin|classmate|roommate|neighbou?r|teacher|son|daughter|girlfriend|boyfriend|"
    r"grandson|granddaughter|nephew|niece)\.?\s+$",
    re.IGNORECASE,
)
# "and" before a name: a cue only for a name that is no dictionary word ("Justice and Peace").
_WEAK_CUE_BEFORE = re.compile(r"\b(?:and|&)\s+$", re.IGNORECASE)
_PERSON_CUE_AFTER = re.compile(
    r"^\s+(?:said|says|told|asked|thinks|thought|wants|wanted|likes|liked|loves|hates|moved|"
    r"went|joined|works|worked|lives|lived|and\s+I|met|"
    r"meets|saw|sees|called|visited|wrote|sent|gave|helped|agreed|decided|bought|left|"
    r"arrived|started|finished|smiled|laughed|replied|answered|explained|suggested)\b"
)
# Verbs any noun takes ("Summer is over"): a cue only for a name that is no dictionary word.
_WEAK_CUE_AFTER = re.compile(
    r"^\s+(?:is|was|are|were|has|had|will|would|can|could|should|must|might|does|did|looks|sounds|"
    r"seems|needs|knew|stated)\b"
)

_NEXT_WORD = re.compile(r"^\s+([A-Za-z]+)\b")
_INDEFINITE = wordset("everyone everybody someone somebody nobody anyone anybody people folks")


def _acts(after: str) -> bool:
    """Whether a past-tense verb follows: a capitalised word that opens a sentence is a person
    then ("Alice walked to the harbour", "Carol painted ..."); mid-sentence capitals are names
    anyway, but at a sentence start they are only a hint."""
    nxt = _NEXT_WORD.match(after)
    if nxt is not None and nxt[1].endswith("ly"):  # "Xiaomei secretly spoke ..."
        nxt = _NEXT_WORD.match(after[nxt.end() :])
    return nxt is not None and english.inflected_verb(nxt[1])


def _is_person(words: list[str], cue: bool) -> bool:
    """Persons by name lists: two or three name-like words led by a given name ("Pablo
    Galindo"), or after a cue ("Patch by Serhiy Storchaka"); one word after a cue ("with
    Bob", "Priya said") when it is no ordinary word, or a given name the lexicon does not
    know as a word, wherever it stands ("thanks, Caroline", "Bart won
    first place"; "Will", "Max" are words and need a cue)."""
    if any(name_key(w) in GROUP_WORDS for w in words):
        return False
    if len(words) >= 2 and given(words[0]) and name_key(words[-1]) in lexicons().surnames:
        # "Grace Hopper": a given name and a surname of any locale, words or not
        return not any(ordinary(w) for w in words[:-1])
    if any(ordinary(w) for w in words):
        return False
    if len(words) >= 2:
        return cue or given(words[0]) or name_key(words[-1]) in lexicons().surnames
    word = words[0]
    return cue or (given(word) and not english.readings(name_key(word)))


def english_entities(text: str) -> tuple[list[str], list[str], list[str]]:
    """(persons, places, other proper nouns) by capitalisation patterns and name lists."""
    places = cued_places(text)
    place_keys = {name_key(p) for p in places}
    persons: list[str] = []
    proper: list[str] = []
    for m in CAP_SEQ.finditer(text):
        words = m.group(0).split()
        titled = False
        while words and (name_key(words[0]) in NOT_NAMES or name_key(words[0]) in _TITLES):
            titled = titled or name_key(words[0]) in _TITLES
            words.pop(0)
        while words and name_key(words[-1]) in NOT_NAMES:
            words.pop()  # "Preston Do an ...": the name ends where the stop words start
        owner = bool(words and re.search(r"['’]s$", words[-1]))
        if owner:
            words[-1] = words[-1][:-2]  # "Sophia’s party": the owner's name
        if not words or any(name_key(w) in NOT_NAMES for w in words):
            continue
        name = " ".join(words)
        if name_key(name) in place_keys or any(name_key(name) in k.split() for k in place_keys):
            continue
        start = m.start() + m.group(0).index(words[0])
        before = text[:start]
        # in Chinese text capitals mark names, not sentence starts ("Bart在海边放风筝")
        in_chinese = bool(_CJK.match(before[-1:]) or _CJK.match(text[m.end() : m.end() + 1]))
        sentence_start = not in_chinese and (
            not before.strip() or bool(re.search(r"[.!?:：\n]\s*$", before))
        )
        if name_key(name) in _INDEFINITE:
            continue
        weak_cue = bool(_WEAK_CUE_AFTER.match(text[m.end() :]) or _WEAK_CUE_BEFORE.search(before))
        person_cue = (
            bool(_PERSON_CUE_BEFORE.search(before))
            or bool(_PERSON_CUE_AFTER.match(text[m.end() :]))
            or (weak_cue and not any(english.readings(name_key(w)) for w in words))
            or (sentence_start and _acts(text[m.end() :]))
            or (in_chinese and given(words[0]))
        )
        titled = titled or bool(_TITLE_BEFORE.search(before))
        if stage := _STAGE_NAME.search(before):  # "DJ Khaled", "Lil Wayne": a performer
            words.insert(0, stage[1])
            name, titled = " ".join(words), True
        elif words[0] == "Lil" and len(words) > 1:
            titled = True
        tail = _LOWER_SURNAME.match(text[m.end() :])
        if (
            not owner
            and len(words) < 3
            and given(words[0])
            and tail
            and _surname_like(tail[1], words[0])
        ):
            words.append(tail[1].capitalize())  # "Donald trump", "Kylie minogue"
            name = " ".join(words)
        if titled and len(words) <= 3:
            persons.append(name)  # "President Trump", "Mrs. Lee"
        elif known_place(name, cued=False) and (not person_cue or not given(words[0])):
            places.append(name)
            place_keys.add(name_key(name))
        elif _is_person(words, person_cue) and (
            person_cue
            or not (
                _BARE_ARTICLE.search(before)
                or (_ARTICLE_BEFORE.search(before) and _modifier(text[m.end() :]))
            )
        ):
            persons.append(name)
        elif not sentence_start or len(words) > 1:
            proper.append(name)
    named = {k for p in persons for k in [name_key(p), *name_key(p).split()]}
    persons.extend(_lower_case_names(text, named))
    persons.extend(_coordinated(text, persons, place_keys))
    return persons, places, proper


_CAPS_WORD = re.compile(r"(?<![A-Za-z])[A-Z][A-Z'’]+(?![A-Za-z])")


def shouted(text: str) -> str:
    """A text typed mostly in capitals ("I LIVE FOR YOUR VLOGS ESTEE") as it would be written:
    words the lexicon knows in lower case, the others capitalised, so the name rules read it as
    ordinary text ("Estee")."""
    letters = [c for c in text if c.isalpha() and c.isascii()]
    if len(letters) < 12 or sum(c.isupper() for c in letters) < 0.8 * len(letters):
        return text

    def recase(m: re.Match[str]) -> str:
        k = name_key(m[0])
        if k in NOT_NAMES or english.readings(k):
            return m[0].lower()
        return m[0].capitalize()

    return _CAPS_WORD.sub(recase, text)


_AND = r"\s*(?:,|&|\band\b|\bor\b|\bvs\.?)\s*"


def _coordinated(text: str, persons: list[str], place_keys: set[str]) -> list[str]:
    """Names joined to a person by "and", "&", "or", "vs" or a comma ("Ayanda and Glenda",
    "Dwayne, Ty, Luda"): persons too when they are no ordinary, group or place word."""
    found = {name_key(p) for p in persons}
    whole = {m.span() for m in CAP_SEQ.finditer(text)}  # not a part of a longer name
    out: list[str] = []
    for person in persons:
        p = re.escape(person)
        for pattern in (rf"{p}{_AND}({NAME_PART})", rf"({NAME_PART}){_AND}{p}"):
            for m in re.finditer(pattern, text):
                word = m[1]
                k = name_key(word)
                if m.span(1) not in whole or k in found or k in place_keys:
                    continue
                if k in NOT_NAMES or k in GROUP_WORDS or k in lexicons().places:
                    continue
                if ordinary(word):
                    continue
                found.add(k)
                out.append(word)
    return out


# A lower-case word standing alone in prose: not inside a path, an identifier or a handle.
_LOWER_WORD = re.compile(
    rf"(?<![A-Za-zÀ-ÿ0-9_@#/.\\-])[{LOWER}]{{3,}}(?![A-Za-zÀ-ÿ0-9_/(\\-]|\.\w)"
)
_LOWER_SURNAME = re.compile(rf"^[ \t]+([{LOWER}]{{3,}})(?![A-Za-zÀ-ÿ0-9_'’])")


def _surname_like(word: str, first: str) -> bool:
    """A lower-case word after the given name ``first`` that is the name's second half: a
    surname of the lists ("kevin smith", "Martin short"), no stop or chat word; or, after a
    given name that is no word itself, a word no list and no lexicon knows ("amy schumer",
    "Mauro renallo"; not "Hope youre", not a laugh: "Mariah hahaha")."""
    k = name_key(word)
    if k in NOT_NAMES or k in VERBISH:
        return False
    names = lexicons()
    if k in names.surnames:
        return True
    return (
        not english.readings(name_key(first))
        and not english.readings(k)
        and k not in names.places
        and k not in names.given
        and len(set(k)) > 3
    )


# A bare article before a capitalised name: a thing ("a Subaru", "the Jetta", "the White
# House"), not a person, unless a cue says otherwise.
_BARE_ARTICLE = re.compile(r"\b(?:a|an|the)\s+$", re.IGNORECASE)
# A possessive, perhaps with an adjective, before a lower-case word: "my favorite meta".
_POSSESSIVE_BEFORE = re.compile(r"\b(?:my|your|his|her|our|their)\s+(?:[a-z]+\s+)?$", re.IGNORECASE)
# An article or possessive, perhaps with an adjective, before a name: "a pink Barbie doll".
_ARTICLE_BEFORE = re.compile(
    r"\b(?:a|an|the|my|your|his|her|our|their)\s+(?:[a-z]+\s+)?$", re.IGNORECASE
)


def _modifier(after: str) -> bool:
    """Whether a base-form noun follows a name ("a Barbie doll", "a teddy bear"): the name
    then says what kind of thing, not who."""
    tail = _LOWER_SURNAME.match(after)
    return tail is not None and english.base_noun(tail[1])


def _lower_case_names(text: str, found: set[str]) -> list[str]:
    """Names typed in lower case, as chat and comments do ("thanks emma", "conor makes
    millions"): a given name of the English-speaking locales that is no word of the lexicon,
    no stop, chat, group or calendar word and no place, with its surname when one follows."""
    names = lexicons()
    out: list[str] = []
    for m in _LOWER_WORD.finditer(text):
        k = name_key(m[0])
        if k in found or k not in names.given_en or k in NOT_NAMES or k in GROUP_WORDS:
            continue
        if english.readings(k) or k in names.places:
            continue
        before = text[: m.start()]
        if (
            _BARE_ARTICLE.search(before) or _POSSESSIVE_BEFORE.search(before)
        ) and not _PERSON_CUE_BEFORE.search(before):
            continue  # "a lotta", "my favorite meta": a thing; "my sister emma" is a person
        tail = _LOWER_SURNAME.match(text[m.end() :])
        name = m[0].capitalize()
        surname = name_key(tail[1]) if tail else ""
        # a surname of another locale's list is more often a word of another tongue here
        if tail and _surname_like(tail[1], m[0]) and (
            surname in names.surnames_en or surname not in names.surnames
        ):
            name = f"{name} {tail[1].capitalize()}"  # "kevin smith"
            found.add(name_key(tail[1]))
        elif _modifier(text[m.end() :]):
            continue
        out.append(name)
        found.add(k)
    return out
