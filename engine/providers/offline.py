"""A rule-based extractor for when no chat model is configured.

It is honest rather than clever: one event per paragraph or utterance block (at most
``MAX_EVENTS``), the block's leading sentence as summary, persons from jieba's ``nr`` tags,
``Name:`` speaker prefixes and capitalised English names checked against name lists
(``lexicons``: a word the English lexicon knows and no English-locale name list holds, such as
"Patch" or "Python", is no person), given names typed in lower case as chat does ("thanks
emma"), names joined to a person by "and" / "," and performers' "DJ" / "Lil" names;
locations from ``ns`` tags, GeoNames and ``in/at <Place>`` patterns, and concepts: the most
salient nouns and noun phrases, about one per 150 characters (``concepts_kept``). The output
is deterministic and always validates as :class:`prompts.extraction.Extraction`.
``bench/extraction.py`` measures it. The English name rules are modules of their own:
``_english_persons``, ``_english_places`` and the word tests they share, ``_namewords``; so are
the concepts' salience and budget, ``_concepts``, and the blocks and their summaries,
``_blocks``.

jieba's dictionary and the name lists load (a few seconds) on first use or in ``warm_up``, in a
worker thread.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any, ClassVar

from mnemoql.engine.providers import _english as english
from mnemoql.engine.providers._blocks import CJK, Block, plain, pos_cut, split_blocks, summarise
from mnemoql.engine.providers._concepts import (
    PHRASE,
    PROPER,
    concept_allowance,
    concept_word,
    concepts_kept,
    english_concepts,
    phrase_salience,
)
from mnemoql.engine.providers._english_persons import english_entities, shouted
from mnemoql.engine.providers._namewords import (
    ROLE_WORDS,
    name_key,
)
from mnemoql.engine.providers.hashing import wordset
from mnemoql.engine.providers.lexicons import lexicons
from mnemoql.prompts.extraction import Extraction

MAX_CONCEPTS_PER_EVENT = 8
MAX_ENTITIES_PER_EVENT = 12
# Entity detection reads at most this much of each block; the summary and content are unaffected.
_ANALYSE_MAX = 12_000

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

_TIME_EN = re.compile(
    r"\b(?:(?:last|next|this)\s+(?:week|month|year|weekend|monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday|night|morning|evening)|yesterday|today|tomorrow|tonight|"
    r"(?:on\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(?:in\s+)?(?:19|20)\d\d)\b",
    re.IGNORECASE,
)

log = logging.getLogger(__name__)

def _analyse(block: Block) -> None:
    text = shouted(plain(block.text[:_ANALYSE_MAX]))
    persons: list[str] = []
    locations: list[str] = []
    nouns: dict[str, float] = {}  # salience by normalised key
    surface: dict[str, str] = {}
    order: dict[str, int] = {}

    def add(word: str, weight: float, position: int) -> None:
        if not concept_word(word):
            return
        k = name_key(word)
        nouns[k] = nouns.get(k, 0.0) + weight
        surface.setdefault(k, word)
        order.setdefault(k, position)

    times: list[str] = []
    has_cjk = bool(CJK.search(text))
    if block.speaker and name_key(block.speaker) not in ROLE_WORDS:
        persons.append(block.speaker)
    if has_cjk:
        position = 0
        for word, flag in pos_cut(text):
            i, position = position, position + len(word)
            w = word.strip()
            if len(w) < 2:
                continue
            if flag == "nr" and len(w) <= 4 and _all_cjk(w) and w not in _ZH_NOT_PERSONS:
                persons.append(w)
            elif flag == "ns" and _all_cjk(w) and w not in _ZH_NOT_PLACES:
                locations.append(w)
            elif flag == "t" and CJK.match(w) and w not in _ZH_VAGUE_TIMES:
                times.append(w)
            elif (
                flag in _CONCEPT_FLAGS and w not in _ZH_STOP_NOUNS and name_key(w) not in ROLE_WORDS
            ):
                add(w, PHRASE if len(w) >= 3 else 1.0, i)  # 数据库, 演唱会: compounds, as phrases
    en_persons, en_places, proper = english_entities(text)
    persons.extend(en_persons)
    locations.extend(en_places)
    exclude = {name_key(p) for p in persons + locations} | ROLE_WORDS
    exclude |= {k for p in persons + locations for k in name_key(p).split()}
    for name in proper:
        add(name, PROPER, text.find(name))
    proper_keys = {name_key(n) for n in proper}
    for phrase, position in english_concepts(text, exclude):
        if name_key(phrase) not in proper_keys:
            add(phrase, phrase_salience(phrase), position)
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
    return all(CJK.match(c) or c == "·" for c in word)


def _dedupe(names: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for name in names:
        k = name_key(name)
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
        k = name_key(name)
        if k not in self._refs:
            self._refs[k] = f"{self.prefix}{len(self.items) + 1}"
            self.items.append({"ref": self._refs[k], "name": name, "aliases": []})
        return self._refs[k]

    def alias(self, name: str, alias: str) -> None:
        """Record ``alias`` on the item of ``name`` (which must have a ref already)."""
        item = self.items[int(self._refs[name_key(name)][len(self.prefix) :]) - 1]
        if name_key(alias) not in {name_key(a) for a in item["aliases"]} | {name_key(name)}:
            item["aliases"].append(alias)


def _nicknames(blocks: list[Block]) -> dict[str, str]:
    """Short names that start exactly one speaker's name ("Mel" for speaker "Melanie"):
    normalised short name -> the speaker's name."""
    speakers = {name_key(b.speaker): b.speaker for b in blocks if b.speaker}
    out: dict[str, str] = {}
    for b in blocks:
        for p in [*b.persons, *(c for c in b.concepts if c[:1].isupper())]:
            k = name_key(p)
            if k in speakers or len(k) < 3 or " " in k:
                continue
            owners = [s for key, s in speakers.items() if key.startswith(k) and key != k]
            if len(owners) == 1:
                out[k] = owners[0]
    return out


