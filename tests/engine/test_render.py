from __future__ import annotations

import dataclasses
import re

from mnemoql.engine.models import Entity, Event, Neighbour, Relation
from mnemoql.engine.retrieval.evidence import (
    ConceptRef,
    EvidenceItem,
    EvidencePage,
    Note,
    NoteCode,
    Quote,
    QuoteRef,
    ReadResult,
    continuations,
    shared_concepts,
)
from mnemoql.engine.retrieval.render import render, render_empty, render_read, render_targeted
from mnemoql.engine.retrieval.targeted import TargetedHit, TargetedPage

NEO4J = ConceptRef("concept_3", "Neo4j")
DEPLOY = ConceptRef("concept_7", "部署")


def _page() -> EvidencePage:
    items = (
        EvidenceItem(
            event_id="event_12",
            create_time="2026-03-01T10:20:00+08:00",
            time="上周三",
            summary="决定用 Neo4j 托管部署",
            quote=Quote("托管模式下由插件启动 Neo4j", 240, 256, 1820),
            total=1820,
            concepts=(NEO4J, DEPLOY),
        ),
        EvidenceItem(
            event_id="event_ch33_e06",
            create_time="2026-03-02T09:00:00+08:00",
            time=None,
            summary="复述了部署方案",
            quote_ref=QuoteRef("event_12", 240, 256),
            total=900,
            concepts=(NEO4J,),
        ),
    )
    return EvidencePage(
        operation="search",
        cursor="cur_1a2b3c4d5e6f7a8b",
        chain_count=2,
        items=items,
        shared_concepts=shared_concepts(items),
        continuations=continuations(items),
        excluded_count=0,
    )


def test_render_zh_golden() -> None:
    assert render(_page(), "zh") == (
        "[memory_database_search] operation=search target=Event 新增=2 追查链=2/20\n"
        "cursor=cur_1a2b3c4d5e6f7a8b（15 分钟内有效）\n"
        "#1 event_12 | 写入 2026-03-01T10:20:00+08:00 | 时间：上周三\n"
        "摘要：决定用 Neo4j 托管部署\n"
        "原文[240,256)/1820：「托管模式下由插件启动 Neo4j」\n"
        "概念：concept_3 Neo4j；concept_7 部署\n"
        "#2 event_ch33_e06 | 写入 2026-03-02T09:00:00+08:00\n"
        "摘要：复述了部署方案\n"
        "原文同 event_12[240,256)\n"
        "概念：concept_3 Neo4j\n"
        "共享概念：concept_3 Neo4j（event_12, event_ch33_e06）\n"
        "可继续：read(event_id) | expand(cursor, concept_id∈{concept_3, concept_7})"
        " | nearby(cursor, event_id∈{event_ch33_e06})\n"
        "注：分数为检索启发式，不代表事实置信度；摘要需以原文核实；"
        "共享概念与来源相邻不代表因果或先后。"
    )


def test_render_en_golden() -> None:
    assert render(_page(), locale="en") == (
        "[memory_database_search] operation=search target=Event new=2 chain=2/20\n"
        "cursor=cur_1a2b3c4d5e6f7a8b (valid for 15 minutes)\n"
        "#1 event_12 | written 2026-03-01T10:20:00+08:00 | time: 上周三\n"
        "summary: 决定用 Neo4j 托管部署\n"
        "source[240,256)/1820: “托管模式下由插件启动 Neo4j”\n"
        "concepts: concept_3 Neo4j; concept_7 部署\n"
        "#2 event_ch33_e06 | written 2026-03-02T09:00:00+08:00\n"
        "summary: 复述了部署方案\n"
        "same as event_12[240,256)\n"
        "concepts: concept_3 Neo4j\n"
        "shared concepts: concept_3 Neo4j (event_12, event_ch33_e06)\n"
        "next: read(event_id) | expand(cursor, concept_id∈{concept_3, concept_7})"
        " | nearby(cursor, event_id∈{event_ch33_e06})\n"
        "note: ranking scores are retrieval heuristics, not confidence in facts; verify "
        "summaries against the source; shared concepts and neighbouring sources do not imply "
        "cause or order."
    )


def test_search_again_hint_leads_the_next_line_in_both_locales() -> None:
    page = dataclasses.replace(_page(), search_again=True)
    zh = [line for line in render(page, "zh").split("\n") if line.startswith("可继续：")]
    en = [line for line in render(page, "en").split("\n") if line.startswith("next: ")]
    assert zh == [
        "可继续：search(cursor) 取下一页（新的事件） | read(event_id)"
        " | expand(cursor, concept_id∈{concept_3, concept_7})"
        " | nearby(cursor, event_id∈{event_ch33_e06})"
    ]
    assert en == [
        "next: search(cursor): the next page (new events) | read(event_id)"
        " | expand(cursor, concept_id∈{concept_3, concept_7})"
        " | nearby(cursor, event_id∈{event_ch33_e06})"
    ]


