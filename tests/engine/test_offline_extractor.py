"""The rule-based offline extractor: valid, deterministic, and useful on Chinese and English."""

from __future__ import annotations

import pytest

from mnemoql.engine.providers._blocks import MAX_EVENTS, SUMMARY_MAX, summarise
from mnemoql.engine.providers._concepts import (
    MAX_CONCEPTS_PER_SAVE,
    concept_allowance,
    concept_budget,
    concepts_kept,
)
from mnemoql.engine.providers.offline import OfflineExtractor
from mnemoql.prompts.extraction import Extraction

# From shared/seeds/001 (the original plugin's README), a few lines.
SEED_README = """记忆按“事件 + 实体 + 关系”组织，不是聊天记录切片。只有显式调用保存工具的内容才会被写入；插件不扫描聊天记录。

- 首次调用自动下载本地 Neo4j 5.26.30 + Temurin JRE 21（约 211 MB），无需系统 Java；也可连外部 Neo4j
- 只读图谱页：查看实际写入的节点、关系和属性（导入上限 5,000 节点 / 30,000 关系）
- 写入是一个 Neo4j 事务，失败回滚"""

# From shared/seeds/002 (the Partner retrieval doc).
SEED_PARTNER = """# 记忆检索

本文说明 Partner 记忆系统的组织层。存储层只保存稳定的 `MemoryUnit` 与 `MemorySlice`，检索层在这些数据之上建立可替换的召回结构。

当前默认实现是 `MemoryRuntime`：它维护主题路径索引和日期索引，并把索引结果重新解析为可注入上下文的 `ActivatedMemorySlice`。"""

DIALOGUE = """Alice: I moved to Berlin last week and started a new job.
Bob: Congratulations! How is the apartment search going?
Alice: Slowly. I'm staying with my friend Carol until March."""


@pytest.fixture(scope="module")
def extractor() -> OfflineExtractor:
    return OfflineExtractor()


def names(items: list[object]) -> list[str]:
    return [getattr(i, "name") for i in items]  # noqa: B009


def refs_of(extraction: Extraction, event: int) -> dict[str, list[str]]:
    by_ref = {
        e.ref: e.name for e in extraction.persons + extraction.locations + extraction.concepts
    }
    ev = extraction.events[event]
    return {
        "persons": [by_ref[p.person] for p in ev.participants],
        "locations": [by_ref[loc] for loc in ev.locations],
        "concepts": [by_ref[c] for c in ev.concepts],
    }


def test_chinese_persons_places_and_concepts(extractor: OfflineExtractor) -> None:
    result = extractor.extract_sync(
        "张三上周在北京参加了图数据库的技术大会，和李四讨论了向量检索。"
    )
    assert len(result.events) == 1
    assert names(result.persons) == ["张三", "李四"]
    assert names(result.locations) == ["北京"]
    assert names(result.concepts) == ["数据库"]  # 32 characters: one concept
    assert result.events[0].time == "上周"
    linked = refs_of(result, 0)
    assert linked["persons"] == ["张三", "李四"] and linked["locations"] == ["北京"]


def test_chinese_seed_passage(extractor: OfflineExtractor) -> None:
    result = extractor.extract_sync(SEED_README)
    assert 1 <= len(result.events) <= MAX_EVENTS
    concepts = set(names(result.concepts))
    assert {"聊天记录", "关系", "Neo4j"} <= concepts
    assert names(result.concepts)[0] == "Neo4j"  # the most salient (repeated, a name) first
    assert result.persons == []  # nothing in the README names a person
    for event in result.events:
        assert event.summary.strip() and len(event.summary) <= SUMMARY_MAX
        assert len(event.concepts) <= 8


