"""English rules of the offline extractor: content noun phrases, place names, name words.

Concepts are noun phrases: maximal runs of words that are not stop words, pronouns,
contractions, numbers or words with no noun reading, trimmed so that they end on a noun, at
most four words, kept whole ("LGBTQ support group"). Whether a word can be a noun comes from
``lemminflect``'s lexicon (its readings: NOUN, VERB, ADJ, ...), loaded on first use. A word
that is also a verb or an adjective ("support", "cool", "sounds") stands alone as a concept
only after a determiner or a possessive ("the kids", "my support"); after a subject pronoun
the run's first word is taken as its verb ("I love pottery" gives "pottery"). Words the
lexicon does not know (acronyms, product names, jargon) count as nouns.

Places: ``in/at/near <Name>`` patterns (the offline extractor's), names ending in a place word
("Grand Canyon", "Lake Tahoe" read both ways) and a short gazetteer of countries, US states
and large cities.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

from mnemoql.engine.providers.hashing import ENGLISH_STOPWORDS, wordset

MAX_PHRASE_WORDS = 4

PRONOUNS = wordset(
    """i me my mine myself you your yours yourself yourselves he him his himself she her hers
    herself it its itself we us our ours ourselves they them their theirs themselves this that
    these those who whom whose which what whatever whoever someone somebody something anyone
    anybody anything everyone everybody everything nobody nothing noone one ones"""
)
SUBJECTS = wordset("i you we they he she it who that this there")
DETERMINERS = wordset(
    """a an the my your his her its our their this that these those some any every each no
    another other many few several more most much lots lot plenty all both either neither
    whose which what one two three four five six seven eight nine ten first second third
    last next new old favorite favourite"""
)
AUXILIARIES = wordset(
    """am is are was were be been being do does did have has had will would shall should can
    could may might must ca wo let lets gonna wanna gotta"""
)
# Interjections, greetings and politeness: never part of a name or a concept.
INTERJECTIONS = wordset(
    """hey hi hello hiya yo dear wow oh ooh ah aw aww ugh hmm um uh yay yeah yep yup nope
    okay ok sure thanks thank congrats congratulations cheers bye goodbye sorry please lol
    haha omg wow welcome great good nice awesome cool amazing morning evening afternoon night
    happy merry"""
)
# Words that are nouns in the lexicon but say nothing as a concept of their own.
VAGUE_NOUNS = wordset(
    """thing things stuff way ways lot lots bit kind sort type time times day days week weeks
    month months year years today tomorrow yesterday tonight moment while place part parts
    people person guy guys man woman kid folks fact idea point reason case question answer
    problem issue matter example number side end start beginning rest deal sense use chance
    hour hours minute minutes second seconds morning evening night afternoon weekend
    something anything everything nothing someone anyone everyone home"""
)
# Verbs common enough that a word which may also be a noun ("keep", "work", "plan") is taken
# as the verb unless a determiner or an adjective comes right before it ("my work").
COMMON_VERBS = wordset(
    """be have do say get make go know take see come think look want give use find tell ask
    work seem feel try leave call need keep let begin help show hear play run move live
    believe bring happen write sit stand lose pay meet include continue set learn change lead
    understand watch follow stop create speak read spend grow open walk win offer remember
    consider appear buy wait serve send expect build stay fall cut reach remain suggest
    raise pass sell require report decide pull start turn plan hope enjoy visit share miss
    check love like hate cook clean finish join drive fly travel sleep eat drink"""
)
HONORIFICS = wordset("mr mrs ms miss dr prof sir madam")
_STOP = (
    HONORIFICS
    | DETERMINERS
    | ENGLISH_STOPWORDS
    | PRONOUNS
    | AUXILIARIES
    | INTERJECTIONS
    | wordset(
        """just also really very quite pretty so too even still yet ever never always often
    sometimes usually maybe perhaps actually basically literally definitely probably almost
    again already soon later now then here there where when why how not no yes like as well
    though although however because since until unless whether while if than else instead
    etc"""
    )
)
_HONORIFIC_DOT = re.compile(r"\b(Mr|Mrs|Ms|Dr|Prof|St|Mt)\.")

PLACE_WORDS = wordset(
    """canyon park lake river mountain mountains mount mt valley bay beach island islands
    coast desert forest falls street st avenue ave road boulevard square city town county
    village harbor harbour airport station museum gallery cathedral church temple palace
    castle tower bridge zoo garden gardens university college stadium arena resort
    national state province district peninsula sea ocean"""
)
GAZETTEER = frozenset(
    line.strip().casefold()
    for line in """
    Afghanistan|Argentina|Australia|Austria|Belgium|Brazil|Canada|Chile|China|Colombia|Cuba
    Czechia|Denmark|Egypt|England|Ethiopia|Finland|France|Germany|Greece|Hungary|Iceland|India
    Indonesia|Iran|Iraq|Ireland|Israel|Italy|Jamaica|Japan|Kenya|Korea|Mexico|Morocco|Nepal
    Netherlands|Nigeria|Norway|Pakistan|Peru|Philippines|Poland|Portugal|Russia|Scotland
    Singapore|Spain|Sweden|Switzerland|Taiwan|Thailand|Turkey|Ukraine|Vietnam|Wales
    Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Georgia
    Hawaii|Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts
    Michigan|Minnesota|Mississippi|Missouri|Montana|Nebraska|Nevada|Ohio|Oklahoma|Oregon
    Pennsylvania|Tennessee|Texas|Utah|Vermont|Virginia|Washington|Wisconsin|Wyoming
    New York|New Jersey|New Mexico|North Carolina|South Carolina|North Dakota|South Dakota
    Rhode Island|West Virginia|New Hampshire
    Amsterdam|Athens|Atlanta|Austin|Bangkok|Barcelona|Beijing|Berlin|Boston|Brussels|Budapest
    Cairo|Chicago|Copenhagen|Dallas|Delhi|Denver|Detroit|Dubai|Dublin|Edinburgh|Florence
    Hamburg|Hong Kong|Honolulu|Houston|Istanbul|Jakarta|Kyoto|Lagos|Las Vegas|Lisbon|London
    Los Angeles|Madrid|Manchester|Melbourne|Miami|Milan|Montreal|Moscow|Mumbai|Munich|Nairobi
    Nashville|New Orleans|Osaka|Oslo|Paris|Philadelphia|Phoenix|Portland|Prague|Rome|San Diego
    San Francisco|Seattle|Seoul|Shanghai|Stockholm|Sydney|Tokyo|Toronto|Vancouver|Venice
    Vienna|Warsaw|Zurich|Hawaii|Bali|Yosemite|Yellowstone""".replace("\n", "|").split("|")
    if line.strip()
)

# An identifier keeps its underscores ("PyEval_EvalCodeEx" is one word, not two); one that
# starts with one ("__sizeof__") is no word at all.
_TOKEN = re.compile(
    r"_*[A-Za-zÀ-ÖØ-öø-ÿ][A-Za-zÀ-ÖØ-öø-ÿ0-9_]*(?:['’][A-Za-z]+)?(?:[-.+#][A-Za-z0-9_]+)*"
    r"|\d[\d,.:]*|\S"
)

_lexicon_lock = threading.Lock()
_get_lemmas: Any = None


def _lemmas(word: str) -> dict[str, tuple[str, ...]]:
    global _get_lemmas
    if _get_lemmas is None:
        with _lexicon_lock:
            if _get_lemmas is None:
                from lemminflect import getAllLemmas

                _get_lemmas = getAllLemmas
    found: dict[str, tuple[str, ...]] = _get_lemmas(word.lower())
    return found


def readings(word: str) -> frozenset[str]:
    """The parts of speech the lexicon knows for ``word`` (empty when unknown)."""
    return frozenset(_lemmas(word))


def _common_verb(word: str) -> bool:
    return any(lemma in COMMON_VERBS for lemma in _lemmas(word).get("VERB", ()))


def inflected_verb(word: str) -> bool:
    """``walked``, ``went``, ``painted``: a form the lexicon knows only as a verb, and not the
    verb's base (so ``runs`` / ``cooks``, nouns too, and ``walk`` are not)."""
    low = word.lower()
    found = _lemmas(low)
    return set(found) == {"VERB"} and low not in found["VERB"]


