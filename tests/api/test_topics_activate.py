"""activate through GraphQL: ranking and fusion, the limit, the activated_memory_slices block
with its three projections, and read's compact text (SPEC §1.10, §2.8)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from tests.api.conftest import Api
from tests.api.test_topics import bare, save

RANKED = """
query($lines: [String!]!, $limit: Int! = 5) {
  activate(input: $lines, limit: $limit) {
    cues { type text }
    memories { event { id } source relevance similarity coverage recency vectorRank cueRank
               cues { type text } }
  } }"""
SLICES = """
query($lines: [String!]!) {
  activate(input: $lines) {
    memories { event { id } }
    activatedMemorySlices {
      blockName source urgency visibleTo replaceFadeFactor timeFadeFactor activateFactor
      activationScore
      slices { unitId sliceId event { id } date timestamp summary messageCount
               full: messages { kind role content omitted text }
               compact: messages(projection: COMPACT) { kind text }
               abstract: messages(projection: ABSTRACT) { text } }
      full: xml compact: xml(projection: COMPACT) abstract: xml(projection: ABSTRACT)
    } } }"""
READ = """
query($id: ID!, $start: Int!, $limit: Int!) {
  read(eventId: $id, start: $start, limit: $limit) { text next zh: rendered(locale: ZH) en: rendered(locale: EN) }
}"""

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 3, 4, 12, 0, tzinfo=TZ)  # a Wednesday; last Monday is 2026-02-23


@contextmanager
def clock(api: Api, when: datetime) -> Iterator[None]:
    """Run the memory's clock at ``when`` (saves are dated by it, recall scores against it)."""
    ingestor = api.app.state.memory.ingestor
    saved = ingestor._now
    ingestor._now = lambda: when
    try:
        yield
    finally:
        ingestor._now = saved