def test_markdown_is_not_in_summaries(extractor: OfflineExtractor) -> None:
    result = extractor.extract_sync(SEED_PARTNER)
    assert result.events[0].summary.startswith("记忆检索")
    assert not any(e.summary.startswith("#") for e in result.events)
    assert "MemoryUnit" in names(result.concepts)  # an identifier is salient
    assert result.persons == []  # jieba tags 索引 (index) as a name


def test_english_dialogue(extractor: OfflineExtractor) -> None:
    result = extractor.extract_sync(DIALOGUE)
    assert len(result.events) == 3  # one per utterance
    assert {"Alice", "Bob", "Carol"} <= set(names(result.persons))
    assert names(result.locations) == ["Berlin"]
    first = refs_of(result, 0)
    assert first["persons"] == ["Alice"] and first["locations"] == ["Berlin"]
    assert result.events[0].time == "last week"
    assert result.events[0].summary == "Alice: I moved to Berlin last week and started a new job."
    assert "Carol" in refs_of(result, 2)["persons"]
    assert refs_of(result, 1)["concepts"] == ["apartment search"]


def test_roles_are_not_persons(extractor: OfflineExtractor) -> None:
    text = (
        "user: I want to visit Kyoto in April.\nassistant: Kyoto is lovely in spring.\n用户：好的"
    )
    result = extractor.extract_sync(text)
    lowered = {n.casefold() for n in names(result.persons)}
    assert not lowered & {"user", "assistant", "用户"}
    assert "user" not in {n.casefold() for n in names(result.concepts)}
    assert "Kyoto" in names(result.locations)


def test_chinese_speaker_prefix(extractor: OfflineExtractor) -> None:
    result = extractor.extract_sync("韩梅梅：我明天去杭州出差。\n李雷：记得带伞。")
    assert names(result.persons)[:2] == ["韩梅梅", "李雷"]
    assert "杭州" in names(result.locations)
    assert len(result.events) == 2


def test_labels_are_not_speakers(extractor: OfflineExtractor) -> None:
    result = extractor.extract_sync("Note: the deploy uses Neo4j.\n说明：这是一个原型。")
    assert result.persons == []


def test_entities_link_only_to_their_block(extractor: OfflineExtractor) -> None:
    text = (
        "Alice lives in Paris and loves painting.\n\nBob met Carol in Rome to talk about sculpture."
    )
    result = extractor.extract_sync(text)
    assert len(result.events) == 1  # a short text is one event
    long_text = text.replace("\n\n", " " + "filler words here. " * 20 + "\n\n")
    result = extractor.extract_sync(long_text)
    assert len(result.events) == 2
    assert refs_of(result, 0)["persons"] == ["Alice"]
    assert refs_of(result, 0)["locations"] == ["Paris"]
    assert set(refs_of(result, 1)["persons"]) == {"Bob", "Carol"}
    assert refs_of(result, 1)["locations"] == ["Rome"]


def test_at_most_eight_events(extractor: OfflineExtractor) -> None:
    paragraphs = [
        f"第{i}段：今天讨论了项目{i}的进度和风险，需要继续跟进后续的安排。" * 3 for i in range(20)
    ]
    result = extractor.extract_sync("\n\n".join(paragraphs))
    assert len(result.events) == MAX_EVENTS
    assert [e.ref for e in result.events] == [f"e{i}" for i in range(1, 9)]


def test_long_single_paragraph_of_lines_is_split(extractor: OfflineExtractor) -> None:
    lines = [f"第{i}行记录了一次关于向量索引和图数据库的讨论。" for i in range(60)]
    result = extractor.extract_sync("\n".join(lines))
    assert 2 <= len(result.events) <= MAX_EVENTS


def test_summary_is_trimmed_and_never_empty() -> None:
    assert len(summarise("很长" * 500)) == SUMMARY_MAX
    assert summarise("Hi. This is the real sentence.") == "Hi. This is the real sentence."
    assert summarise("```\n```\nx") == "x"


