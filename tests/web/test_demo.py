"""The demo memory: idempotent loading, a graph with every label and relationship type, a
``nearby`` chain on the diary ids, and the ``mnemoql demo`` command's settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemoql.web.cli import COMMANDS
from mnemoql.web.cli_args import build_parser
from mnemoql.web.demo import DEMO_DATA, DemoReport, banner, demo_inputs, demo_settings, load_demo
from tests.web.conftest import demo_api

COUNTS = "{ memoryIndex { counts { events persons concepts locations chunks } } }"
GRAPH = "{ graph { nodes { id: nodeId label } relationships { type source target } truncatedNodes } }"
GRAPH_NAMES = "{ graph { nodes { label name } } }"
SEARCH = (
    'query($q: String!) { search(query: $q, session: "demo", resetSeen: true) {'
    " cursor nearbyEvents items { eventId } } }"
)
NEARBY = (
    "query($c: String!, $id: ID!) {"
    ' nearby(cursor: $c, eventId: $id, before: 2, after: 2, session: "demo") {'
    " cursor nearbyEvents items { eventId quote { text start end total } } } }"
)
LABELS = {"Event", "Person", "Concept", "Location"}
TYPES = {"PARTICIPATED_IN", "OCCURRED_AT", "MENTIONS", "HAS_ATTITUDE"}


def test_the_sample_is_valid_bilingual_and_mostly_hand_extracted() -> None:
    lines = [json.loads(ln) for ln in DEMO_DATA.read_text(encoding="utf-8").splitlines()]
    items = demo_inputs()
    assert 25 <= len(items) <= 40
    assert len(items) == len(lines)
    assert [i.idempotency_key for i in items] == [f"demo:{n}" for n in range(1, len(items) + 1)]
    assert sum(i.extraction is not None for i in items) >= len(items) * 3 // 4
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in i.content) for i in items)
    assert any(i.content.isascii() for i in items)
    diary = sorted(i.id for i in items if i.id and i.id.startswith("diary_ch1_"))
    assert diary == [f"diary_ch1_e{n:02d}" for n in range(1, 7)]
    # one long event, so the explorer's "Read more" has something to read
    assert max(len(i.content) for i in items) > 2000


async def test_loading_twice_gives_the_same_memory(tmp_path: Path) -> None:
    async with demo_api(tmp_path) as (api, first):
        assert (first.saved, first.replayed) == (len(demo_inputs()), 0)
        counts = (await api.gql(COUNTS))["memoryIndex"]["counts"]
        assert counts["events"] == len(first.event_ids)  # a chat save gives one per turn
        again = await load_demo(api.app.state.memory)
        assert (again.saved, again.replayed) == (0, first.saved)
        assert again.event_ids == first.event_ids
        assert (await api.gql(COUNTS))["memoryIndex"]["counts"] == counts
    # a second `mnemoql demo` on the same data dir: a new process, the same memory
    async with demo_api(tmp_path) as (api, third):
        assert (third.saved, third.replayed) == (0, first.saved)
        assert (await api.gql(COUNTS))["memoryIndex"]["counts"] == counts


async def test_the_graph_has_every_label_and_relationship_type(tmp_path: Path) -> None:
    async with demo_api(tmp_path) as (api, report):
        graph = (await api.gql(GRAPH))["graph"]
    labels = {n["label"] for n in graph["nodes"]}
    assert labels >= LABELS
    assert {r["type"] for r in graph["relationships"]} == TYPES
    assert not graph["truncatedNodes"]
    assert sum(n["label"] == "Event" for n in graph["nodes"]) == len(report.event_ids)
    # names given in two languages merged into one node: 林晓 / Lin Xiao, Berlin / 柏林
    persons = [n for n in graph["nodes"] if n["label"] == "Person"]
    assert len(persons) == 7


async def test_a_nearby_chain_reads_the_diary(tmp_path: Path) -> None:
    async with demo_api(tmp_path) as (api, _):
        page = (await api.gql(SEARCH, q="Launch day! public beta sign-ups"))["search"]
        assert page["items"][0]["eventId"] == "diary_ch1_e03"
        assert "diary_ch1_e03" in page["nearbyEvents"]
        delivered = {i["eventId"] for i in page["items"]}
        out = (await api.gql(NEARBY, c=page["cursor"], id="diary_ch1_e03"))["nearby"]
        got = [i["eventId"] for i in out["items"]]
        expected = [f"diary_ch1_e{r:02d}" for r in (1, 2, 4, 5)]
        assert got == [e for e in expected if e not in delivered]
        assert got, "nearby delivered nothing"
        for item in out["items"]:
            assert item["quote"]["text"]
        # the chain goes on from a record nearby delivered, to the diary's last entry
        assert "diary_ch1_e04" in out["nearbyEvents"]
        delivered |= set(got)
        more = (await api.gql(NEARBY, c=out["cursor"], id="diary_ch1_e04"))["nearby"]
        further = [i["eventId"] for i in more["items"]]
        assert "diary_ch1_e06" in further
        assert not delivered & set(further), "a session never delivers an event twice"


async def test_the_demo_lives_in_its_own_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEMOQL_DATA_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("MNEMOQL_STORE", "neo4j")
    monkeypatch.setenv("MNEMOQL_HOST", "0.0.0.0")
    settings = demo_settings()
    assert settings.data_dir == tmp_path / "mine" / "demo"
    assert (settings.store, settings.host) == ("embedded", "127.0.0.1")
    explicit = demo_settings(tmp_path / "elsewhere", port=8123)
    assert (explicit.data_dir, explicit.port) == (tmp_path / "elsewhere", 8123)

    args = build_parser(COMMANDS).parse_args(["demo", "--data-dir", str(tmp_path / "d"), "--port", "9"])
    assert (args.data_dir, args.port, args.func.__name__) == (str(tmp_path / "d"), 9, "cmd_demo")

    text = banner(demo_settings(tmp_path / "d", port=9), DemoReport(saved=31))
    assert "http://127.0.0.1:9/explorer" in text
    assert "http://127.0.0.1:9/graphql" in text
    assert "search(" in text and "nearby(" in text
    # the user's own memory was not touched
    assert not (tmp_path / "mine").exists()


PERSON = (
    'query($n: String!) { persons(first: 5, where: {name: {eq: $n}}) { edges { node {'
    " name aliases } } } }"
)


async def test_the_english_chat_is_filed_under_its_speakers(tmp_path: Path) -> None:
    """The one chat in the sample has no extraction of its own: the offline rules make its
    speakers Persons (merged with the same people saved before) and its noun phrases
    Concepts, and nothing like "great" or "keep" becomes a concept."""
    async with demo_api(tmp_path) as (api, _):
        graph = (await api.gql(GRAPH_NAMES))["graph"]
        priya = (await api.gql(PERSON, n="Priya Nair"))["persons"]["edges"]
    names = {(n["label"], n["name"]) for n in graph["nodes"]}
    assert {("Concept", "sync engine"), ("Concept", "soak test")} <= names
    assert ("Location", "Lisbon") in names
    # 247 characters keep their two most salient concepts (issue #28: about one per 150)
    assert ("Concept", "conflict resolver") not in names
    assert not {("Concept", w) for w in ("great", "keep", "Priya", "Marco", "morning")} & names
    assert len(priya) == 1 and "Priya" in priya[0]["node"]["aliases"]


QUOTES = (
    'query($q: String!) { search(query: $q, session: "quotes", resetSeen: true) {'
    " items { eventId quote { text start end } event { ... on Event { content(limit: 10000) { text } } } } } }"
)


async def test_the_explorers_quotes_start_and_end_on_words(tmp_path: Path) -> None:
    # issue 27 item 7: the explorer showed "hem by hand..." and "rson at Café..." (main)
    def splits(text: str, i: int) -> bool:  # inside a spaced word (CJK: any place is a word's)
        if not 0 < i < len(text) or "\u4e00" <= text[i - 1] <= "\u9fff" >= text[i] >= "\u4e00":
            return False
        return text[i - 1].isalnum() and text[i].isalnum()

    async with demo_api(tmp_path) as (api, _):
        quoted = 0
        for q in ("Marco CRDT", "link notes by hand", "Marco in person at Café Einstein",
                  "Berlin webcam", "向量检索 多语言模型", "offline sync"):  # fmt: skip
            for item in (await api.gql(QUOTES, q=q))["search"]["items"]:
                quote, content = item["quote"], item["event"]["content"]["text"]
                if quote is None:
                    continue
                quoted += 1
                assert content[quote["start"] : quote["end"]] == quote["text"]
                assert not splits(content, quote["start"]), (q, quote["text"])
                assert not splits(content, quote["end"]), (q, quote["text"])
        assert quoted >= 12