def test_item_notes_render_in_place_of_and_after_the_quote() -> None:
    item = EvidenceItem(
        event_id="event_5",
        create_time="2026-03-03T08:00:00+08:00",
        time=None,
        summary="很长的记录",
        total=40_000,
        notes=(Note(NoteCode.BUDGET_EXHAUSTED), Note(NoteCode.LONG_CONTENT, 40_000)),
    )
    legacy = EvidenceItem(
        event_id="event_6",
        create_time="2026-03-03T08:00:00+08:00",
        time=None,
        summary="旧记录",
        quote=Quote("旧", 0, 1, 1),
        total=1,
        notes=(Note(NoteCode.LEGACY_NO_CHUNKS),),
    )
    page = EvidencePage(operation="expand", cursor="cur_0", chain_count=7, items=(item, legacy))
    lines = render(page, "zh").split("\n")
    assert lines[0].endswith("operation=expand target=Event 新增=2 追查链=7/20")
    assert lines[2:5] == [
        "#1 event_5 | 写入 2026-03-03T08:00:00+08:00",
        "摘要：很长的记录",
        "（摘录预算已用尽，请用 read）",
    ]
    assert lines[5] == "原文共 40000 字；摘录只在前 32000 字内选择，请用 read 继续读取"
    assert lines[8:10] == [
        "原文[0,1)/1：「旧」",
        "（旧记忆：尚无原文分块，仅摘要命中；可重新向量化补齐）",
    ]
    assert lines[10] == "可继续：read(event_id)"  # no concepts and no positional ids


def test_empty_result_text() -> None:
    expected = (
        "未找到新的事件。空结果不代表记忆不存在（本会话已排除 3 个已交付事件；"
        "可用 reset_seen 重新检索）。"
    )
    assert render_empty(3, "zh") == expected
    assert render(EvidencePage(operation="search", excluded_count=3), "zh") == expected
    assert render_empty(0, "en").startswith("No new events found.")
    assert "(0 delivered events of this session were excluded;" in render_empty(0, "en")


def test_empty_result_keeps_page_notes() -> None:
    page = EvidencePage(operation="search", notes=(Note(NoteCode.ENTITY_NOT_FOUND, "张三"),))
    assert render(page, "zh").split("\n")[0] == "未找到实体：张三"
    assert render(page, "en").split("\n")[0] == "entity not found: 张三"


def test_render_read() -> None:
    result = ReadResult("event_12", "正文……", 0, 1600, 1820, 1600)
    assert render_read(result, "zh") == "event_12 原文[0,1600)/1820：\n正文……\nnext=1600"
    last = ReadResult("event_12", "尾", 1600, 1820, 1820, None)
    assert render_read(last, "en") == "event_12 source[1600,1820)/1820:\n尾"


def test_shared_concepts_need_two_events_and_keep_first_mention_order() -> None:
    def item(event_id: str, *concepts: ConceptRef) -> EvidenceItem:
        return EvidenceItem(event_id, "t", None, "s", concepts=concepts)

    other = ConceptRef("concept_9", "其他")
    items = [item("e1", DEPLOY, NEO4J), item("e2", NEO4J, other), item("e3", DEPLOY)]
    shared = shared_concepts(items)
    assert [(s.id, s.event_ids) for s in shared] == [
        ("concept_7", ("e1", "e3")),
        ("concept_3", ("e1", "e2")),
    ]
    nxt = continuations(items)
    assert nxt.expand_concepts == ("concept_7", "concept_3", "concept_9")
    assert nxt.nearby_events == ()


def test_no_scores_or_vectors_leak_into_the_text() -> None:
    text = render(_page()) + render(_page(), "en")
    assert re.search(r"\d\.\d", text) is None  # no fractional numbers at all
    for word in ("rrf", "mmr", "embedding", "vector", "coverage", "lambda"):
        assert word not in text.lower()


def test_render_targeted_lists_matches_with_their_neighbours() -> None:
    alice = Entity("Person", "person_1", "Alice")
    berlin = Entity("Location", "location_1", "Berlin")
    moved = Event("event_2", "Alice moved", "Alice moved to Berlin.", None, "t", "d", "h")
    rows = (
        (Neighbour("person_1", Relation("PARTICIPATED_IN", "person_1", "event_2"), "event_2", "out"), moved),
        (Neighbour("person_1", Relation("HAS_ATTITUDE", "person_1", "location_1"), "location_1", "out"), berlin),
    )
    page = TargetedPage("Person", "Alice", (TargetedHit(alice, 1.0, True, rows),))
    assert render_targeted(page, "zh") == (
        "[memory_database_search] operation=search target=Person\n"
        "#1 person_1 Alice （名称匹配）\n"
        "  ->PARTICIPATED_IN event_2 Alice moved\n"
        "  ->HAS_ATTITUDE location_1 Berlin"
    )
    assert render_targeted(page, "en").splitlines()[1] == "#1 person_1 Alice (name match)"
    empty = TargetedPage("Concept", "x", ())
    assert render_targeted(empty, "en").endswith("\nNo matching node.")