@pytest.mark.parametrize("content", ["", "   ", "!!!", "a", "\n\n\n", "😀" * 300])
def test_degenerate_content_still_validates(extractor: OfflineExtractor, content: str) -> None:
    result = extractor.extract_sync(content)
    assert len(result.events) == 1
    assert result.events[0].summary.strip()


def test_deterministic(extractor: OfflineExtractor) -> None:
    first = extractor.extract_sync(SEED_README + "\n\n" + DIALOGUE)
    again = OfflineExtractor().extract_sync(SEED_README + "\n\n" + DIALOGUE)
    assert first.model_dump() == again.model_dump()
    Extraction.model_validate(first.model_dump())


def test_no_duplicate_refs_within_an_event(extractor: OfflineExtractor) -> None:
    result = extractor.extract_sync("The Event store and the event log: Event, event, EVENT.")
    for ev in result.events:
        assert len(ev.concepts) == len(set(ev.concepts))
    assert len({n.casefold() for n in names(result.concepts)}) == len(result.concepts)


async def test_async_extract_runs_in_a_thread(extractor: OfflineExtractor) -> None:
    result = await extractor.extract(DIALOGUE, "2026-03-01T10:20:00+08:00")
    assert result == extractor.extract_sync(DIALOGUE)


CHAT = """Caroline: Hey Mel! Good to see you! How have you been?
Melanie: Hey Caroline! Good to see you! I'm swamped with the kids & work. What's up with you? Anything new?
Caroline: I went to a LGBTQ support group yesterday and it was so powerful.
Melanie: Wow, that's cool, Caroline! What happened that was so awesome? Did you hear any inspiring stories?"""


def test_english_chat_speakers_are_persons_and_concepts_are_noun_phrases(
    extractor: OfflineExtractor,
) -> None:
    result = extractor.extract_sync(CHAT)
    assert [(p.name, p.aliases) for p in result.persons] == [
        ("Caroline", []),
        ("Melanie", ["Mel"]),  # a short name of a speaker is that speaker
    ]
    assert names(result.concepts) == ["LGBTQ support group", "kids"]  # most salient first
    assert result.locations == []
    assert refs_of(result, 0)["persons"] == ["Caroline", "Melanie"]  # speaker, then addressee
    assert refs_of(result, 3)["persons"] == ["Melanie", "Caroline"]
    assert refs_of(result, 2)["concepts"] == ["LGBTQ support group"]


def test_english_places_and_no_verbs_or_adjectives(extractor: OfflineExtractor) -> None:
    result = extractor.extract_sync(
        "User: I chose to take a lot of photos at the Grand Canyon because it's beautiful. "
        "My sister Emily came with me from Denver.\n"
        "Assistant: That sounds like a wonderful trip! The Grand Canyon in Arizona is stunning."
    )
    assert names(result.persons) == ["Emily"]  # User / Assistant are roles, not persons
    assert names(result.locations) == ["Grand Canyon", "Denver", "Arizona"]
    assert names(result.concepts) == ["photos"]


def test_english_technical_note_and_honorifics(extractor: OfflineExtractor) -> None:
    result = extractor.extract_sync(
        "We migrated the graph database to Neo4j last week, and the backup script failed "
        "twice. Priya said the new disk arrives on Monday."
    )
    assert names(result.persons) == ["Priya"]
    assert names(result.concepts) == ["Neo4j"]  # an identifier outweighs the phrases
    lesson = extractor.extract_sync(
        "Tom: I've been learning to play the violin since March.\n"
        "Sarah: That's amazing, Tom! Are you taking lessons with a teacher in Chicago?\n"
        "Tom: Yes, my teacher Mrs. Lee runs a small music school downtown."
    )
    assert names(lesson.persons) == ["Tom", "Sarah", "Lee"]
    assert names(lesson.locations) == ["Chicago"]
    assert names(lesson.concepts) == ["teacher"]  # named twice


