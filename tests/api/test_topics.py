"""Topic paths and dates over GraphQL (SPEC §2): binding at save, the tree, recall, recallByDate,
activate (offline and with the fake chat model), bindTopic, restarts and the graph snapshot."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from mnemoql.engine.topics.profile import ActivationProfile, SliceRef, f32
from mnemoql.engine.topics.scoring import CandidateSource, score
from mnemoql.engine.topics.tree import TopicBinding
from tests.api.conftest import Api, fake_model_settings, offline_settings, running
from tests.fake_model_server import FakeModelServer
from tests.store.factories import STORE_FACTORIES, StoreFactory, load_factory_modules

load_factory_modules()

SAVE = """
mutation($input: SaveInput!) {
  save(input: $input) { eventIds topicPath topicSource replayed }
}"""
TOPICS = "{ topics { text roots { path } nodes { id path name slices parent { path } } } }"
BINDINGS = """
query($id: ID!) { node(id: $id) { __typename ... on Topic {
  id path name slices children { path } parent { path }
  bindings { totalCount edges { node { id } timestamp activationWeight diffusionWeight
                                 contextIndependenceWeight relatedPaths } }
} } }"""
RECALL = """
query($p: String!) { recall(topicPath: $p) {
  memories { event { id summary } source score timestamp topicPath }
  missing { target key message } } }"""
BY_DATE = """
query($d: String!) { recallByDate(date: $d) {
  memories { event { id } source score topicPath } missing { target key message } } }"""
ACTIVATE = """
query($lines: [String!]!, $evaluate: Boolean! = false) {
  activate(input: $lines, evaluate: $evaluate) {
    cues { type text }
    memories { event { id } summary source score topicPath
               quote { text start end total } ranges { index start end } }
    missing { target key }
  } }"""
GRAPH = """{ graph(includeTopics: true) {
  nodes { id: nodeId label name properties } relationships { type source target properties }
  truncatedNodes } }"""

EXTRACTION: dict[str, Any] = {
    "events": [
        {
            "ref": "e1",
            "summary": "Alice moved to Berlin for the Neo4j migration",
            "participants": [{"person": "p1"}],
            "locations": ["l1"],
            "concepts": ["c1", "c2"],
        }
    ],
    "persons": [{"ref": "p1", "name": "Alice", "aliases": ["Al"]}],
    "concepts": [{"ref": "c1", "name": "Neo4j"}, {"ref": "c2", "name": "migration"}],
    "locations": [{"ref": "l1", "name": "Berlin"}],
}
TEXT = "Alice: I moved to Berlin last week to work on the Neo4j migration."


def bare(summary: str) -> dict[str, Any]:
    """An extraction with one event and no entities (nothing for the offline topic rule)."""
    return {"events": [{"ref": "e1", "summary": summary}]}


async def save(api: Api, content: str, **fields: Any) -> dict[str, Any]:
    extraction = fields.pop("extraction", bare(content[:40]))
    payload: dict[str, Any] = {"content": content, **fields}
    if extraction is not None:
        payload["extraction"] = extraction
    result: dict[str, Any] = (await api.gql(SAVE, input=payload))["save"]
    return result


def today(api: Api) -> str:
    return str(api.app.state.memory.ingestor.now().date().isoformat())


# ---------------------------------------------------------------- binding at save


async def test_client_topic_path_related_topics_and_profile_clamps(api: Api) -> None:
    saved = await save(
        api,
        "We sketched the recall API.",
        topicPath="  work -> mnemoql [api]  ",
        relatedTopics=["hiring", " ", "work->ops [2]"],
        activationProfile={"activationWeight": 1.5, "diffusionWeight": -0.2},
    )
    assert (saved["topicPath"], saved["topicSource"]) == ("work->mnemoql", "client")
    tree = (await api.gql(TOPICS))["topics"]
    assert tree["text"] == (
        "work [root]\r\nwork->mnemoql {slices: 1}\r\nwork->ops {slices: 0}\r\nhiring [root]"
    )
    assert [r["path"] for r in tree["roots"]] == ["work", "hiring"]
    assert tree["nodes"][1] == {
        "id": "topic:work->mnemoql",
        "path": "work->mnemoql",
        "name": "mnemoql",
        "slices": 1,
        "parent": {"path": "work"},
    }
    node = (await api.gql(BINDINGS, id="topic:work->mnemoql"))["node"]
    assert node["__typename"] == "Topic" and node["parent"] == {"path": "work"}
    (edge,) = node["bindings"]["edges"]
    assert edge["node"]["id"] == saved["eventIds"][0]
    # clamped to [0, 1]; a missing weight takes its default; client profiles are not stabilised
    assert (edge["activationWeight"], edge["diffusionWeight"]) == (1.0, 0.0)
    assert edge["contextIndependenceWeight"] == 0.5
    assert edge["relatedPaths"] == ["hiring", "work->ops"]
    assert (await api.gql(BINDINGS, id="topic:nope"))["node"] is None


async def test_the_extraction_model_picks_the_topic_and_sees_the_tree(
    tmp_path: Path, fake_models: FakeModelServer
) -> None:
    async with running(fake_model_settings(tmp_path, fake_models.url)) as api:
        fake_models.queue_extraction(
            {
                **bare("a note about the memory project"),
                "topic": {
                    "topicPath": "项目 [root] -> mnemoql",
                    "relatedTopicPaths": [],
                    "activationProfile": {
                        "activationWeight": 1.5,
                        "diffusionWeight": 0.9,
                        "contextIndependenceWeight": -0.2,
                    },
                },
            }
        )
        first = await save(api, "一条关于记忆项目的笔记。", extraction=None)
        assert (first["topicPath"], first["topicSource"]) == ("项目->mnemoql", "model")
        node = (await api.gql(BINDINGS, id="topic:项目->mnemoql"))["node"]
        edge = node["bindings"]["edges"][0]
        # SPEC §2.3's clamp case: (1.5, 0.9, -0.2), one message, no related -> (0.95, 0.45, 0)
        assert (
            edge["activationWeight"],
            edge["diffusionWeight"],
            edge["contextIndependenceWeight"],
        ) == (f32(0.95), f32(0.45), 0.0)

        # the next extraction request carries the tree; the fake still finds the content
        fake_models.reset()
        second = await save(
            api, "Bob: the mnemoql API review went well; mnemoql ships soon.", extraction=None
        )
        (request,) = fake_models.requests_to("chat")
        user = request.json["messages"][-1]["content"]
        assert "现有话题树:\n项目 [root]\n项目->mnemoql {slices: 1}\n\n" in user
        assert user.endswith("\n\nBob: the mnemoql API review went well; mnemoql ships soon.")
        event = (await api.gql(BINDINGS, id="topic:项目->mnemoql"))["node"]["bindings"]
        # no model topic this time: the offline rule found the known path in the content
        # (named twice: one passing mention is not enough, issue #28)
        assert second["topicSource"] == "offline" and event["totalCount"] == 2

        # the client's path wins over the model's
        fake_models.queue_extraction({**bare("x"), "topic": {"topicPath": "model->path"}})
        third = await save(api, "A third note.", extraction=None, topicPath="client->path")
        assert (third["topicPath"], third["topicSource"]) == ("client->path", "client")
        # a malformed topic is dropped, not fatal
        fake_models.queue_extraction({**bare("y"), "topic": {"topicPath": 42}})
        fourth = await save(api, "A fourth note.", extraction=None)
        assert fourth["topicPath"] is None and fourth["eventIds"]


async def test_offline_rule_builds_a_path_then_reuses_known_ones(api: Api) -> None:
    first = await save(api, TEXT, extraction=EXTRACTION)
    assert (first["topicPath"], first["topicSource"]) == ("Berlin->Neo4j", "offline")
    # the offline extractor names NEO4J as this save's concept: the known path counts (a bare
    # extraction with one passing mention would not, issue #28)
    second = await save(api, "Upgraded NEO4J to 5.26 on the staging box.", extraction=None)
    assert (second["topicPath"], second["topicSource"]) == ("Berlin->Neo4j", "offline")
    edges = (await api.gql(BINDINGS, id="topic:Berlin->Neo4j"))["node"]["bindings"]["edges"]
    # the offline profile is the default one, stabilised: one message, no related paths
    assert {(e["activationWeight"], e["diffusionWeight"]) for e in edges} == {(f32(0.5), f32(0.35))}


async def test_a_save_with_no_topic_is_dated_only(api: Api) -> None:
    saved = await save(api, "hello there")
    assert saved["topicPath"] is None and saved["topicSource"] is None
    assert (await api.gql(TOPICS))["topics"]["text"] == ""
    got = (await api.gql(BY_DATE, d=today(api)))["recallByDate"]
    assert got == {
        "memories": [
            {"event": {"id": saved["eventIds"][0]}, "source": "DATE", "score": None,
             "topicPath": None}
        ],
        "missing": None,
    }  # fmt: skip


# ---------------------------------------------------------------- recall


async def test_recall_ranks_primary_related_parent_as_partner_does(api: Api) -> None:
    main = await save(
        api,
        "main",
        topicPath="topic->main",
        relatedTopics=["topic-related"],
        activationProfile={
            "activationWeight": 0.9,
            "diffusionWeight": 0.1,
            "contextIndependenceWeight": 0.9,
        },
    )
    ones = {"activationWeight": 1, "diffusionWeight": 1, "contextIndependenceWeight": 1}
    related = await save(api, "related", topicPath="topic-related", activationProfile=ones)
    parent = await save(api, "parent", topicPath="topic", activationProfile=ones)
    got = (await api.gql(RECALL, p="topic->main"))["recall"]
    assert got["missing"] is None
    rows = [(m["event"]["id"], m["source"], m["topicPath"]) for m in got["memories"]]
    assert rows == [
        (main["eventIds"][0], "PRIMARY", "topic->main"),
        (related["eventIds"][0], "RELATED", "topic-related"),
        (parent["eventIds"][0], "PARENT", "topic"),
    ]
    # SPEC §2.5's example, all saved just now: 2.026 > 1.95 > 1.59, to the engine's last bit
    scores = [m["score"] for m in got["memories"]]
    assert scores == pytest.approx([2.026, 1.95, 1.59], abs=1e-6)
    now = int(got["memories"][0]["timestamp"])
    expected = [
        score(source, TopicBinding(SliceRef("u", "s"), now, (), ActivationProfile(*w)), now)
        for source, w in (
            (CandidateSource.PRIMARY, (0.9, 0.1, 0.9)),
            (CandidateSource.RELATED, (1, 1, 1)),
            (CandidateSource.PARENT, (1, 1, 1)),
        )
    ]
    assert scores == expected


async def test_zero_diffusion_disables_related_recall(api: Api) -> None:
    main = await save(
        api, "main", topicPath="m", relatedTopics=["r"], activationProfile={"diffusionWeight": 0}
    )
    await save(api, "related", topicPath="r")
    got = (await api.gql(RECALL, p="m"))["recall"]
    assert [m["event"]["id"] for m in got["memories"]] == main["eventIds"]


async def test_an_unknown_topic_is_empty_with_a_missing_note(api: Api) -> None:
    await save(api, "x", topicPath="known")
    got = (await api.gql(RECALL, p=" unknown->path [1] "))["recall"]
    assert got == {
        "memories": [],
        "missing": {
            "target": "TOPIC",
            "key": "unknown->path",
            "message": "Unexisted topic path: unknown->path",
        },
    }


async def test_recall_by_date_in_save_order_and_its_errors(api: Api) -> None:
    a = await save(api, "first", topicPath="t")
    b = await save(api, "second")
    got = (await api.gql(BY_DATE, d=today(api)))["recallByDate"]
    assert [(m["event"]["id"], m["topicPath"]) for m in got["memories"]] == [
        (a["eventIds"][0], "t"),
        (b["eventIds"][0], None),
    ]
    empty = (await api.gql(BY_DATE, d="1999-01-01"))["recallByDate"]
    assert empty["memories"] == [] and empty["missing"]["target"] == "DATE_INDEX"
    for bad in ("2026-02-30", "last week", "someday"):
        err = await api.error(BY_DATE, d=bad)
        assert err["extensions"]["code"] == "BAD_USER_INPUT", bad
        assert err["extensions"]["argument"] == "date"


async def test_recall_by_date_reads_the_date_grammar_on_the_memorys_clock(api: Api) -> None:
    # issue 27 item 6: one grammar for timeHint, cues and recallByDate (main: yyyy-MM-dd only)
    a = await save(api, "first", topicPath="t")
    ids = [m["event"]["id"] for m in (await api.gql(BY_DATE, d=today(api)))["recallByDate"]["memories"]]
    assert ids == a["eventIds"]
    for phrase in ("today", "今天", "0 days ago", "this morning"):
        got = (await api.gql(BY_DATE, d=phrase))["recallByDate"]["memories"]
        assert [m["event"]["id"] for m in got] == ids, phrase
    assert (await api.gql(BY_DATE, d="昨天"))["recallByDate"]["memories"] == []


async def test_forget_removes_a_memory_from_recall(api: Api) -> None:
    a = await save(api, "gone", topicPath="t")
    b = await save(api, "kept", topicPath="t")
    await api.gql("mutation($id: ID!) { forget(eventId: $id) { deletedIds } }", id=a["eventIds"][0])
    got = (await api.gql(RECALL, p="t"))["recall"]
    assert [m["event"]["id"] for m in got["memories"]] == b["eventIds"]
    dated = (await api.gql(BY_DATE, d=today(api)))["recallByDate"]["memories"]
    assert [m["event"]["id"] for m in dated] == b["eventIds"]


async def test_bind_topic_rebinds_and_merges_related_paths(api: Api) -> None:
    (event_id,) = (await save(api, "note", topicPath="main", relatedTopics=["r1"]))["eventIds"]
    bind = """mutation($id: ID!, $p: String!, $r: [String!], $w: ActivationProfileInput) {
      bindTopic(eventId: $id, topicPath: $p, relatedTopics: $r, activationProfile: $w) {
        path slices bindings { edges { activationWeight relatedPaths } } } }"""
    got = (await api.gql(bind, id=event_id, p="main", r=["r2", "r1"], w={"activationWeight": 0.2}))[
        "bindTopic"
    ]
    assert got["slices"] == 1
    assert got["bindings"]["edges"] == [
        {"activationWeight": f32(0.2), "relatedPaths": ["r1", "r2"]}
    ]
    other = (await api.gql(bind, id=event_id, p="other [x]", r=None, w=None))["bindTopic"]
    assert other["path"] == "other"
    err = await api.error(bind, id="event_404", p="main", r=None, w=None)
    assert err["extensions"]["code"] == "NOT_FOUND"
    err = await api.error(bind, id=event_id, p=" [only a note] ", r=None, w=None)
    assert err["extensions"]["code"] == "BAD_USER_INPUT"


# ---------------------------------------------------------------- activate


async def test_activate_offline_with_topic_entity_and_date_cues(api: Api) -> None:
    s1 = await save(api, "We designed the recall API for mnemoql.", topicPath="work->mnemoql")
    s2 = await save(api, TEXT, extraction=EXTRACTION, topicPath="life->moving")
    (e1,), (e2,) = s1["eventIds"], s2["eventIds"]

    # the cue-activated memory first; the vector search of the lines brings the other one
    topic = (await api.gql(ACTIVATE, lines=["How is MNEMOQL going?"]))["activate"]
    assert topic["cues"] == [{"type": "TOPIC", "text": "work->mnemoql"}]
    m, other = topic["memories"]
    assert (m["event"]["id"], m["source"], m["topicPath"]) == (e1, "PRIMARY", "work->mnemoql")
    assert (other["event"]["id"], other["source"], other["score"]) == (e2, "VECTOR", None)
    assert m["summary"] == "We designed the recall API for mnemoql."
    content = "We designed the recall API for mnemoql."
    assert m["quote"] == {"text": content, "start": 0, "end": len(content), "total": len(content)}
    assert m["ranges"] == [{"index": 0, "start": 0, "end": len(content)}]

    entity = (await api.gql(ACTIVATE, lines=["Did Al call back?"]))["activate"]
    assert entity["cues"] == [{"type": "ENTITY", "text": "Al"}]
    first = entity["memories"][0]
    assert (first["event"]["id"], first["source"], first["score"]) == (e2, "ENTITY", None)
    assert first["topicPath"] == "life->moving"

    dated = (await api.gql(ACTIVATE, lines=[f"what did we do on {today(api)}?"]))["activate"]
    assert dated["cues"] == [{"type": "DATE", "text": today(api)}]
    assert sorted(x["event"]["id"] for x in dated["memories"]) == [e1, e2]
    assert {x["source"] for x in dated["memories"]} == {"DATE"}

    # all three at once: topics first, then dates, then entities; a memory's source is the
    # first cue that found it
    both = await api.gql(ACTIVATE, lines=["mnemoql news?", "what did Alice say today?"])
    got = both["activate"]
    assert [c["type"] for c in got["cues"]] == ["TOPIC", "DATE", "ENTITY"]
    assert {(x["event"]["id"], x["source"]) for x in got["memories"]} == {
        (e1, "PRIMARY"),
        (e2, "DATE"),
    }
    quote = next(x["quote"] for x in got["memories"] if x["event"]["id"] == e2)
    assert TEXT[quote["start"] : quote["end"]] == quote["text"]

    # no cue: the plain vector search of the lines, nothing missing
    nothing = (await api.gql(ACTIVATE, lines=["unrelated chatter"]))["activate"]
    assert nothing["cues"] == [] and nothing["missing"] == []
    assert sorted(x["event"]["id"] for x in nothing["memories"]) == [e1, e2]
    assert {x["source"] for x in nothing["memories"]} == {"VECTOR"}
    err = await api.error(ACTIVATE, lines=["  ", ""])
    assert err["extensions"]["code"] == "BAD_USER_INPUT"


async def test_activate_with_the_cue_model(tmp_path: Path, fake_models: FakeModelServer) -> None:
    async with running(fake_model_settings(tmp_path, fake_models.url)) as api:
        fake_models.queue_extraction(
            {**bare("recall API"), "topic": {"topicPath": "work->mnemoql"}}
        )
        (e1,) = (await save(api, "We designed the recall API.", extraction=None))["eventIds"]
        fake_models.reset()
        matches = [
            {"type": "topic", "text": "work->mnemoql [root]"},
            {"type": "date", "text": "not-a-date"},
            {"type": "person", "text": "Alice"},
            None,
            {"type": "topic", "text": "  "},
        ]
        fake_models.queue_extraction({"matches": matches})
        got = (await api.gql(ACTIVATE, lines=["<how's the API?>"]))["activate"]
        assert got["cues"] == [
            {"type": "TOPIC", "text": "work->mnemoql"},
            {"type": "DATE", "text": "not-a-date"},
        ]
        assert [(m["event"]["id"], m["source"]) for m in got["memories"]] == [(e1, "PRIMARY")]
        assert got["missing"] == [{"target": "DATE_INDEX", "key": "not-a-date"}]
        (request,) = fake_models.requests_to("chat")
        user = request.json["messages"][-1]["content"]
        assert '<input interval-to-first="0">&lt;how\'s the API?></input>' in user
        assert "<memory_topic_tree>\nwork [root]\r\nwork->mnemoql {slices: 1}\n" in user

        # a failing or unusable cue model means no cues (the vector search alone), not an error
        fake_models.fail("chat", "http_500", times=2)
        failed = (await api.gql(ACTIVATE, lines=["the API?"]))["activate"]
        assert failed["cues"] == [] and failed["missing"] == []
        assert [(m["event"]["id"], m["source"]) for m in failed["memories"]] == [(e1, "VECTOR")]
        for reply in ("not json at all", json.dumps({"matches": "nope"}), "[1, 2]"):
            fake_models.queue_extraction(reply)
            assert (await api.gql(ACTIVATE, lines=["the API?"]))["activate"]["cues"] == []


async def test_the_evaluator_keeps_only_passed_memories(
    tmp_path: Path, fake_models: FakeModelServer
) -> None:
    async with running(fake_model_settings(tmp_path, fake_models.url)) as api:
        ids = []
        for n in range(3):
            fake_models.queue_extraction({**bare(f"note {n}"), "topic": {"topicPath": "t"}})
            ids += (await save(api, f"note {n}", extraction=None))["eventIds"]
        api.app.state.memory.activator.concurrency = 1  # replies are consumed in rank order
        ranked = [m["event"]["id"] for m in (await api.gql(RECALL, p="t"))["recall"]["memories"]]
        assert sorted(ranked) == sorted(ids)
        # without evaluate, nothing is filtered and no evaluator call is made
        fake_models.reset()
        fake_models.queue_extraction({"matches": [{"type": "topic", "text": "t"}]})
        plain = (await api.gql(ACTIVATE, lines=["t?"]))["activate"]
        order = [m["event"]["id"] for m in plain["memories"]]
        assert sorted(order) == sorted(ids) and len(fake_models.requests_to("chat")) == 1
        fake_models.reset()
        fake_models.queue_extraction({"matches": [{"type": "topic", "text": "t"}]})
        fake_models.queue_extraction({"passed": True})
        fake_models.queue_extraction({"passed": False})
        fake_models.queue_extraction({"passed": "yes"})  # not a boolean: a failure drops it
        got = (await api.gql(ACTIVATE, lines=["t?"], evaluate=True))["activate"]
        assert [m["event"]["id"] for m in got["memories"]] == order[:1]
        evaluator_calls = fake_models.requests_to("chat")[1:]
        assert len(evaluator_calls) == 3
        body = evaluator_calls[0].json["messages"][-1]["content"]
        assert "<slice_summary>" in body and "<new_inputs>" in body


# ---------------------------------------------------------------- persistence and the graph


async def test_topics_and_dates_survive_a_restart(tmp_path: Path) -> None:
    settings = offline_settings(tmp_path)
    async with running(settings) as api:
        a = await save(api, "a", topicPath="x->y", relatedTopics=["z"])
        b = await save(api, "b", topicPath="z")
        tree = (await api.gql(TOPICS))["topics"]
        recalled = (await api.gql(RECALL, p="x->y"))["recall"]
        day = today(api)
    async with running(settings) as api:
        assert (await api.gql(TOPICS))["topics"] == tree
        again = (await api.gql(RECALL, p="x->y"))["recall"]
        assert again == recalled
        assert [m["event"]["id"] for m in again["memories"]] == a["eventIds"] + b["eventIds"]
        dated = (await api.gql(BY_DATE, d=day))["recallByDate"]["memories"]
        assert [m["event"]["id"] for m in dated] == a["eventIds"] + b["eventIds"]


async def test_the_graph_snapshot_shows_topics_on_request(api: Api) -> None:
    (e1,) = (await save(api, "a", topicPath="x->y", relatedTopics=["z"]))["eventIds"]
    plain = (await api.gql("{ graph { nodes { label } relationships { type } } }"))["graph"]
    assert {n["label"] for n in plain["nodes"]} == {"Event"} and plain["relationships"] == []
    graph = (await api.gql(GRAPH))["graph"]
    topics = [n for n in graph["nodes"] if n["label"] == "Topic"]
    assert [(n["id"], n["name"]) for n in topics] == [
        ("topic:x", "x"),
        ("topic:x->y", "y"),
        ("topic:z", "z"),
    ]
    assert topics[1]["properties"] == {"path": "x->y", "name": "y", "parent": "x"}
    assert graph["nodes"][0]["label"] == "Event"  # topics come after the four labels
    rels = [(r["type"], r["source"], r["target"]) for r in graph["relationships"]]
    assert rels == [("BINDS", "topic:x->y", e1), ("SUBTOPIC", "topic:x", "topic:x->y")]
    assert graph["relationships"][0]["properties"]["related_paths"] == ["z"]


# ---------------------------------------------------------------- both stores, end to end


@pytest.fixture(params=sorted(STORE_FACTORIES))
def store_factory(request: pytest.FixtureRequest) -> StoreFactory:
    factory = STORE_FACTORIES[request.param]
    if reason := factory.skip_reason():
        pytest.skip(f"{request.param} store unavailable: {reason}")
    return factory


async def test_topics_end_to_end_on_every_store(
    tmp_path: Path, store_factory: StoreFactory
) -> None:
    space = f"t{uuid.uuid4().hex[:12]}"
    settings = offline_settings(tmp_path)
    ones = {"activationWeight": 1, "diffusionWeight": 1, "contextIndependenceWeight": 1}
    try:
        async with running(settings, store=store_factory.make(tmp_path / "m", space)) as api:
            main = await save(
                api,
                "the main note about mnemoql",
                topicPath="topic->main",
                relatedTopics=["topic-related"],
                activationProfile={
                    "activationWeight": 0.9,
                    "diffusionWeight": 0.1,
                    "contextIndependenceWeight": 0.9,
                },
            )
            rel = await save(api, "related", topicPath="topic-related", activationProfile=ones)
            par = await save(api, "parent", topicPath="topic", activationProfile=ones)
            ids = [x["eventIds"][0] for x in (main, rel, par)]
            recalled = (await api.gql(RECALL, p="topic->main"))["recall"]
            assert [m["event"]["id"] for m in recalled["memories"]] == ids
            assert [m["score"] for m in recalled["memories"]] == pytest.approx(
                [2.026, 1.95, 1.59], abs=1e-6
            )
            tree = (await api.gql(TOPICS))["topics"]
            day = today(api)
            graph = (await api.gql(GRAPH))["graph"]
            assert {r["type"] for r in graph["relationships"]} == {"BINDS", "SUBTOPIC"}
        async with running(settings, store=store_factory.make(tmp_path / "m", space)) as api:
            assert (await api.gql(TOPICS))["topics"] == tree
            assert (await api.gql(RECALL, p="topic->main"))["recall"] == recalled
            dated = (await api.gql(BY_DATE, d=day))["recallByDate"]["memories"]
            assert [m["event"]["id"] for m in dated] == ids
            got = await api.gql(ACTIVATE, lines=["any news on MNEMOQL or the main topic?"])
            assert [c["text"] for c in got["activate"]["cues"]][:1] == ["topic->main"]
            assert got["activate"]["memories"][0]["event"]["id"] == ids[0]
    finally:
        if store_factory.cleanup is not None:
            await store_factory.cleanup(tmp_path / "m", space)