def base_noun(word: str) -> bool:
    """``bear``, ``doll``: a noun in its own base form, no stop word and no common verb
    (``makes``, ``win``, ``you`` are not)."""
    low = word.lower()
    if low in _STOP or _common_verb(low):
        return False
    return low in _lemmas(low).get("NOUN", ())


def _is_word(token: str) -> bool:
    return token[0].isalpha()


def _kind(token: str) -> str:
    """stop | noun (only a noun, or unknown) | ambiguous (noun and more) | other (no noun)."""
    low = token.casefold()
    if not _is_word(token) or "'" in low or "’" in low or low in _STOP or len(low) < 2:
        return "stop"
    if token.isupper() and len(token) >= 2:  # an acronym
        return "noun"
    found = readings(low)
    if not found:
        return "noun"
    if "NOUN" not in found and "PROPN" not in found:
        return "other"
    return "noun" if found <= {"NOUN", "PROPN"} else "ambiguous"


def _runs(tokens: list[str]) -> Iterator[tuple[int, int]]:
    """[start, end) of each maximal run of noun-capable words; a common verb that may be a
    noun joins a run only right after a determiner or an adjective."""
    start = None
    for i, tok in enumerate(tokens):
        kind = _kind(tok)
        if kind == "ambiguous" and _common_verb(tok):
            before = tokens[i - 1] if i else ""
            if before.casefold() not in DETERMINERS and not _adjective(before):
                kind = "other"
        if kind in ("noun", "ambiguous"):
            if start is None:
                start = i
        elif start is not None:
            yield start, i
            start = None
    if start is not None:
        yield start, len(tokens)


