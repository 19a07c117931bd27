"""A rule-based extractor for when no chat model is configured.

It is honest rather than clever: one event per paragraph or utterance block (at most
``MAX_EVENTS``), the block's leading sentence as summary, persons from jieba's ``nr`` tags,
``Name:`` speaker prefixes and capitalised English names checked against name lists
(``lexicons``: a word the English lexicon knows and no English-locale name list holds, such as
"Patch" or "Python", is no person), given names typed in lower case as chat does ("thanks
emma"), names joined to a person by "and" / "," and performers' "DJ" / "Lil" names;
locations from ``ns`` tags, GeoNames and ``in/at <Place>`` patterns, and concepts: the most
salient nouns and noun phrases, about one per 150 characters (``concept_budget``). The output
is deterministic and always validates as :class:`prompts.extraction.Extraction`.
``bench/extraction.py`` measures it.

jieba's dictionary and the name lists load (a few seconds) on first use or in ``warm_up``, in a
worker thread.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mnemoql.engine.providers import _english as english
from mnemoql.engine.providers.lexicons import lexicons
from mnemoql.engine.providers.local import ENGLISH_STOPWORDS, wordset
from mnemoql.prompts.extraction import Extraction

MAX_EVENTS = 8
MAX_CONCEPTS_PER_EVENT = 8
MAX_CONCEPTS_PER_SAVE = 16
# One concept per this many characters of a save (the rest are the least salient).
CHARS_PER_CONCEPT = 150
CJK_WEIGHT = 3
MAX_ENTITIES_PER_EVENT = 12
SUMMARY_MAX = 200
# A text this short is one event whatever its layout.
SHORT_TEXT = 280
# Entity detection reads at most this much of each block; the summary and content are unaffected.
_ANALYSE_MAX = 12_000

ROLE_WORDS = frozenset(
    {"user", "assistant", "system", "human", "ai", "bot", "model", "tool", "me", "you",
     "用户", "助手", "系统", "模型", "机器人", "我", "你", "工具"}
)
# Line prefixes that label content rather than name a speaker ("Note: ...").
_HEADING_WORDS = wordset(
    """note notes summary example examples warning todo update question answer q a title
    subject date time re fwd fw from to cc bcc tip tips step steps result results status
    description name type id url link source output input error usage important p s ps
    nb edit caution info details"""
)
_CALENDAR_WORDS = wordset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april may
    june july august september october november december today tomorrow yesterday christmas
    easter thanksgiving halloween hanukkah diwali ramadan"""
)
# Chat shorthand: capitalised at a sentence start ("Wtf happened", "Im waiting"), never a name.
_CHAT_WORDS = wordset(
    """lol lmao lmfao rofl omg omfg wtf tbh idk imo imho smh ikr btw fyi plz pls thx ty ur im
    ima dunno vid vids yall ya da bro bruh dude fam xd xoxo gg rip nvm irl af fr ily ppl fuck
    fucking fuckin damn shit"""
)
# Nationalities, faiths and parties: capitalised words the lexicon often does not know, and
# groups rather than persons ("speaking French", "Jews left").
_GROUP_WORDS = wordset(
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
_NOT_NAMES = (
    ENGLISH_STOPWORDS
    | _CHAT_WORDS
    | ROLE_WORDS
    | _HEADING_WORDS
    | _CALENDAR_WORDS
    | english.INTERJECTIONS
    | english.HONORIFICS
)
_VERBISH = wordset(
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
_ZH_STOP_NOUNS = frozenset(
    {"时候", "东西", "事情", "样子", "地方", "方面", "情况", "部分", "时间", "问题", "方式", "内容",
     "结果", "过程", "一下", "大家", "人们", "有人"}
)
_CONCEPT_FLAGS = frozenset({"n", "nz", "vn"})
# Common words jieba's dictionary tags as places (ns) or person names (nr).
_ZH_NOT_PLACES = wordset(
    """上市 东西 哥哥 深度 长度 新鲜 美丽 英雄 爱国 庆典 建国 开国 治安 太阳 城市 城镇 外国
    大国 山区 回国 古城 南北 江湖 湖泊 海洋 共和国 王国 阿哥 维度 入口 出口 中断 大街 南路 自治县
    自治州 永乐 高原 平原 山脉 冰川 海峡 河口 朝廷"""
)
_ZH_VAGUE_TIMES = wordset("当前 现在 目前 当时 此时 之前 以后 之后 以前 同时 平时 有时 随时 当下")
_ZH_NOT_PERSONS = wordset(
    """余弦 卫星 和尚 小姐 文明 明白 武功 王朝 道德 阳光 陆军 索引"""
)

_SPEAKER = re.compile(
    r"^[ \t]*(?P<name>[A-Za-z][A-Za-z.'’ -]{0,40}?|[\u4e00-\u9fff·]{1,8})[ \t]*[:：][ \t]*(?=\S)"
)
# Latin letters with accents too ("Jürgen Klopp", "António Guterres").
_UPPER = "A-ZÀ-ÖØ-Þ"
_LOWER = "a-zß-öø-ÿ"
_NAME_WORD = re.compile(rf"^[{_UPPER}][{_LOWER}]+(?:[-'’][{_UPPER}]?[{_LOWER}]+)*$")
_NAME_PART = rf"[{_UPPER}][{_LOWER}]+(?:[-'’][{_UPPER}]?[{_LOWER}]+)*"
# Latin boundaries, not \b: a name touching Chinese text ("Bart在海边") still stands alone.
_CAP_SEQ = re.compile(
    rf"(?<![A-Za-zÀ-ÿ0-9_]){_NAME_PART}(?:\s+{_NAME_PART}){{0,2}}(?![A-Za-zÀ-ÿ0-9_])"
)
# Titles before a name: stripped from it, and they make even a word like "Trump" a person.
_TITLES = english.HONORIFICS | wordset(
    """president senator governor minister chancellor judge colonel general captain coach
    king queen prince princess pope saint lord lady professor doctor uncle aunt"""
)
# Stage-name prefixes: what follows is a performer's name, whatever its words.
_STAGE_NAME = re.compile(r"(?<![A-Za-z])(DJ|MC)\s+$")
_TITLE_BEFORE = re.compile(r"\b(?:mr|mrs|ms|dr|prof)\.?\s+$", re.IGNORECASE)
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
_TIME_EN = re.compile(
    r"\b(?:(?:last|next|this)\s+(?:week|month|year|weekend|monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday|night|morning|evening)|yesterday|today|tomorrow|tonight|"
    r"(?:on\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(?:in\s+)?(?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;…])|(?<=[.])(?=\s)|\n")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_FENCE = re.compile(r"^\s*(```|~~~)")
_MARKUP = re.compile(r"^\s*(?:#{1,6}\s+|[-*+>]\s+|\d+[.)]\s+)")
# Sphinx / reST roles (":c:func:`x`", ":mod:`x`"), inline-code backticks and URLs: markup,
# not words.
_ROLE = re.compile(r"(?<![\w:]):(?:[a-z]+:){1,2}(?=`)|`+|\b(?:https?|ftp)://\S+")
# A reference number ("gh-issue-92173", "bpo-32782", "PEP-8") or a version: no concept.
_REFERENCE = re.compile(r"^(?:[A-Za-z]+-)+\d[\d.]*$|^v?\d+(?:[.\d]+)*[a-z]?\d*$")

log = logging.getLogger(__name__)

_jieba_lock = threading.Lock()
_posseg: Any = None


def _pos_cut(text: str) -> list[tuple[str, str]]:
    """jieba part-of-speech tags, loading the dictionary on first use with its logging muted."""
    global _posseg
    with _jieba_lock:
        if _posseg is None:
            import jieba
            import jieba.posseg

            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
            _posseg = jieba.posseg
        return [(pair.word, pair.flag) for pair in _posseg.cut(text)]


def _key(name: str) -> str:
    return unicodedata.normalize("NFKC", name).casefold().strip()


@dataclass(slots=True)
class _Block:
    text: str
    speaker: str | None = None
    persons: list[str] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    concepts: list[str] = field(default_factory=list)
    salience: dict[str, float] = field(default_factory=dict)  # concept key -> weight
    time: str | None = None


def _speaker_of(line: str, zh_prefix_counts: Counter[str]) -> str | None:
    m = _SPEAKER.match(line)
    if not m:
        return None
    name = m.group("name").strip()
    if _CJK.match(name):
        if _key(name) in ROLE_WORDS or zh_prefix_counts[name] >= 2:
            return name
        tags = _pos_cut(name)
        return name if len(tags) == 1 and tags[0][1] == "nr" else None
    words = name.split()
    if _key(name) in ROLE_WORDS:
        return name
    if not 1 <= len(words) <= 3 or any(not _NAME_WORD.match(w) for w in words):
        return None
    if _key(words[0]) in _HEADING_WORDS or any(_ordinary(w) for w in words):
        return None  # "Now Playing: ...", "Comment: ..." label a line, no one speaks it
    return name


def split_blocks(content: str) -> list[_Block]:
    """Paragraphs, or utterances when lines start with speaker prefixes; at most MAX_EVENTS."""
    text = content.replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        return []
    lines = text.split("\n")
    zh_counts: Counter[str] = Counter(
        m.group("name") for line in lines if (m := _SPEAKER.match(line)) and _CJK.match(m.group(1))
    )
    speakers = [_speaker_of(line, zh_counts) for line in lines]
    blocks: list[_Block] = []
    current: list[str] = []
    current_speaker: str | None = None

    def flush() -> None:
        body = "\n".join(current).strip()
        if body:
            blocks.append(_Block(body, current_speaker))
        current.clear()

    for line, speaker in zip(lines, speakers, strict=True):
        if speaker is not None or not line.strip():
            flush()
            current_speaker = speaker
        if line.strip():
            current.append(line)
    flush()
    if len(blocks) == 1 and len(text) > 3 * SHORT_TEXT and "\n" in text:
        blocks = _line_blocks(lines)
    if len(text) <= SHORT_TEXT and not any(speakers):
        blocks = [_Block(text)]
    return _merge(blocks, MAX_EVENTS)


def _line_blocks(lines: list[str]) -> list[_Block]:
    """One long paragraph of short lines: group consecutive lines into ~SHORT_TEXT blocks."""
    blocks: list[_Block] = []
    current: list[str] = []
    size = 0
    for line in lines:
        if not line.strip():
            continue
        current.append(line)
        size += len(line)
        if size >= SHORT_TEXT:
            blocks.append(_Block("\n".join(current).strip()))
            current, size = [], 0
    if current:
        blocks.append(_Block("\n".join(current).strip()))
    return blocks


def _merge(blocks: list[_Block], limit: int) -> list[_Block]:
    if len(blocks) <= limit:
        return blocks
    merged: list[_Block] = []
    n = len(blocks)
    for g in range(limit):
        part = blocks[g * n // limit : (g + 1) * n // limit]
        merged.append(_Block("\n".join(b.text for b in part), part[0].speaker))
    return merged


def summarise(block: str) -> str:
    """The leading sentence (extended while very short), trimmed to SUMMARY_MAX; never empty."""
    lines = [_MARKUP.sub("", ln) for ln in block.split("\n") if not _FENCE.match(ln)]
    flat = "\n".join(ln for ln in lines if ln.strip()).strip() or block.strip()
    sentences = [s.strip() for s in _SENTENCE_END.split(flat) if s and s.strip()]
    summary = ""
    for sentence in sentences:
        summary = f"{summary} {sentence}".strip() if summary else sentence
        if len(summary) >= 12:
            break
    summary = " ".join(summary.split()) or " ".join(flat.split()) or flat
    if len(summary) > SUMMARY_MAX:
        summary = summary[: SUMMARY_MAX - 1].rstrip() + "…"
    return summary


def _is_name_word(word: str) -> bool:
    return bool(_NAME_WORD.match(word)) and _key(word) not in _NOT_NAMES


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


def _ordinary(word: str) -> bool:
    """A word the English lexicon knows and no name list holds ("Patch", "Fixed", "Python"):
    capitalised, it opens a sentence or names a thing, not a person."""
    k = _key(word)
    names = lexicons()
    found = english.readings(k)
    if found == {"VERB"}:
        return True  # "Add", "Fix": the lists hold a few of these too
    return bool(found) and k not in names.given_en and k not in names.surnames_en


def _given(word: str) -> bool:
    return _key(word) in lexicons().given


# Places this big are places even when their name is also a word or a given name elsewhere.
_BIG_PLACE = 1_000_000
_MULTIWORD_PLACE = 100_000


def _known_place(name: str, cued: bool) -> bool:
    """Whether a capitalised name is a place without a doubt: the gazetteer or a place word
    ("Grand Canyon"); a GeoNames place after a place preposition ("in Marseille"), or one
    whose name is no ordinary word and no given name ("Hangzhou"), or a big one."""
    if english.is_place(name):
        return True
    population = lexicons().places.get(_key(name))
    if population is None:
        return False
    words = name.split()
    if population >= _BIG_PLACE:
        return True
    if cued:  # "in Best", "at Mon": a small town named by a word needs more than "in"
        return len(words) > 1 or not _ordinary(name) or population >= _MULTIWORD_PLACE
    if len(words) > 1:
        return population >= _MULTIWORD_PLACE or not _given(words[0])
    return not _ordinary(name) and not _given(name)


def _cued_place(place: str) -> bool:
    """A name after "in/at/near ...": a known place, or a name of words the lexicon does not
    know and no given name ("in Sonmarg"); never words like "in Argument Clinic"."""
    if _known_place(place, cued=True):
        return True
    words = place.split()
    if re.search(r"['’]s$", place):
        return False  # "at Sophia's party": a possessive names an owner, not a place
    return not any(_ordinary(w) or english.readings(w) for w in words) and not _given(words[0])


def _is_person(words: list[str], cue: bool) -> bool:
    """Persons by name lists: two or three name-like words led by a given name ("Pablo
    Galindo"), or after a cue ("Patch by Serhiy Storchaka"); one word after a cue ("with
    Bob", "Priya said") when it is no ordinary word, or a given name the lexicon does not
    know as a word, wherever it stands ("thanks, Caroline", "Bart won
    first place"; "Will", "Max" are words and need a cue)."""
    if any(_key(w) in _GROUP_WORDS for w in words):
        return False
    if len(words) >= 2 and _given(words[0]) and _key(words[-1]) in lexicons().surnames:
        # "Grace Hopper": a given name and a surname of any locale, words or not
        return not any(_ordinary(w) for w in words[:-1])
    if any(_ordinary(w) for w in words):
        return False
    if len(words) >= 2:
        return cue or _given(words[0]) or _key(words[-1]) in lexicons().surnames
    word = words[0]
    return cue or (_given(word) and not english.readings(_key(word)))


def _english_entities(text: str) -> tuple[list[str], list[str], list[str]]:
    """(persons, places, other proper nouns) by capitalisation patterns and name lists."""
    places: list[str] = []
    for m in _PLACE.finditer(text):
        place = m.group("place")
        prep = m.group(0).split()[0].lower()
        if prep in _WEAK_PLACE_PREP and not _MOTION.search(text[: m.start()] + prep + " "):
            continue
        words = [w for w in place.split() if _key(w) not in _NOT_NAMES]
        if words and words == place.split() and _cued_place(place):
            places.append(place)
    place_keys = {_key(p) for p in places}
    persons: list[str] = []
    proper: list[str] = []
    for m in _CAP_SEQ.finditer(text):
        words = m.group(0).split()
        titled = False
        while words and (_key(words[0]) in _NOT_NAMES or _key(words[0]) in _TITLES):
            titled = titled or _key(words[0]) in _TITLES
            words.pop(0)
        owner = bool(words and re.search(r"['’]s$", words[-1]))
        if owner:
            words[-1] = words[-1][:-2]  # "Sophia’s party": the owner's name
        if not words or any(_key(w) in _NOT_NAMES for w in words):
            continue
        name = " ".join(words)
        if _key(name) in place_keys or any(_key(name) in k.split() for k in place_keys):
            continue
        start = m.start() + m.group(0).index(words[0])
        before = text[:start]
        # in Chinese text capitals mark names, not sentence starts ("Bart在海边放风筝")
        in_chinese = bool(_CJK.match(before[-1:]) or _CJK.match(text[m.end() : m.end() + 1]))
        sentence_start = not in_chinese and (
            not before.strip() or bool(re.search(r"[.!?:：\n]\s*$", before))
        )
        if _key(name) in _INDEFINITE:
            continue
        weak_cue = bool(_WEAK_CUE_AFTER.match(text[m.end() :]) or _WEAK_CUE_BEFORE.search(before))
        person_cue = (
            bool(_PERSON_CUE_BEFORE.search(before))
            or bool(_PERSON_CUE_AFTER.match(text[m.end() :]))
            or (weak_cue and not any(english.readings(_key(w)) for w in words))
            or (sentence_start and _acts(text[m.end() :]))
            or (in_chinese and _given(words[0]))
        )
        titled = titled or bool(_TITLE_BEFORE.search(before))
        if stage := _STAGE_NAME.search(before):  # "DJ Khaled", "Lil Wayne": a performer
            words.insert(0, stage[1])
            name, titled = " ".join(words), True
        elif words[0] == "Lil" and len(words) > 1:
            titled = True
        tail = _LOWER_SURNAME.match(text[m.end() :])
        if not owner and len(words) < 3 and _given(words[0]) and tail and _surname_like(tail[1]):
            words.append(tail[1].capitalize())  # "Donald trump", "Kylie minogue"
            name = " ".join(words)
        if titled and len(words) <= 3:
            persons.append(name)  # "President Trump", "Mrs. Lee"
        elif _known_place(name, cued=False) and (not person_cue or not _given(words[0])):
            places.append(name)
            place_keys.add(_key(name))
        elif _is_person(words, person_cue) and (
            person_cue or not (_ARTICLE_BEFORE.search(before) and _modifier(text[m.end() :]))
        ):
            persons.append(name)
        elif not sentence_start or len(words) > 1:
            proper.append(name)
    named = {k for p in persons for k in [_key(p), *_key(p).split()]}
    persons.extend(_lower_case_names(text, named))
    persons.extend(_coordinated(text, persons, place_keys))
    return persons, places, proper


_CAPS_WORD = re.compile(r"(?<![A-Za-z])[A-Z][A-Z'’]+(?![A-Za-z])")


def _shouted(text: str) -> str:
    """A text typed mostly in capitals ("I LIVE FOR YOUR VLOGS ESTEE") as it would be written:
    words the lexicon knows in lower case, the others capitalised, so the name rules read it as
    ordinary text ("Estee")."""
    letters = [c for c in text if c.isalpha() and c.isascii()]
    if len(letters) < 12 or sum(c.isupper() for c in letters) < 0.8 * len(letters):
        return text

    def recase(m: re.Match[str]) -> str:
        k = _key(m[0])
        if k in _NOT_NAMES or english.readings(k):
            return m[0].lower()
        return m[0].capitalize()

    return _CAPS_WORD.sub(recase, text)


_AND = r"\s*(?:,|&|\band\b|\bor\b|\bvs\.?)\s*"


def _coordinated(text: str, persons: list[str], place_keys: set[str]) -> list[str]:
    """Names joined to a person by "and", "&", "or", "vs" or a comma ("Ayanda and Glenda",
    "Dwayne, Ty, Luda"): persons too when they are no ordinary, group or place word."""
    found = {_key(p) for p in persons}
    whole = {m.span() for m in _CAP_SEQ.finditer(text)}  # not a part of a longer name
    out: list[str] = []
    for person in persons:
        p = re.escape(person)
        for pattern in (rf"{p}{_AND}({_NAME_PART})", rf"({_NAME_PART}){_AND}{p}"):
            for m in re.finditer(pattern, text):
                word = m[1]
                k = _key(word)
                if m.span(1) not in whole or k in found or k in place_keys:
                    continue
                if k in _NOT_NAMES or k in _GROUP_WORDS or k in lexicons().places:
                    continue
                if _ordinary(word):
                    continue
                found.add(k)
                out.append(word)
    return out


# A lower-case word standing alone in prose: not inside a path, an identifier or a handle.
_LOWER_WORD = re.compile(
    rf"(?<![A-Za-zÀ-ÿ0-9_@#/.\\-])[{_LOWER}]{{3,}}(?![A-Za-zÀ-ÿ0-9_/(\\-]|\.\w)"
)
_LOWER_SURNAME = re.compile(rf"^[ \t]+([{_LOWER}]{{3,}})(?![A-Za-zÀ-ÿ0-9_'’])")


def _surname_like(word: str) -> bool:
    """A lower-case word after a given name that is the name's second half: a surname of the
    lists ("kevin smith", "Martin short"), no stop or chat word."""
    k = _key(word)
    return k in lexicons().surnames and k not in _NOT_NAMES and k not in _VERBISH


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
        k = _key(m[0])
        if k in found or k not in names.given_en or k in _NOT_NAMES or k in _GROUP_WORDS:
            continue
        if english.readings(k) or k in names.places:
            continue
        tail = _LOWER_SURNAME.match(text[m.end() :])
        name = m[0].capitalize()
        if tail and _surname_like(tail[1]) and _key(tail[1]) in names.surnames_en:
            name = f"{name} {tail[1].capitalize()}"  # "kevin smith"
        elif _modifier(text[m.end() :]):
            continue
        out.append(name)
        found.add(k)
    return out


def _english_concepts(text: str, exclude: set[str]) -> list[tuple[str, int]]:
    """Content noun phrases (``_english``) with their first position, names left out: a
    phrase holding a person or place word keeps only the words around it."""
    out: list[tuple[str, int]] = []
    folded = text.casefold()
    for phrase in english.noun_phrases(text):
        parts: list[list[str]] = [[]]
        for word in phrase.split():
            if (
                _key(word) in exclude
                or _key(word) in _NOT_NAMES
                or _key(word) in _VERBISH
                or not _concept_word(word)
            ):
                parts.append([])
            else:
                parts[-1].append(word)
        for words in parts:
            if not words or (len(parts) > 1 and english.lone_ambiguous(" ".join(words))):
                continue
            name = " ".join(_common_case(w) for w in words)
            if _key(name) not in exclude:
                out.append((name, folded.find(_key(name))))
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
_IDENTIFIER = 2.0
_PHRASE = 1.5
_PROPER = 1.5


def _salience(phrase: str) -> float:
    if _techy(phrase) or (phrase.isupper() and len(phrase) >= 2 and phrase.isalnum()):
        return _IDENTIFIER
    return _PHRASE if " " in phrase else 1.0


def _concept_word(word: str) -> bool:
    """Not a reference number or version ("gh-issue-92173", "3.11.2"), not a run of one
    character ("yyyy..."), not a lone letter."""
    letters = [c for c in word.casefold() if c.isalnum()]
    return len(letters) >= 2 and len(set(letters)) > 1 and not _REFERENCE.match(word)


def concept_budget(text: str) -> int:
    """How many concepts one save keeps: about one per CHARS_PER_CONCEPT characters (a
    Chinese character counts as CJK_WEIGHT, it says about as much as that many latin ones),
    at least 1 and at most MAX_CONCEPTS_PER_SAVE."""
    cjk = len(_CJK.findall(text))
    weighted = len(text) - cjk + CJK_WEIGHT * cjk
    return max(1, min(MAX_CONCEPTS_PER_SAVE, round(weighted / CHARS_PER_CONCEPT)))


def _common_case(word: str) -> str:
    """A capitalised dictionary word (a sentence start) in lower case; names, acronyms and
    identifiers as written."""
    if word[:1].isupper() and word[1:].islower() and english.readings(word):
        return word.lower()
    return word


def _plain(text: str) -> str:
    """The block without speaker prefixes, markdown heading/bullet marks and code fences."""
    lines = []
    for line in text.split("\n"):
        if _FENCE.match(line):
            continue
        m = _SPEAKER.match(line)
        if m and (_key(m.group("name")) in ROLE_WORDS or _NAME_WORD.match(m.group("name"))):
            line = line[m.end() :]
        lines.append(_ROLE.sub("", _MARKUP.sub("", line)))
    return "\n".join(lines)


def _analyse(block: _Block) -> None:
    text = _shouted(_plain(block.text[:_ANALYSE_MAX]))
    persons: list[str] = []
    locations: list[str] = []
    nouns: dict[str, float] = {}  # salience by normalised key
    surface: dict[str, str] = {}
    order: dict[str, int] = {}

    def add(word: str, weight: float, position: int) -> None:
        if not _concept_word(word):
            return
        k = _key(word)
        nouns[k] = nouns.get(k, 0.0) + weight
        surface.setdefault(k, word)
        order.setdefault(k, position)

    times: list[str] = []
    has_cjk = bool(_CJK.search(text))
    if block.speaker and _key(block.speaker) not in ROLE_WORDS:
        persons.append(block.speaker)
    if has_cjk:
        position = 0
        for word, flag in _pos_cut(text):
            i, position = position, position + len(word)
            w = word.strip()
            if len(w) < 2:
                continue
            if flag == "nr" and len(w) <= 4 and _all_cjk(w) and w not in _ZH_NOT_PERSONS:
                persons.append(w)
            elif flag == "ns" and _all_cjk(w) and w not in _ZH_NOT_PLACES:
                locations.append(w)
            elif flag == "t" and _CJK.match(w) and w not in _ZH_VAGUE_TIMES:
                times.append(w)
            elif flag in _CONCEPT_FLAGS and w not in _ZH_STOP_NOUNS and _key(w) not in ROLE_WORDS:
                add(w, 1, i)
    en_persons, en_places, proper = _english_entities(text)
    persons.extend(en_persons)
    locations.extend(en_places)
    exclude = {_key(p) for p in persons + locations} | ROLE_WORDS
    exclude |= {k for p in persons + locations for k in _key(p).split()}
    for name in proper:
        add(name, _PROPER, text.find(name))
    proper_keys = {_key(n) for n in proper}
    for phrase, position in _english_concepts(text, exclude):
        if _key(phrase) not in proper_keys:
            add(phrase, _salience(phrase), position)
    for k in exclude:
        nouns.pop(k, None)
    block.persons = _dedupe(persons)[:MAX_ENTITIES_PER_EVENT]
    block.locations = _dedupe(locations)[:MAX_ENTITIES_PER_EVENT]
    ranked = sorted(nouns, key=lambda k: (-nouns[k], order[k]))[:MAX_CONCEPTS_PER_EVENT]
    block.concepts = [surface[k] for k in ranked]
    block.salience = {k: nouns[k] for k in ranked}
    m = _TIME_EN.search(text)
    block.time = m.group(0) if m else (times[0] if times else None)


def _all_cjk(word: str) -> bool:
    return all(_CJK.match(c) or c == "·" for c in word)


def _dedupe(names: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for name in names:
        k = _key(name)
        if k and k not in seen:
            seen.add(k)
            out.append(name)
    return out


class _Registry:
    """Entity refs shared by all events of one extraction, keyed by normalised name."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.items: list[dict[str, Any]] = []
        self._refs: dict[str, str] = {}

    def ref(self, name: str) -> str:
        k = _key(name)
        if k not in self._refs:
            self._refs[k] = f"{self.prefix}{len(self.items) + 1}"
            self.items.append({"ref": self._refs[k], "name": name, "aliases": []})
        return self._refs[k]

    def alias(self, name: str, alias: str) -> None:
        """Record ``alias`` on the item of ``name`` (which must have a ref already)."""
        item = self.items[int(self._refs[_key(name)][len(self.prefix) :]) - 1]
        if _key(alias) not in {_key(a) for a in item["aliases"]} | {_key(name)}:
            item["aliases"].append(alias)


def _nicknames(blocks: list[_Block]) -> dict[str, str]:
    """Short names that start exactly one speaker's name ("Mel" for speaker "Melanie"):
    normalised short name -> the speaker's name."""
    speakers = {_key(b.speaker): b.speaker for b in blocks if b.speaker}
    out: dict[str, str] = {}
    for b in blocks:
        for p in [*b.persons, *(c for c in b.concepts if c[:1].isupper())]:
            k = _key(p)
            if k in speakers or len(k) < 3 or " " in k:
                continue
            owners = [s for key, s in speakers.items() if key.startswith(k) and key != k]
            if len(owners) == 1:
                out[k] = owners[0]
    return out


def _resolve_names(
    blocks: list[_Block], budget: int
) -> tuple[dict[str, list[str]], list[str]]:
    """Across the blocks of one save: a name that is a place anywhere is no person, a short
    name of a speaker is that speaker, a name that is a person anywhere (a speaker, say) is no
    concept but a participant where it is named; then at most ``budget`` concepts, the most
    salient (their weights summed over the blocks; the first seen on ties). Returns the aliases
    found per person name and the kept concept keys, the most salient first."""
    places = {_key(loc) for b in blocks for loc in b.locations}
    nick = _nicknames(blocks)
    aliases: dict[str, list[str]] = {}
    for b in blocks:
        named = [c for c in b.concepts if _key(c) in nick]
        b.concepts = [c for c in b.concepts if _key(c) not in nick]
        b.persons = b.persons + named
        for i, p in enumerate(b.persons):
            if _key(p) in nick:
                aliases.setdefault(nick[_key(p)], []).append(p)
                b.persons[i] = nick[_key(p)]
    people = {_key(p) for b in blocks for p in b.persons} - places
    salience: dict[str, float] = {}
    first: dict[str, int] = {}
    for b in blocks:
        named = [c for c in b.concepts if _key(c) in people]
        b.persons = _dedupe([p for p in b.persons if _key(p) not in places] + named)
        b.concepts = [c for c in b.concepts if _key(c) not in people | places]
        for c in b.concepts:
            k = _key(c)
            salience[k] = salience.get(k, 0.0) + b.salience.get(k, 1.0)
            first.setdefault(k, len(first))
    ranked = sorted(salience, key=lambda k: (-salience[k], first[k]))
    kept = set(ranked[:budget])
    for b in blocks:
        b.concepts = [c for c in b.concepts if _key(c) in kept]
    return aliases, ranked[:budget]


class OfflineExtractor:
    """Extraction with no model: see the module docstring for the rules."""

    provider: ClassVar[str] = "offline"
    model: ClassVar[str] = "offline-rules-v1"

    def __repr__(self) -> str:
        return "OfflineExtractor()"

    def extract_sync(self, content: str) -> Extraction:
        """The extraction of ``content``, computed in the calling thread."""
        blocks = split_blocks(content) or [_Block(content.strip() or content)]
        for block in blocks:
            _analyse(block)
        aliases, salient = _resolve_names(blocks, concept_budget(content))
        persons, locations, concepts = _Registry("p"), _Registry("l"), _Registry("c")
        surface = {_key(c): c for block in blocks for c in block.concepts}
        for k in salient:  # listed most salient first: a page's first concept is the main one
            if k in surface:
                concepts.ref(surface[k])
        events: list[dict[str, Any]] = []
        for i, block in enumerate(blocks, start=1):
            events.append(
                {
                    "ref": f"e{i}",
                    "summary": summarise(block.text) or summarise(content) or "(empty)",
                    "time": block.time,
                    "participants": [{"person": persons.ref(p)} for p in block.persons],
                    "locations": [locations.ref(loc) for loc in block.locations],
                    "concepts": [concepts.ref(c) for c in block.concepts],
                }
            )
        for name, found in aliases.items():
            for alias in found:
                persons.alias(name, alias)
        for item in concepts.items + persons.items:
            item["description"] = ""
        return Extraction.model_validate(
            {
                "events": events,
                "persons": persons.items,
                "concepts": concepts.items,
                "locations": locations.items,
            }
        )

    async def warm_up(self) -> None:
        """Load jieba's dictionary, the English lexicon and the name and place lists now, in
        a worker thread (the first save need not wait)."""
        await asyncio.to_thread(_pos_cut, "预热")
        await asyncio.to_thread(english.readings, "warm")
        await asyncio.to_thread(lexicons)

    async def extract(
        self, content: str, now_iso: str, *, topic_tree: str | None = None
    ) -> Extraction:
        """``now_iso`` and ``topic_tree`` are unused: the rules never infer times from the
        clock, and the save picks an offline topic itself (``engine.binding``)."""
        return await asyncio.to_thread(self.extract_sync, content)