def test_chinese_exact_persons_places_and_concepts(extractor: OfflineExtractor) -> None:
    result = extractor.extract_sync(
        "昨天我和张伟在北京吃了烤鸭，他说下个月要去上海参加人工智能大会。"
    )
    assert names(result.persons) == ["张伟"]
    assert names(result.locations) == ["北京", "上海"]
    # 32 characters allow one concept: the compound (four characters) outweighs 烤鸭
    assert names(result.concepts) == ["人工智能"]


def test_concepts_are_capped_per_save_by_length() -> None:
    assert concept_budget("x" * 60) == 1
    assert concept_budget("x" * 1500) == 10
    assert concept_budget("长" * 500) == 10  # a Chinese character says about three latin ones
    assert concept_budget("x" * 100_000) == MAX_CONCEPTS_PER_SAVE


def test_a_short_save_keeps_a_concept_only_when_it_is_salient(
    extractor: OfflineExtractor,
) -> None:
    """Rounding weighted by salience: the whole part of the allowance, and one more concept
    when its salience times the allowance's fraction reaches one half."""
    assert concepts_kept([1.0], 0.4) == 0  # a lone word in 60 characters
    assert concepts_kept([1.5], 0.4) == 1  # a phrase or a name in 60 characters
    assert concepts_kept([1.0], 0.6) == 1  # a lone word in 90 characters
    assert concepts_kept([2.0, 1.0, 1.0], 1.4) == 1  # the fraction is too small for a word
    assert concepts_kept([2.0, 2.0, 1.0], 1.4) == 1  # never more than the rounded allowance
    assert concepts_kept([2.0, 2.0, 1.0], 1.6) == 2
    assert concepts_kept([1.0] * 40, 1000.0) == MAX_CONCEPTS_PER_SAVE
    assert concepts_kept([], 3.0) == 0
    short = "this video is so good lol"
    assert extractor.extract_sync(short).concepts == []
    longer = "the new backup script from our ops team failed again last night on the prod box"
    assert names(extractor.extract_sync(longer).concepts) == ["backup script"]
    assert concept_allowance("长" * 50) == 1.0  # a Chinese character counts three


def test_concept_caps_keep_the_salient_ones(extractor: OfflineExtractor) -> None:
    """Three paragraphs of one-off nouns, then one about the backup script named three times:
    the cap keeps the backup script, not the first nouns in order of appearance."""
    words = [
        "violin", "piano", "guitar", "drums", "flute", "cello", "harp", "banjo", "trumpet",
        "oboe", "tuba", "viola", "lute", "organ", "sitar", "zither", "ukulele", "bagpipe",
        "mandolin", "accordion", "harmonica", "clarinet", "bassoon", "marimba",
    ]  # fmt: skip
    one_offs = [
        "Note: " + ", ".join(f"the {w} lesson" for w in words[i : i + 8]) + "."
        for i in range(0, 24, 8)
    ]
    salient = (
        "Then the backup script failed. We rewrote the backup script twice, and the backup "
        "script now runs nightly."
    )
    text = "\n\n".join([*one_offs, salient])
    result = extractor.extract_sync(text)
    kept = names(result.concepts)
    assert len(kept) == concept_budget(text) < 24
    assert kept[0] == "backup script"
    assert "backup script" in refs_of(result, 3)["concepts"]


