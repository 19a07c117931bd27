"""English places of the offline extractor: ``in/at/near <Name>`` patterns and GeoNames.

A name after a place preposition is a place when the gazetteer or GeoNames knows it, or when
no word of it is in the lexicon ("in Sonmarg"; never "in Argument Clinic"). Without a
preposition a GeoNames name is a place when it is no ordinary word and no given name, has
several words, or a big population.
"""

from __future__ import annotations

import re

from mnemoql.engine.providers import _english as english
from mnemoql.engine.providers._namewords import NOT_NAMES, given, name_key, ordinary
from mnemoql.engine.providers.lexicons import lexicons

_PLACE = re.compile(
    r"\b(?:in|at|near|from|to|into|visit(?:ed|ing)?|moved to|went to|flew to|arrived in|"
    r"travel(?:l)?ed to|live[sd]? in|based in)\s+(?:the\s+)?"
    r"(?P<place>[A-Z][a-z]+(?:[-'’][A-Z]?[a-z]+)?(?:\s+[A-Z][a-z]+){0,2})"
)
# "to <Name>" is a place only after a verb of motion ("moved to Berlin", not "talked to Bob").
_WEAK_PLACE_PREP = frozenset({"to", "from", "into"})
_MOTION = re.compile(
    r"\b(?:moved|moving|move|went|go|going|flew|fly|travel(?:l)?ed|drove|came|come|back|"
    r"relocated|returned|trip|flight)\s+(?:\w+\s+){0,3}$"
)

# Places this big are places even when their name is also a word or a given name elsewhere.
_BIG_PLACE = 1_000_000
_MULTIWORD_PLACE = 100_000


def known_place(name: str, cued: bool) -> bool:
    """Whether a capitalised name is a place without a doubt: the gazetteer or a place word
    ("Grand Canyon"); a GeoNames place after a place preposition ("in Marseille"), or one
    whose name is no ordinary word and no given name ("Hangzhou"), or a big one."""
    if english.is_place(name):
        return True
    population = lexicons().places.get(name_key(name))
    if population is None:
        return False
    words = name.split()
    if population >= _BIG_PLACE:
        return True
    if cued:  # "in Best", "at Mon": a small town named by a word needs more than "in"
        return len(words) > 1 or not ordinary(name) or population >= _MULTIWORD_PLACE
    if len(words) > 1:
        return population >= _MULTIWORD_PLACE or not given(words[0])
    return not ordinary(name) and not given(name)


def cued_place(place: str) -> bool:
    """A name after "in/at/near ...": a known place, or a name of words the lexicon does not
    know and no given name ("in Sonmarg"); never words like "in Argument Clinic"."""
    if known_place(place, cued=True):
        return True
    words = place.split()
    if re.search(r"['’]s$", place):
        return False  # "at Sophia's party": a possessive names an owner, not a place
    return not any(ordinary(w) or english.readings(w) for w in words) and not given(words[0])


def cued_places(text: str) -> list[str]:
    """Places named after a place preposition ("in Marseille", "moved to Berlin"); "to",
    "from" and "into" count only after a verb of motion."""
    places: list[str] = []
    for m in _PLACE.finditer(text):
        place = m.group("place")
        prep = m.group(0).split()[0].lower()
        if prep in _WEAK_PLACE_PREP and not _MOTION.search(text[: m.start()] + prep + " "):
            continue
        words = [w for w in place.split() if name_key(w) not in NOT_NAMES]
        if words and words == place.split() and cued_place(place):
            places.append(place)
    return places
