"""search / expand / nearby / read through GraphQL: limits, sessions, cursors and errors."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import Api, offline_settings, running

SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds } }"
PAGE = """
  cursor chainCount chainLimit excludedCount session
  items { eventId summary total quote { text start end total } quoteRef { id: eventId start end }
          notes { code value } concepts { id: conceptId name }
          explain { order summaryRank chunkRank rrf coverage score mmrStep } }
  sharedConcepts { id: conceptId name eventIds }
  expandConcepts nearbyEvents notes { code value }
"""
SEARCH = (
    "query($q: String, $e: [String!], $t: String, $s: String, $r: Boolean! = false,"
    " $c: String) {"
    " search(query: $q, entities: $e, timeHint: $t, session: $s, resetSeen: $r, cursor: $c) {"
    + PAGE
    + " text(locale: ZH) } }"
)
EXPAND = (
    "query($c: String!, $id: ID!, $l: Int! = 3, $s: String) {"
    " expand(cursor: $c, conceptId: $id, limit: $l, session: $s) {" + PAGE + " } }"
)
NEARBY = (
    "query($c: String!, $id: ID!, $b: Int! = 2, $a: Int! = 2, $s: String) {"
    " nearby(cursor: $c, eventId: $id, before: $b, after: $a, session: $s) {" + PAGE + " } }"
)
TOPICS = [
    "deployment",
    "backup",
    "indexing",
    "migration",
    "monitoring",
    "sharding",
    "caching",
    "security",
]


def extraction(summary: str, persons: list[str] = (), concepts: list[str] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    return {
        "events": [
            {
                "ref": "e",
                "summary": summary,
                "participants": [{"person": f"p{i}"} for i in range(len(persons))],
                "concepts": [f"c{i}" for i in range(len(concepts))],
            }
        ],
        "persons": [{"ref": f"p{i}", "name": n} for i, n in enumerate(persons)],
        "concepts": [{"ref": f"c{i}", "name": n} for i, n in enumerate(concepts)],
    }


async def seed_neo4j_notes(api: Api, n: int = 8) -> list[str]:
    """n events about Neo4j, each with its own topic and a shared concept."""
    ids = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        content = (
            f"Neo4j {topic} notes #{i}: the team discussed Neo4j {topic} in detail. "
            + f"filler {i} " * 30
        )
        ex = extraction(
            f"Neo4j {topic} discussion {i}", ["Alice" if i % 2 else "Bob"], ["Neo4j", topic]
        )
        ids += (await api.gql(SAVE, input={"content": content, "extraction": ex}))["save"][
            "eventIds"
        ]
    return ids


async def search(api: Api, **v: Any) -> dict[str, Any]:
    page: dict[str, Any] = (await api.gql(SEARCH, **v))["search"]
    return page


async def test_search_delivers_at_most_four_events_with_exact_quotes(api: Api) -> None:
    await seed_neo4j_notes(api)
    page = await search(api, q="Neo4j deployment", s="s1")
    items = page["items"]
    assert 1 <= len(items) <= 4
    assert re.fullmatch(r"cur_[0-9a-f]{16}", page["cursor"])
    assert page["chainCount"] == len(items) and page["chainLimit"] == 20
    assert items[0]["summary"].startswith("Neo4j deployment")
    for item in items:
        q = item["quote"]
        assert q is not None and len(q["text"]) <= 120
        full = (
            await api.gql(
                "query($id: ID!) { read(eventId: $id, limit: 10000) { text } }", id=item["eventId"]
            )
        )["read"]["text"]
        assert full[q["start"] : q["end"]] == q["text"] and q["total"] == len(full)
        assert item["explain"]["order"] == "hybrid" and item["explain"]["score"] > 0
    assert "neo4j" in items[0]["quote"]["text"].lower()
    text = page["text"]
    assert text.startswith(
        f"[memory_database_search] operation=search target=Event 新增={len(items)} 追查链={len(items)}/20"
    )
    assert f"cursor={page['cursor']}（15 分钟内有效）" in text
    assert "注：分数为检索启发式" in text
    assert "score" not in text and "0." not in text  # no scores in the text


async def test_session_history_excludes_delivered_events_and_reset_seen_clears_it(api: Api) -> None:
    await seed_neo4j_notes(api)
    first = await search(api, q="Neo4j", s="s1")
    assert await search(api, q="Neo4j", s="s1") == first  # a query is safe to repeat
    second = await search(api, c=first["cursor"], s="s1")  # the next page
    a = {i["eventId"] for i in first["items"]}
    b = {i["eventId"] for i in second["items"]}
    assert len(a) == 4 and len(b) == 4 and not a & b
    assert second["excludedCount"] == 4
    assert await search(api, c=first["cursor"], s="s1") == second  # the same next page
    other = await search(api, q="Neo4j", s="s2")  # sessions are independent
    assert [i["eventId"] for i in other["items"]] == [i["eventId"] for i in first["items"]]
    # another search in the session: the ledger holds all 8, so nothing new is left
    empty = await search(api, q="Neo4j backup", s="s1")
    assert empty["items"] == [] and empty["cursor"] is None
    assert (
        empty["text"]
        == "未找到新的事件。空结果不代表记忆不存在（本会话已排除 8 个已交付事件；可用 reset_seen 重新检索）。"
    )
    again = await search(api, q="Neo4j", s="s1", r=True)
    assert [i["eventId"] for i in again["items"]] == [i["eventId"] for i in first["items"]]


async def test_search_again_is_offered_while_the_ranking_holds_more(api: Api) -> None:
    await seed_neo4j_notes(api)  # 8 candidates: two pages of 4
    hint = "search(cursor) 取下一页（新的事件）"
    q = (
        'query($s: String!, $c: String) { search(query: "Neo4j", session: $s, cursor: $c) {'
        " cursor searchAgain text(locale: ZH) expandConcepts } }"
    )
    first = (await api.gql(q, s="hint"))["search"]
    assert first["searchAgain"] is True
    assert f"可继续：{hint} | read(event_id)" in first["text"]
    second = (await api.gql(q, s="hint", c=first["cursor"]))["search"]
    assert second["searchAgain"] is False and hint not in second["text"]
    follow = await api.gql(
        'query($c: String!, $id: ID!) {'
        ' expand(cursor: $c, conceptId: $id, session: "hint") { searchAgain } }',
        c=first["cursor"],
        id=first["expandConcepts"][0],
    )
    assert follow["expand"]["searchAgain"] is False  # only a search page says it


async def test_session_header_is_used_when_no_argument(api: Api) -> None:
    await seed_neo4j_notes(api, 5)
    query = '{ search(query: "Neo4j") { session cursor items { eventId } } }'
    one = (await api.post(query, None, **{"X-Memory-Session": "hdr"}))["data"]["search"]
    more = 'query($c: String) { search(cursor: $c) { session items { eventId } } }'
    body = await api.post(more, {"c": one["cursor"]}, **{"X-Memory-Session": "hdr"})
    two = body["data"]["search"]
    assert one["session"] == two["session"] == "hdr"
    assert not {i["eventId"] for i in one["items"]} & {i["eventId"] for i in two["items"]}


async def test_expand_walks_shared_concepts_and_checks_its_entry(api: Api) -> None:
    await seed_neo4j_notes(api)
    page = await search(api, q="Neo4j backup", s="x")
    assert "concept_1" in page["expandConcepts"]  # concept_1 = Neo4j, mentioned by every event
    delivered = {i["eventId"] for i in page["items"]}
    out = (await api.gql(EXPAND, c=page["cursor"], id="concept_1", l=2, s="x"))["expand"]
    assert len(out["items"]) == 2
    assert not delivered & {i["eventId"] for i in out["items"]}
    assert out["chainCount"] == page["chainCount"] + 2
    assert out["cursor"] != page["cursor"]
    for item in out["items"]:
        assert "concept_1" in [c["id"] for c in item["concepts"]]
    err = await api.error(EXPAND, c=page["cursor"], id="concept_999", s="x")
    assert err["extensions"]["code"] == "CONCEPT_NOT_OFFERED"
    assert err["extensions"]["zh"] == "该 concept 不是当前游标提供的入口"
    for limit in (0, 9):
        err = await api.error(EXPAND, c=page["cursor"], id="concept_1", l=limit, s="x")
        assert err["extensions"]["code"] == "OUT_OF_RANGE"
    err = await api.error(EXPAND, c=page["cursor"], id="concept_1", s="intruder")
    assert err["extensions"]["code"] == "CURSOR_SESSION"
    err = await api.error(EXPAND, c="cur_0000000000000000", id="concept_1", s="x")
    assert err["extensions"]["code"] == "CURSOR_INVALID"
    err = await api.error(
        '{ expand(cursor: "cur_0", conceptId: "concept_1", resetSeen: true) { cursor } }'
    )
    assert err["extensions"]["code"] == "RESET_SEEN_SEARCH_ONLY"


async def test_expand_caps_new_events_at_four(api: Api) -> None:
    await seed_neo4j_notes(api, 12)
    page = await search(api, q="Neo4j sharding", s="c")
    out = (await api.gql(EXPAND, c=page["cursor"], id="concept_1", l=8, s="c"))["expand"]
    assert len(out["items"]) == 4


async def test_a_failed_call_records_nothing(api: Api) -> None:
    await seed_neo4j_notes(api)
    page = await search(api, q="Neo4j", s="f")
    await api.error(EXPAND, c=page["cursor"], id="concept_999", s="f")
    # the failed expand delivered nothing, so the branch from the same cursor still finds 4
    out = (await api.gql(EXPAND, c=page["cursor"], id="concept_1", l=4, s="f"))["expand"]
    assert len(out["items"]) == 4


async def test_nearby_reads_neighbouring_records_in_order(api: Api) -> None:
    for rec in range(1, 11):
        ex = extraction(f"chapter one record {rec}", concepts=["story"])
        content = f"第一章 第{rec}条记录：" + ("dragon " if rec == 6 else "") + "内容" * 20
        await api.gql(
            SAVE, input={"content": content, "id": f"book_ch1_e{rec:02d}", "extraction": ex}
        )
    await api.gql(SAVE, input={"content": "plain event", "extraction": extraction("plain")})
    page = await search(api, q="dragon", s="n")
    assert page["items"][0]["eventId"] == "book_ch1_e06"
    assert "book_ch1_e06" in page["nearbyEvents"]
    delivered = {i["eventId"] for i in page["items"]}
    out = (await api.gql(NEARBY, c=page["cursor"], id="book_ch1_e06", s="n"))["nearby"]
    got = [i["eventId"] for i in out["items"]]
    expected = [f"book_ch1_e{r:02d}" for r in (4, 5, 7, 8) if f"book_ch1_e{r:02d}" not in delivered]
    assert got == expected
    assert got == sorted(got)
    for b, a in ((11, 0), (0, -1)):
        err = await api.error(NEARBY, c=page["cursor"], id="book_ch1_e06", b=b, a=a, s="n")
        assert err["extensions"]["code"] == "OUT_OF_RANGE"
    err = await api.error(NEARBY, c=page["cursor"], id="event_1", s="n")
    assert err["extensions"]["code"] == "NO_POSITION"
    not_offered = next(
        f"book_ch1_e{r:02d}"
        for r in range(1, 11)
        if f"book_ch1_e{r:02d}" not in page["nearbyEvents"]
    )
    err = await api.error(NEARBY, c=page["cursor"], id=not_offered, s="n")
    assert err["extensions"]["code"] == "ANCHOR_NOT_OFFERED"


async def test_a_long_query_fades_the_coverage_term_and_a_question_keeps_it(api: Api) -> None:
    from mnemoql.engine.retrieval.ranking import lexical_fade
    from mnemoql.engine.retrieval.terms import query_terms

    await seed_neo4j_notes(api)
    short = "Neo4j deployment backup"
    long = " ".join(["Neo4j deployment backup indexing migration monitoring sharding"] * 2) + (
        " caching security cluster replica schema driver query plan memory page cache heap"
    )
    n = len(query_terms(long))
    assert n > 16
    for q, fade in ((short, 1.0), (long, lexical_fade(n))):
        page = await search(api, q=q, s=f"fade-{len(q)}")
        for item in page["items"]:
            e = item["explain"]
            assert e["score"] == pytest.approx(e["rrf"] + 0.10 * fade * e["coverage"], abs=1e-9)
        assert any(i["explain"]["coverage"] > 0 for i in page["items"])


async def test_chain_stops_at_twenty_events(api: Api) -> None:
    await seed_neo4j_notes(api, 30)
    page = await search(api, q="Neo4j", s="chain")
    cursor, count = page["cursor"], page["chainCount"]
    while True:
        body = await api.post(EXPAND, {"c": cursor, "id": "concept_1", "l": 8, "s": "chain"})
        if body.get("errors"):
            assert body["errors"][0]["extensions"]["code"] == "CHAIN_EXHAUSTED"
            assert (
                body["errors"][0]["extensions"]["zh"] == "追查链已达 20 个事件上限，请重新 search"
            )
            break
        out = body["data"]["expand"]
        assert out["chainCount"] <= 20
        cursor, count = out["cursor"], out["chainCount"]
    assert count == 20
    # branching from the first cursor uses that cursor's own count
    branch = (await api.gql(EXPAND, c=page["cursor"], id="concept_1", l=4, s="chain"))["expand"]
    assert branch["chainCount"] == page["chainCount"] + len(branch["items"])


async def test_entity_filter_is_and_across_terms_and_reports_unknown_terms(api: Api) -> None:
    await api.gql(
        SAVE, input={"content": "A and B", "extraction": extraction("both", ["Alice", "Bob"])}
    )
    await api.gql(
        SAVE, input={"content": "A only", "extraction": extraction("alice only", ["Alice"])}
    )
    await api.gql(SAVE, input={"content": "B only", "extraction": extraction("bob only", ["Bob"])})
    only_alice = await search(api, e=["alice"], s="e1")
    assert {i["summary"] for i in only_alice["items"]} == {"both", "alice only"}
    assert only_alice["items"][0]["explain"]["order"] == "recency"
    assert [i["summary"] for i in only_alice["items"]] == ["alice only", "both"]  # newest first
    both = await search(api, e=["Alice，Bob"], s="e2")
    assert [i["summary"] for i in both["items"]] == ["both"]
    missing = await search(api, e=["Carol"], s="e3")
    assert missing["items"] == [] and missing["notes"] == [
        {"code": "ENTITY_NOT_FOUND", "value": "Carol"}
    ]


async def test_time_hint_filters_on_write_date(api: Api) -> None:
    await seed_neo4j_notes(api, 3)
    assert len((await search(api, t="今天", s="t1"))["items"]) == 3
    assert len((await search(api, q="Neo4j", t="last 7 days", s="t2"))["items"]) == 3
    assert (await search(api, t="2001-01-01~2001-12-31", s="t3"))["items"] == []
    # issue 27 item 6: the phrases activation cues read, refused by search on main
    for hint in ("3 days ago to today", "since last Friday", "上周五至今", "12月1日到今天", "今天上午"):
        assert len((await search(api, t=hint, s=f"t-{hint}"))["items"]) == 3, hint
    day = api.app.state.memory.ingestor.now().date() - timedelta(days=1)  # the memory's clock
    for hint in ("3 days ago", "上周五", f"{day.month}月{day.day}日"):
        assert (await search(api, t=hint, s=f"t-{hint}"))["items"] == [], hint
    err = await api.error(SEARCH, t="sometime soon")
    assert err["extensions"]["code"] == "TIME_HINT_INVALID"
    assert err["extensions"]["zh"] == "无法解析 time_hint：sometime soon"


async def test_search_needs_something_to_search_for(api: Api) -> None:
    err = await api.error(SEARCH)
    assert err["extensions"]["code"] == "BAD_USER_INPUT"
    assert err["extensions"]["zh"] == "search 需要 query_text、entity_filter、time_hint 至少一项"


async def test_identical_content_is_delivered_once(api: Api) -> None:
    ex = {
        "events": [
            {"ref": "a", "summary": "Neo4j tuning part one"},
            {"ref": "b", "summary": "Neo4j tuning part two"},
        ]
    }
    saved = (
        await api.gql(
            SAVE, input={"content": "Neo4j tuning: heap and page cache.", "extraction": ex}
        )
    )["save"]
    assert len(saved["eventIds"]) == 2
    page = await search(api, q="Neo4j tuning", s="d")
    assert len(page["items"]) == 1


async def test_repeated_excerpts_become_quote_refs(api: Api) -> None:
    shared = "共同的开头" * 30  # 150 code points, no query terms: both quotes start at 0
    await api.gql(
        SAVE, input={"content": shared + "甲", "extraction": extraction("first", ["Alice"])}
    )
    await api.gql(
        SAVE, input={"content": shared + "乙", "extraction": extraction("second", ["Alice"])}
    )
    page = await search(api, e=["Alice"], s="q")
    first, second = page["items"]
    assert first["quote"]["text"] == shared[:120] and first["quoteRef"] is None
    assert second["quote"] is None
    assert second["quoteRef"] == {"id": first["eventId"], "start": 0, "end": 120}
    assert f"原文同 {first['eventId']}[0,120)" in page["text"]


async def test_targeted_person_search_gives_top_three_with_context(api: Api) -> None:
    await seed_neo4j_notes(api, 4)
    data = await api.gql(
        """{ search(query: "Alice", target: PERSON) { cursor items { eventId }
             entityHits { score exact node { id ... on Person { name } }
               neighbours { type direction node { id } } } text(locale: ZH) } }"""
    )
    page = data["search"]
    assert page["cursor"] is None and page["items"] == []
    top = page["entityHits"][0]
    assert top["exact"] is True and top["score"] == 1.0 and top["node"]["name"] == "Alice"
    assert len(page["entityHits"]) <= 3
    assert {n["type"] for n in top["neighbours"]} == {"PARTICIPATED_IN"}
    assert all(n["direction"] == "out" for n in top["neighbours"])
    lines = page["text"].splitlines()
    assert lines[:2] == [
        "[memory_database_search] operation=search target=Person",
        f"#1 {top['node']['id']} Alice （名称匹配）",
    ]
    assert len(lines) == 2 + len(top["neighbours"]) + sum(
        1 + len(h["neighbours"]) for h in page["entityHits"][1:]
    )
    # not recorded in the event history
    events = await search(api, q="Neo4j", s="default")
    assert events["excludedCount"] == 0


async def test_a_page_can_be_followed_inside_one_request(api: Api) -> None:
    await seed_neo4j_notes(api)
    data = await api.gql(
        """{ search(query: "Neo4j caching", session: "nest") {
               items { eventId }
               expand(conceptId: "concept_1", limit: 2) { chainCount items { eventId } } } }"""
    )
    page = data["search"]
    first = {i["eventId"] for i in page["items"]}
    nested = page["expand"]
    assert len(nested["items"]) == 2 and not first & {i["eventId"] for i in nested["items"]}
    assert nested["chainCount"] == len(first) + 2


@pytest.mark.parametrize("locale", ["ZH", "EN"])
async def test_text_rendering_in_both_locales(api: Api, locale: str) -> None:
    await seed_neo4j_notes(api, 3)
    text = (
        await api.gql(
            f'{{ search(query: "Neo4j", session: "{locale}") {{ text(locale: {locale}) }} }}'
        )
    )["search"]["text"]
    assert text.startswith("[memory_database_search] operation=search target=Event")
    assert ("摘要：" in text) == (locale == "ZH")


LEXICAL = (
    'query($q: String!, $s: String) { search(query: $q, session: $s) { items { eventId '
    "explain { summaryRank chunkRank lexicalRank lexicalScore rrf } } } }"
)


async def _seed_part_numbers(api: Api) -> str:
    """Eight notes; one holds a part number that only the lexical route can rank first."""
    wanted = ""
    for i in range(8):
        body = f"Maintenance log {i}: replaced the filter and checked the pressure. " * 3
        if i == 5:
            body += "The spare part is XK-4471-B, ordered from the usual supplier."
        ex = extraction(f"maintenance log {i}")
        ids = (await api.gql(SAVE, input={"content": body, "extraction": ex}))["save"]["eventIds"]
        wanted = ids[0] if i == 5 else wanted
    return wanted


async def test_explain_shows_the_lexical_rank(api: Api) -> None:
    wanted = await _seed_part_numbers(api)
    items = (await api.gql(LEXICAL, q="which part XK-4471-B", s="lex"))["search"]["items"]
    assert items[0]["eventId"] == wanted
    top = items[0]["explain"]
    assert top["lexicalRank"] == 1 and top["lexicalScore"] > 0
    assert all(i["explain"]["lexicalRank"] != 1 for i in items[1:])


async def test_by_default_the_lexical_route_joins_only_for_identifiers(api: Api) -> None:
    await _seed_part_numbers(api)
    items = (await api.gql(LEXICAL, q="which filter was replaced", s="plain"))["search"]["items"]
    assert items and all(i["explain"]["lexicalRank"] is None for i in items)


async def test_the_lexical_route_can_be_switched_off(tmp_path: Path) -> None:
    settings = offline_settings(tmp_path, retrieval={"lexical": False})
    async with running(settings) as off:
        await _seed_part_numbers(off)
        items = (await off.gql(LEXICAL, q="which part XK-4471-B", s="lex"))["search"]["items"]
    assert items and all(i["explain"]["lexicalRank"] is None for i in items)
    assert all(i["explain"]["lexicalScore"] is None for i in items)


def _ids(page: dict[str, Any]) -> list[str]:
    return [i["eventId"] for i in page["items"]]


async def test_a_page_is_the_same_every_time_it_is_asked(api: Api) -> None:
    # issue 27 item 3: a GraphQL query is safe to repeat; the next page is named by arguments
    await seed_neo4j_notes(api, 12)
    first = await search(api, q="Neo4j", s="r")
    assert await search(api, q="Neo4j", s="r") == first
    second = await search(api, c=first["cursor"], s="r")
    assert second["session"] == "r" and len(second["items"]) == 4
    assert not set(_ids(first)) & set(_ids(second))
    # a client that keeps its variables and adds the cursor (Apollo's fetchMore) asks the same
    assert await search(api, q="Neo4j", c=first["cursor"], s="r") == second
    third = await search(api, c=second["cursor"], s="r")
    assert len(third["items"]) == 4 and not set(_ids(third)) & set(_ids(first) + _ids(second))
    assert await search(api, c=first["cursor"], s="r") == second  # still the same page
    out = (await api.gql(EXPAND, c=first["cursor"], id="concept_1", l=2, s="r"))["expand"]
    assert out == (await api.gql(EXPAND, c=first["cursor"], id="concept_1", l=2, s="r"))["expand"]
    # another search in the session still skips everything it was given
    other = await search(api, q="Neo4j backup", s="r")
    assert not set(_ids(other)) & set(_ids(first) + _ids(second) + _ids(third) + _ids(out))


async def test_a_cursor_continues_only_its_own_search(api: Api) -> None:
    await seed_neo4j_notes(api)
    first = await search(api, q="Neo4j", t="today", s="m")
    for wrong, argument in (({"q": "backup"}, "query"), ({"t": "yesterday"}, "timeHint")):
        err = await api.error(SEARCH, c=first["cursor"], s="m", **wrong)
        assert err["extensions"]["code"] == "BAD_USER_INPUT", err
        assert err["extensions"]["argument"] == argument
    err = await api.error(SEARCH, c=first["cursor"], s="m", r=True)
    assert err["extensions"]["argument"] == "resetSeen"
    err = await api.error(SEARCH, c=first["cursor"], s="intruder")
    assert err["extensions"]["code"] == "CURSOR_SESSION"
    err = await api.error(SEARCH, c="cur_0000000000000000", s="m")
    assert err["extensions"]["code"] == "CURSOR_INVALID"
    assert len((await search(api, c=first["cursor"], t="today", s="m"))["items"]) == 4


async def test_a_follow_up_that_names_no_session_continues_its_cursors(api: Api) -> None:
    await seed_neo4j_notes(api)
    first = await search(api, q="Neo4j", s="mine")
    more = 'query($c: String) { search(cursor: $c) { session items { eventId } } }'
    page = (await api.gql(more, c=first["cursor"]))["search"]
    assert page["session"] == "mine" and not set(_ids(first)) & set(_ids(page))
