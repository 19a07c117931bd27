"""Which topic a save is bound to (engine.binding): client > model > offline rule > date only,
and the entity-name candidates of offline activation (engine.topics.names)."""

from __future__ import annotations

from datetime import date
from typing import Any

from mnemoql.engine.binding import choose_topic, message_count, offline_topic
from mnemoql.engine.topics.names import name_candidates
from mnemoql.engine.topics.profile import f32
from mnemoql.prompts.extraction import Extraction, ProfileItem

TODAY = date(2026, 3, 1)


def extraction(topic: dict[str, Any] | None = None, **lists: Any) -> Extraction:
    data: dict[str, Any] = {"events": [{"ref": "e1", "summary": "s"}], **lists}
    if topic is not None:
        data["topic"] = topic
    return Extraction.model_validate(data)


def weights(choice: Any) -> tuple[float, float, float]:
    d = choice.draft
    return (d.activation, d.diffusion, d.context_independence)


def test_message_count_counts_speaker_lines() -> None:
    assert message_count("just a note") == 1
    assert message_count("Alice: hi\nBob: hello\n用户：你好\n  continued") == 3


def test_client_path_wins_and_its_profile_is_only_clamped() -> None:
    ex = extraction({"topicPath": "model->path"})
    choice = choose_topic(
        "Alice: hi",
        ex,
        [],
        TODAY,
        topic_path=" a [x] -> b ",
        related_topics=["r", "r", " "],
        profile=ProfileItem(activation_weight=1.5, diffusion_weight=-1),
    )
    assert choice is not None and choice.source == "client"
    assert (choice.draft.path, choice.draft.related) == ("a->b", ["r"])
    assert weights(choice) == (1.0, 0.0, 0.5)
    plain = choose_topic("x", ex, [], TODAY, topic_path="a")
    assert plain is not None and weights(plain) == (f32(0.55), f32(0.35), 0.5)


def test_model_topic_is_fixed_and_stabilised() -> None:
    ex = extraction(
        {
            "topicPath": "项目 [root] -> mnemoql",
            "activationProfile": {
                "activationWeight": 1.5,
                "diffusionWeight": 0.9,
                "contextIndependenceWeight": -0.2,
            },
        }
    )
    choice = choose_topic("one message", ex, [], TODAY)
    assert choice is not None and (choice.draft.path, choice.source) == ("项目->mnemoql", "model")
    assert weights(choice) == (f32(0.95), f32(0.45), 0.0)  # SPEC §2.3's clamp case
    # with related paths (the model's or the client's) diffusion is not capped
    two = choose_topic("A: x\nB: y", ex, [], TODAY, related_topics=["other"])
    assert two is not None and two.draft.related == ["other"]
    assert weights(two) == (1.0, f32(0.9), 0.0)
    # a client profile replaces the model's
    mine = choose_topic("x", ex, [], TODAY, profile=ProfileItem(activation_weight=0.3))
    assert mine is not None and weights(mine) == (f32(0.3), f32(0.35), 0.5)


def test_offline_rule_prefers_the_deepest_known_path_in_the_content() -> None:
    known = ["work", "work->graph db", "work->graph db->Neo4j", "Berlin"]
    neo4j = extraction(concepts=[{"ref": "c1", "name": "Neo4j"}])
    assert offline_topic("moving the NEO4J cluster", neo4j, known, TODAY) == (
        "work->graph db->Neo4j"
    )
    twice = "a graph db in berlin; the graph db stays"
    assert offline_topic(twice, extraction(), known, TODAY) == "work->graph db"
    # latin words must stand alone
    assert offline_topic("Berliner Weisse", extraction(), known, TODAY) == ""


def test_a_passing_mention_of_a_known_segment_is_not_the_topic() -> None:
    """A changelog entry that names Python once, about asyncio, does not go under Python."""
    known = ["Python"]
    asyncio = extraction(concepts=[{"ref": "c1", "name": "asyncio"}])
    text = "Fix a race in asyncio when Python shuts down the event loop."
    assert offline_topic(text, asyncio, known, TODAY) == "asyncio"
    # named as an entity of the save, or twice, it is
    python = extraction(concepts=[{"ref": "c1", "name": "Python"}])
    assert offline_topic(text, python, known, TODAY) == "Python"
    again = text + " Python 3.12 is not affected."
    assert offline_topic(again, asyncio, known, TODAY) == "Python"


def test_one_repeated_character_is_no_topic() -> None:
    ys = extraction(concepts=[{"ref": "c1", "name": "y" * 40}])
    assert offline_topic("y" * 1500, ys, [], TODAY) == ""
    assert choose_topic("y" * 1500, ys, ["y" * 40], TODAY) is None
    assert offline_topic("yyy yyy yyy", ys, [], TODAY) == ""  # one word, however often
    # a run of one character is no segment even in a longer text
    assert offline_topic("notes: " + "y" * 200, ys, [], TODAY) == ""


def test_offline_rule_builds_location_then_concept() -> None:
    ex = extraction(
        locations=[{"ref": "l1", "name": "Berlin"}, {"ref": "l2", "name": "Paris"}],
        concepts=[{"ref": "c1", "name": "a->b [x]"}, {"ref": "c2", "name": "Neo4j"}],
        events=[{"ref": "e1", "summary": "s", "locations": ["l2"], "concepts": ["c2"]}],
    )
    assert offline_topic("some text", ex, [], TODAY) == "Paris->Neo4j"
    only = extraction(concepts=[{"ref": "c1", "name": "a->b [x]"}])
    assert offline_topic("some text", only, [], TODAY) == "a-b"
    choice = choose_topic("some text", ex, [], TODAY)
    assert choice is not None and choice.source == "offline"
    assert weights(choice) == (f32(0.5), f32(0.35), 0.5)  # defaults, one message: -0.05


def test_nothing_found_means_a_date_only_record() -> None:
    assert choose_topic("hello", extraction({"topicPath": " [x] "}), ["zzz"], TODAY) is None
    assert choose_topic("hello", extraction(), [], TODAY, related_topics=["r"]) is None


def test_name_candidates_cover_words_runs_and_cjk_substrings() -> None:
    found = name_candidates("Did Lin Xiao, our CTO, meet 林晓在Berlin工作?")
    for name in ("lin xiao", "lin", "xiao", "cto", "林晓", "berlin", "工作"):
        assert name in found, name
    assert found.index("lin xiao") < found.index("lin") < found.index("xiao")
    assert all(len(c) >= 2 for c in found)
    assert name_candidates("   ") == []
