"""English places of the offline extractor: ``in/at/near <Name>`` patterns and GeoNames.

A name after a place preposition is a place when the gazetteer or GeoNames knows it, or when
no word of it is in the lexicon ("in Sonmarg"; never "in Argument Clinic"). Without a
preposition a GeoNames name is a place when it is no ordinary word and no given name, has
several words, or a big population.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from mnemoql.engine.providers import _english as english
from mnemoql.engine.providers._namewords import NOT_NAMES, given, name_key, ordinary
from mnemoql.engine.providers.lexicons import COUNTRY_POPULATION, lexicons

_PREPOSITION = (
    r"\b(?:in|at|near|from|to|into|visit(?:ed|ing)?|moved to|went to|flew to|arrived in|"
    r"travel(?:l)?ed to|live[sd]? in|based in)\s+(?:the\s+)?"
)
_PLACE = re.compile(
    _PREPOSITION + r"(?P<place>[A-Z][a-z]+(?:[-'’][A-Z]?[a-z]+)?(?:\s+[A-Z][a-z]+){0,2})"
)
# "to <Name>" is a place only after a verb of motion ("moved to Berlin", not "talked to Bob").
_WEAK_PLACE_PREP = frozenset({"to", "from", "into"})
_MOTION = re.compile(
    r"\b(?:moved|moving|move|went|go|going|flew|fly|travel(?:l)?ed|drove|came|come|back|"
    r"relocated|returned|trip|flight)\s+(?:\w+\s+){0,3}$"
)

# The same prepositions before a place typed in lower case ("i live in canada") or a US
# state's code ("in NJ").
_LOWER_PLACE = re.compile(
    _PREPOSITION + r"(?P<place>[a-z]{3,}(?:\s+[a-z]{3,})?|[A-Z]{2})(?![\w'’-])"
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


def _after_preposition(pattern: re.Pattern[str], text: str) -> Iterator[str]:
    """The names ``pattern`` finds after a place preposition; "to", "from" and "into" count
    only after a verb of motion."""
    for m in pattern.finditer(text):
        prep = m.group(0).split()[0].lower()
        if prep in _WEAK_PLACE_PREP and not _MOTION.search(text[: m.start()] + prep + " "):
            continue
        yield m.group("place")


def cued_places(text: str) -> list[str]:
    """Places named after a place preposition ("in Marseille", "moved to Berlin", "i live in
    canada", "in NJ")."""
    places: list[str] = []
    for place in _after_preposition(_PLACE, text):
        words = [w for w in place.split() if name_key(w) not in NOT_NAMES]
        if words and words == place.split() and cued_place(place):
            places.append(place)
    for found in _after_preposition(_LOWER_PLACE, text):
        # "in new mexico", else the first word alone ("in canada but ...")
        for place in dict.fromkeys((found, found.split()[0])):
            if _lower_place(place):
                places.append(place if place.isupper() else place.title())
                break
    return places


def _lower_place(place: str) -> bool:
    """A place typed in lower case after a place preposition: a country or state, or a city
    of 100,000 people whose name is no word and no given name ("in amsterdam"); or a US
    state's code that is no word ("in NJ", not "in OR")."""
    names = lexicons()
    k = name_key(place)
    if place.isupper():
        return place in names.state_codes and not english.readings(k) and k not in NOT_NAMES
    if any(w in NOT_NAMES for w in k.split()):
        return False
    population = names.places.get(k, 0)
    if population >= COUNTRY_POPULATION:
        return True
    return (
        population >= _MULTIWORD_PLACE
        and not any(english.readings(w) for w in k.split())
        and not given(k.split()[0])
    )
