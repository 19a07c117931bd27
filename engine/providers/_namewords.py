"""Which capitalised English words can name a person or a place at all.

The offline extractor's name rules (``_english_persons``, ``_english_places``) and its speaker
and concept rules share these: words that are never names (stop, chat, role, heading, calendar
and group words), the shape of a name word, and two lexicon tests: an *ordinary* word (one the
English lexicon knows and no English-locale name list holds: "Patch", "Python") and a *given*
name (of any locale's list).
"""

from __future__ import annotations

import re
import unicodedata

from mnemoql.engine.providers import _english as english
from mnemoql.engine.providers.hashing import ENGLISH_STOPWORDS, wordset
from mnemoql.engine.providers.lexicons import lexicons


def name_key(name: str) -> str:
    """The form names are compared in: NFKC, casefolded, stripped."""
    return unicodedata.normalize("NFKC", name).casefold().strip()


ROLE_WORDS = frozenset(
    {"user", "assistant", "system", "human", "ai", "bot", "model", "tool", "me", "you",
     "用户", "助手", "系统", "模型", "机器人", "我", "你", "工具"}
)
# Line prefixes that label content rather than name a speaker ("Note: ...").
HEADING_WORDS = wordset(
    """note notes summary example examples warning todo update question answer q a title
    subject date time re fwd fw from to cc bcc tip tips step steps result results status
    description name type id url link source output input error usage important p s ps
    nb edit caution info details"""
)
CALENDAR_WORDS = wordset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april may
    june july august september october november december today tomorrow yesterday christmas
    easter thanksgiving halloween hanukkah diwali ramadan"""
)
# Chat shorthand: capitalised at a sentence start ("Wtf happened", "Im waiting"), never a name.
CHAT_WORDS = wordset(
    """lol lmao lmfao rofl omg omfg wtf tbh idk imo imho smh ikr btw fyi plz pls thx ty ur im
    ima dunno vid vids yall ya da bro bruh dude fam xd xoxo gg rip nvm irl af fr ily ppl fuck
    fucking fuckin damn shit"""
)
# Nationalities, faiths and parties: capitalised words the lexicon often does not know, and
# groups rather than persons ("speaking French", "Jews left").
GROUP_WORDS = wordset(
    """american americans british english french german germans chinese japanese korean
    koreans indian indians russian russians italian italians spanish mexican mexicans canadian
    canadians australian australians irish scottish welsh dutch swedish norwegian danish
    finnish polish greek greeks turkish arab arabs arabic persian iranian iranians iraqi
    israeli israelis palestinian palestinians syrian syrians egyptian african africans
    nigerian kenyan brazilian brazilians argentine argentinian colombian cuban jamaican
    filipino filipinos vietnamese thai indonesian pakistani afghan ukrainian ukrainians
    portuguese swiss austrian belgian hungarian czech european europeans asian asians latino
    latinos latina hispanic hispanics british brits muslim muslims islamic christian
    christians catholic catholics protestant jewish jew jews hindu hindus buddhist sikh
    mormon democrat democrats republican republicans texan californian western eastern"""
)
NOT_NAMES = (
    ENGLISH_STOPWORDS
    | CHAT_WORDS
    | ROLE_WORDS
    | HEADING_WORDS
    | CALENDAR_WORDS
    | english.INTERJECTIONS
    | english.HONORIFICS
)
VERBISH = wordset(
    """said says told tell asked ask think thinks thought want wants wanted like likes liked
    went goes going come came comes know knows knew need needs needed feel felt seem seems
    start started moved move working work works worked used using use uses look looks looked
    take took taken give gave given find found keep kept call called tried trying try much
    things thing something anything nothing everything someone anyone week weeks month months
    year years time times today tomorrow yesterday last next first lots back would could should
    about again there their where which while these those other every since always never near
    without within across along around behind beyond toward towards upon onto inside outside
    maybe perhaps actually pretty quite sure right good great nice welcome thanks please sorry
    yeah anyway though although however whether"""
)
# Latin letters with accents too ("Jürgen Klopp", "António Guterres").
UPPER = "A-ZÀ-ÖØ-Þ"
LOWER = "a-zß-öø-ÿ"
NAME_WORD = re.compile(rf"^[{UPPER}][{LOWER}]+(?:[-'’][{UPPER}]?[{LOWER}]+)*$")
NAME_PART = rf"[{UPPER}][{LOWER}]+(?:[-'’][{UPPER}]?[{LOWER}]+)*"
# Latin boundaries, not \b: a name touching Chinese text ("Bart在海边") still stands alone.
# Nor a handle ("@Bob" is an account, as WNUT17 labels it: no person).
CAP_SEQ = re.compile(
    rf"(?<![A-Za-zÀ-ÿ0-9_@]){NAME_PART}(?:\s+{NAME_PART}){{0,2}}(?![A-Za-zÀ-ÿ0-9_])"
)


def ordinary(word: str) -> bool:
    """A word the English lexicon knows and no name list holds ("Patch", "Fixed", "Python"):
    capitalised, it opens a sentence or names a thing, not a person."""
    k = name_key(word)
    names = lexicons()
    found = english.readings(k)
    if found == {"VERB"}:
        return True  # "Add", "Fix": the lists hold a few of these too
    return bool(found) and k not in names.given_en and k not in names.surnames_en


def given(word: str) -> bool:
    return name_key(word) in lexicons().given