# Entries of Python's changelog (Misc/NEWS, 3.11), one save each as an import makes them.
CHANGELOG = [
    "gh-issue-100637: Fix :func:`int.__sizeof__` calculation to include the 1 element "
    "ob_digit array for 0 and False.",
    "gh-issue-99240: Fix double-free bug in Argument Clinic ``str_converter`` by extracting "
    "memory clean up to a new ``post_parsing`` section.",
    "gh-issue-96002: Add functional test for Argument Clinic.",
    "gh-issue-97612: Fix a shell code injection vulnerability in the "
    "``get-remote-certificate.py`` example script. The script no longer uses a shell to run "
    "``openssl`` commands. Issue reported and initial fix by Caleb Shortt. Patch by Victor "
    "Stinner.",
    "gh-issue-99204: Fix calculation of :data:`sys._base_executable` when inside a POSIX "
    "virtual environment using copies of the python binary when the base installation does "
    "not provide the executable name used by the venv. Calculation will fall back to "
    'alternative names ("python<MAJOR>", "python<MAJOR>.<MINOR>").',
    "gh-issue-94526: Fix the Python path configuration used to initialized :data:`sys.path` "
    "at Python startup. Patch by Victor Stinner.",
    "bpo-31718: Raise :exc:`ValueError` instead of :exc:`SystemError` when methods of "
    "uninitialized :class:`io.IncrementalNewlineDecoder` objects are called. Patch by Oren "
    "Milman.",
    "gh-issue-98744: Prevent crashing in :mod:`traceback` when retrieving the byte-offset for "
    "some source files that contain certain unicode characters.",
    "gh-issue-91212: Fixed flickering of the turtle window when the tracer is turned off. "
    "Patch by Shin-myoung-serp.",
    "gh-issue-101400: Fix wrong lineno in exception message on :keyword:`continue` or "
    ":keyword:`break` which are not in a loop. Patch by Dong-hee Na.",
]


def test_a_changelog_import_names_no_person_by_a_common_word(
    extractor: OfflineExtractor,
) -> None:
    persons: list[str] = []
    locations: list[str] = []
    concepts: list[str] = []
    for entry in CHANGELOG:
        result = extractor.extract_sync(entry)
        persons += names(result.persons)
        locations += names(result.locations)
        concepts += names(result.concepts)
    assert sorted(set(persons)) == [
        "Caleb Shortt", "Dong-hee Na", "Oren Milman", "Shin-myoung-serp", "Victor Stinner"
    ]  # fmt: skip
    assert locations == []  # "in Argument Clinic" is no place, "at Python startup" neither
    assert not {"gh-issue-100637", "func", "exc", "keyword", "False"} & set(concepts)
    assert len(concepts) <= len(CHANGELOG) * 2


def test_a_run_of_one_character_is_no_concept(extractor: OfflineExtractor) -> None:
    result = extractor.extract_sync("y" * 1500)
    assert result.concepts == [] and result.persons == [] and result.locations == []
    # long enough for one lone word: the runs are no concepts, the word is
    assert names(extractor.extract_sync("zzzz zzzz " * 8 + "pottery").concepts) == ["pottery"]


def test_english_names_opening_a_sentence_before_a_past_tense_verb(
    extractor: OfflineExtractor,
) -> None:
    result = extractor.extract_sync(
        "Alice walked to the harbour with Bob. Carol painted the harbour at dawn. "
        "Everyone went home early. Kubernetes runs the jobs."
    )
    assert names(result.persons) == ["Alice", "Bob", "Carol"]  # not Everyone, Kubernetes
    assert "Everyone" not in names(result.concepts)


def test_names_by_name_lists_in_english_and_in_chinese_text(extractor: OfflineExtractor) -> None:
    """Given names the lexicon does not know as words are persons wherever they stand, also
    inside Chinese text; titles make a person of any word; accents are letters."""
    assert names(extractor.extract_sync("Bart在海边放风筝，Lisa很开心。").persons) == [
        "Bart",
        "Lisa",
    ]
    assert names(extractor.extract_sync("Bart won first place at the festival.").persons) == [
        "Bart"
    ]
    result = extractor.extract_sync("President Trump met Jürgen Klopp in Marseille.")
    assert names(result.persons) == ["Trump", "Jürgen Klopp"]
    assert names(result.locations) == ["Marseille"]
    # a word that is also a given name needs a cue; a line label is no speaker
    assert extractor.extract_sync("Will the build pass? Summer is over.").persons == []
    assert extractor.extract_sync("Now Playing: the new album by Adele.").persons[0].name == (
        "Adele"
    )