def noun_phrases(text: str) -> list[str]:
    """Content noun phrases of ``text`` in order (repeats kept, original spelling)."""
    out: list[str] = []
    for sentence in re.split(r"[.!?;:\n()\"“”]+", _HONORIFIC_DOT.sub(r"\1", text)):
        tokens = _TOKEN.findall(sentence)
        for start, end in _runs(tokens):
            phrase = _phrase(tokens, start, end)
            if phrase:
                out.append(phrase)
    return out


def _phrase(tokens: list[str], start: int, end: int) -> str | None:
    before = tokens[start - 1].casefold() if start > 0 else ""
    words = tokens[start:end]
    verb_taken = False
    after_subject = before in SUBJECTS or before in AUXILIARIES or before == "to"
    if after_subject and _kind(words[0]) == "ambiguous":  # "I love pottery", "to support"
        words = words[1:]
        verb_taken = True
    elif start == 0 and len(words) > 1 and "VERB" in readings(words[0]):
        words = words[1:]  # an imperative opening a sentence: "Fix race in ...", "Add support"
        verb_taken = True
    while words and (_kind(words[-1]) != "noun" and _kind(words[-1]) != "ambiguous"):
        words.pop()
    while len(words) > 1 and _kind(words[-1]) == "ambiguous" and "ADV" in readings(words[-1]):
        words.pop()  # "school downtown"
    while len(words) > 1 and _kind(words[0]) == "ambiguous" and "ADJ" in readings(words[0]):
        words.pop(0)  # "small school"
    while words and words[-1].casefold() in VAGUE_NOUNS:
        words.pop()
    while words and words[0].casefold() in VAGUE_NOUNS:
        words.pop(0)
    if not words:
        return None
    words = words[-MAX_PHRASE_WORDS:]
    lone = len(words) == 1 and _kind(words[0]) == "ambiguous"
    if lone and not verb_taken and before not in DETERMINERS and not _adjective(before):
        return None
    return " ".join(words)


def lone_ambiguous(phrase: str) -> bool:
    """One word that is not only a noun ("runs", "cool"): no concept without its context."""
    return " " not in phrase and _kind(phrase) == "ambiguous"


def _adjective(word: str) -> bool:
    """A word read only as an adjective ("a wonderful trip": what follows it is a noun)."""
    return bool(word) and word[0].isalpha() and readings(word) == {"ADJ"}


def is_place(name: str) -> bool:
    """A recognisable place: in the gazetteer, or a capitalised name ending (or starting, as in
    "Lake Tahoe") with a place word."""
    words = name.split()
    if name.casefold() in GAZETTEER:
        return True
    if len(words) < 2:
        return False
    return words[-1].casefold() in PLACE_WORDS or words[0].casefold() in {"lake", "mount", "mt"}


def is_stop(word: str) -> bool:
    """A stop word, pronoun, determiner, auxiliary or interjection: never a concept alone."""
    return word.casefold() in _STOP