def by_id(memories: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {m["event"]["id"]: m for m in memories}


async def test_a_date_cue_lifts_the_memory_of_that_day_over_an_equal_vector_hit(api: Api) -> None:
    same = "We planted tomatoes in the garden."
    with clock(api, datetime(2026, 3, 2, 10, tzinfo=TZ)):
        (other,) = (await save(api, same))["eventIds"]
        (far,) = (await save(api, "Bought a train ticket to Hamburg."))["eventIds"]
    with clock(api, datetime(2026, 2, 23, 10, tzinfo=TZ)):
        (monday,) = (await save(api, same))["eventIds"]
    lines = ["what did we do in the garden with the tomatoes"]
    with clock(api, NOW):
        plain = (await api.gql(RANKED, lines=lines))["activate"]
        dated = (await api.gql(RANKED, lines=[lines[0] + " last Monday?"]))["activate"]
    # without a cue the order is the vector search's: the twins tie, the first saved wins
    assert plain["cues"] == []
    assert [m["event"]["id"] for m in plain["memories"]] == [other, monday, far]
    assert [m["vectorRank"] for m in plain["memories"]] == [1, 2, 3]
    assert {m["source"] for m in plain["memories"]} == {"VECTOR"}
    assert {m["cueRank"] for m in plain["memories"]} == {None}
    # "last Monday" names 2026-02-23, whose only memory now comes first
    assert dated["cues"] == [{"type": "DATE", "text": "2026-02-23"}]
    got = by_id(dated["memories"])
    assert dated["memories"][0]["event"]["id"] == monday
    top = got[monday]
    assert (top["source"], top["cueRank"], top["vectorRank"]) == ("DATE", 1, 2)
    assert top["cues"] == [{"type": "DATE", "text": "2026-02-23"}]
    assert top["recency"] == 0.08  # 9 days old: Partner's "within 30 days" tier
    assert 0 < top["coverage"] <= 1
    assert top["similarity"] == got[other]["similarity"]
    # similarity + 0.01 for a cue naming 1 of 3 memories + 0.01 x coverage + recency / 30
    lift = 0.01 + 0.01 * top["coverage"] + 0.01 * 0.08 / 0.30
    assert abs(top["relevance"] - (top["similarity"] + lift)) < 1e-9
    assert got[other]["relevance"] == got[other]["similarity"] and got[other]["cues"] == []
    assert got[far]["cueRank"] is None


async def test_the_limit_cuts_the_ranking_and_is_checked(api: Api) -> None:
    for n in range(4):
        await save(api, f"note number {n} about tea", extraction=bare(f"note {n} tea"))
    one = (await api.gql(RANKED, lines=["tea?"], limit=1))["activate"]["memories"]
    three = (await api.gql(RANKED, lines=["tea?"], limit=3))["activate"]["memories"]
    assert len(one) == 1 and len(three) == 3 and one[0] == three[0]
    for bad in (0, 21):
        err = await api.error(RANKED, lines=["tea?"], limit=bad)
        assert err["extensions"]["code"] == "OUT_OF_RANGE"


async def test_the_activated_memory_slices_block_and_its_projections(api: Api) -> None:
    long = "\n".join(f"{'Assistant' if i % 2 else 'Bart'}: line {i} about kites" for i in range(12))
    (event_id,) = (await save(api, long, topicPath="play->kites"))["eventIds"]
    got = (await api.gql(SLICES, lines=["Bart loves kites"]))["activate"]
    block = got["activatedMemorySlices"]
    assert {k: block[k] for k in ("blockName", "source", "urgency", "visibleTo")} == {
        "blockName": "activated_memory_slices",
        "source": "memory_selector",
        "urgency": "normal",
        "visibleTo": ["MEMORY"],
    }
    assert (block["replaceFadeFactor"], block["timeFadeFactor"], block["activateFactor"]) == (
        18.0,
        8.0,
        16.0,
    )
    assert block["activationScore"] == 100.0
    (s,) = block["slices"]
    assert (s["unitId"], s["sliceId"], s["event"]["id"]) == ("default", event_id, event_id)
    assert (
        s["messageCount"] == 12
        and s["date"] == api.app.state.memory.ingestor.now().date().isoformat()
    )
    # full: first 2, 省略了 2, the middle 4 (lines 4-7), 省略了 2, last 2
    texts = [e["text"] for e in s["full"]]
    assert texts == [
        "Bart: line 0 about kites", "Assistant: line 1 about kites", "省略了 2 条消息",
        "Bart: line 4 about kites", "Assistant: line 5 about kites", "Bart: line 6 about kites",
        "Assistant: line 7 about kites", "省略了 2 条消息", "Bart: line 10 about kites",
        "Assistant: line 11 about kites",
    ]  # fmt: skip
    assert s["full"][0] == {
        "kind": "MESSAGE", "role": "user", "content": texts[0], "omitted": None, "text": texts[0],
    }  # fmt: skip
    assert s["full"][1]["role"] == "assistant"
    assert s["full"][2] == {
        "kind": "OMITTED", "role": None, "content": None, "omitted": 2, "text": "省略了 2 条消息",
    }  # fmt: skip
    assert [e["text"] for e in s["compact"]] == texts[2:]
    assert s["abstract"] == []
    # the XML of each projection
    full, compact, abstract = block["full"], block["compact"], block["abstract"]
    assert full.startswith(
        '<activated_memory_slices source="memory_selector" urgency="normal">\n'
        f'  <memory_slice slice_id="{event_id}" unit_id="default">\n'
        f"    <slice_summary>{s['summary']}</slice_summary>\n"
        "    <source_messages>\n"
        '      <message role="user">Bart: line 0 about kites</message>\n'
    )
    assert full.count("<message ") == 8 and full.count("<omitted_messages>") == 2
    assert compact.count("<message ") == 6 and ">Bart: line 0 about kites</message>" not in compact
    assert "<source_messages>" not in abstract
    assert f"    <summary>{s['summary']}</summary>" in abstract


async def test_an_empty_memory_activates_an_empty_block(api: Api) -> None:
    got = (await api.gql(SLICES, lines=["anything?"]))["activate"]
    block = got["activatedMemorySlices"]
    assert got["memories"] == [] and block["slices"] == []
    empty = '<activated_memory_slices source="memory_selector" urgency="normal"/>'
    assert block["full"] == block["compact"] == block["abstract"] == empty


async def test_read_renders_the_compact_text(api: Api) -> None:
    text = "Alice: I moved to Berlin last week to work on the Neo4j migration."
    (event_id,) = (await save(api, text))["eventIds"]
    part = (await api.gql(READ, id=event_id, start=0, limit=40))["read"]
    assert part["zh"] == f"{event_id} 原文[0,40)/{len(text)}：\n{text[:40]}\nnext=40"
    assert part["en"] == f"{event_id} source[0,40)/{len(text)}:\n{text[:40]}\nnext=40"
    rest = (await api.gql(READ, id=event_id, start=40, limit=2000))["read"]
    assert rest["zh"] == f"{event_id} 原文[40,{len(text)})/{len(text)}：\n{text[40:]}"
    assert rest["next"] is None