# Labelled sentences in the style of WNUT17's comments and of memories (persons and places as
# a reader names them); not taken from the bench's data.
LABELLED_EN = [
    ("thanks emma and conor for the new episode", ["Emma", "Conor"], []),
    ("can't wait for the new film with Emma watson", ["Emma Watson"], []),
    ("saw kevin smith at the comic con in Chicago", ["Kevin Smith"], ["Chicago"]),
    ("DJ Khaled looks like he had fun tonight", ["DJ Khaled"], []),
    ("Glenda is related to Ayanda and Thandeka", ["Glenda", "Ayanda", "Thandeka"], []),
    ("Lisa received a pink Barbie doll from her grandma.", ["Lisa"], []),
    ("We went to Sophia’s birthday party in Lisbon.", ["Sophia"], ["Lisbon"]),
    ("Lisa and her classmate Wang were cleaning the classroom.", ["Lisa", "Wang"], []),
    ("WE MET JAMES IN LONDON LAST WEEK", ["James"], ["London"]),  # shouted
    ("Wtf happened . Im waiting for the French version lol", [], []),
    ("Justice and Peace for All", [], []),
    ("my brother bought a teddy bear for his daughter", [], []),
    # a given name that is no word takes a surname no list knows; a word before one does not
    ("amy schumer was hilarious last night", ["Amy Schumer"], []),
    ("watching Priya kandasamy on stage tonight", ["Priya Kandasamy"], []),
    ("Hope youre doing well", [], []),
    # a lower-case given name after an article or a possessive is a thing, unless a relation
    # word says who ("my sister emma")
    ("we watched a lotta videos today", [], []),
    ("my favorite meta hero got nerfed again", [], []),
    ("my sister emma got the sunglasses chloe is wearing", ["Emma", "Chloe"], []),
    ("ian connor is my favourite designer", ["Ian Connor"], []),  # not Connor again
    ("Marcus Do you remember the trip", ["Marcus"], []),  # the name ends at the stop word
    ("we drove a Subaru and a Chrysler to the lake", [], []),  # an article: things
    ("@Bob thanks, Alice liked it", ["Alice"], []),  # a handle is an account
    # places typed in lower case and US state codes, after a place preposition
    ("i live in canada but we moved to amsterdam", [], ["Canada", "Amsterdam"]),
    ("we spent the summer in NJ", [], ["NJ"]),
    ("you can pay in cash OR in kind", [], []),
]
LABELLED_ZH = [
    ("王小明和李华上周去了杭州，在西湖边喝茶。", ["王小明", "李华"], ["杭州", "西湖"]),
    ("Lisa和Bart在北京的公园里放风筝。", ["Lisa", "Bart"], ["北京"]),
]


@pytest.mark.parametrize(("text", "persons", "places"), LABELLED_EN + LABELLED_ZH)
def test_labelled_sentences_keep_their_persons_and_places(
    extractor: OfflineExtractor, text: str, persons: list[str], places: list[str]
) -> None:
    """Chat-style English (names in lower case, a careless surname, a stage name, names
    joined by "and") and memories (a possessive, a doll named after a person); slang,
    nationalities and common words are no persons; Chinese keeps what it found before."""
    result = extractor.extract_sync(text)
    assert sorted(names(result.persons)) == sorted(persons)
    assert sorted(names(result.locations)) == sorted(places)


def test_a_common_word_after_and_is_no_person(extractor: OfflineExtractor) -> None:
    """"and" makes a person only of a name that is no dictionary word: a changelog line that
    thanks a person and lists features gets the person alone."""
    result = extractor.extract_sync(
        "Add Love and Peace modes to the shell. Patch by Serhiy Storchaka and Ada Lovelace."
    )
    assert sorted(names(result.persons)) == ["Ada Lovelace", "Serhiy Storchaka"]