def _resolve_names(
    blocks: list[Block], allowance: float
) -> tuple[dict[str, list[str]], list[str]]:
    """Across the blocks of one save: a name that is a place anywhere is no person, a short
    name of a speaker is that speaker, a name that is a person anywhere (a speaker, say) is no
    concept but a participant where it is named; then the ``concepts_kept`` most salient
    concepts (their weights summed over the blocks; the first seen on ties). Returns the aliases
    found per person name and the kept concept keys, the most salient first."""
    places = {name_key(loc) for b in blocks for loc in b.locations}
    nick = _nicknames(blocks)
    aliases: dict[str, list[str]] = {}
    for b in blocks:
        named = [c for c in b.concepts if name_key(c) in nick]
        b.concepts = [c for c in b.concepts if name_key(c) not in nick]
        b.persons = b.persons + named
        for i, p in enumerate(b.persons):
            if name_key(p) in nick:
                aliases.setdefault(nick[name_key(p)], []).append(p)
                b.persons[i] = nick[name_key(p)]
    people = {name_key(p) for b in blocks for p in b.persons} - places
    salience: dict[str, float] = {}
    first: dict[str, int] = {}
    for b in blocks:
        named = [c for c in b.concepts if name_key(c) in people]
        b.persons = _dedupe([p for p in b.persons if name_key(p) not in places] + named)
        b.concepts = [c for c in b.concepts if name_key(c) not in people | places]
        for c in b.concepts:
            k = name_key(c)
            salience[k] = salience.get(k, 0.0) + b.salience.get(k, 1.0)
            first.setdefault(k, len(first))
    ranked = sorted(salience, key=lambda k: (-salience[k], first[k]))
    budget = concepts_kept([salience[k] for k in ranked], allowance)
    kept = set(ranked[:budget])
    for b in blocks:
        b.concepts = [c for c in b.concepts if name_key(c) in kept]
    return aliases, ranked[:budget]


class OfflineExtractor:
    """Extraction with no model: see the module docstring for the rules."""

    provider: ClassVar[str] = "offline"
    model: ClassVar[str] = "offline-rules-v1"

    def __repr__(self) -> str:
        return "OfflineExtractor()"

    def extract_sync(self, content: str) -> Extraction:
        """The extraction of ``content``, computed in the calling thread."""
        blocks = split_blocks(content) or [Block(content.strip() or content)]
        for block in blocks:
            _analyse(block)
        aliases, salient = _resolve_names(blocks, concept_allowance(content))
        persons, locations, concepts = _Registry("p"), _Registry("l"), _Registry("c")
        surface = {name_key(c): c for block in blocks for c in block.concepts}
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
        await asyncio.to_thread(pos_cut, "预热")
        await asyncio.to_thread(english.readings, "warm")
        await asyncio.to_thread(lexicons)

    async def extract(
        self, content: str, now_iso: str, *, topic_tree: str | None = None
    ) -> Extraction:
        """``now_iso`` and ``topic_tree`` are unused: the rules never infer times from the
        clock, and the save picks an offline topic itself (``engine.binding``)."""
        return await asyncio.to_thread(self.extract_sync, content)
