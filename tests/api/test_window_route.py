"""The window route through GraphQL (issue #25): a short reply saved as its own message, with
none of the question's words, is found through the messages around it when the route is on,
and is still delivered with its own exact quote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.api.conftest import Api, offline_settings, running

SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds } }"
SEARCH = (
    "query($q: String, $s: String) { search(query: $q, session: $s) {"
    " items { eventId quote { text start end } } } }"
)
TALK = [
    "Assistant: What name did you finally choose for the new puppy you adopted?",
    "User: Biscuit!",
    "Assistant: Biscuit is a lovely name for a puppy; the adopted puppy will love it.",
]
OTHERS = [
    f"User: {thing} sounds like a good name."
    for thing in ("Maple", "Juniper", "Orion", "Pixel", "Clover", "Atlas", "Nova")
]
# the window route alone beside the vector routes: no BM25, no speaker route, no neighbour
# share (the records' other routes: tests/api/test_message_ranking.py)
TUNE_PICK: dict[str, Any] = {
    "window_span": 1,
    "records": {
        "window_weight": 2.0,
        "lexical_weight": 0.0,
        "speaker_weight": 0.0,
        "neighbour_share": 0.0,
    },
}
# records ranked as documents were before issue #25 (the page the nearby test starts from)
AS_DOCUMENTS: dict[str, Any] = {
    "records": {
        "window_weight": 0.0,
        "summary_weight": 1.0,
        "lexical_weight": 0.0,
        "coverage_weight": 0.1,
        "speaker_weight": 0.0,
        "neighbour_share": 0.0,
    },
}
QUESTION = "What name did I choose for the puppy I adopted?"


async def _seed(api: Api) -> None:
    for i, text in enumerate(TALK):
        await api.gql(SAVE, input={"content": text, "id": f"talk_ch1_e{i}"})
    for i, text in enumerate(OTHERS):
        await api.gql(SAVE, input={"content": text, "id": f"talk_ch{i + 2}_e0"})


async def _first_page(tmp_path: Path, **retrieval: Any) -> list[dict[str, Any]]:
    settings = offline_settings(tmp_path, retrieval=retrieval)
    async with running(settings) as api:
        await _seed(api)
        items: list[dict[str, Any]] = (await api.gql(SEARCH, q=QUESTION, s="w"))["search"]["items"]
    return items


async def test_a_short_reply_is_found_through_its_neighbours(tmp_path: Path) -> None:
    # coverage off on both sides: the hashing embedder counts words, as coverage does, so
    # only the routes differ between the two runs
    on = await _first_page(tmp_path / "on", coverage_weight=0.0, **TUNE_PICK)
    ids = [i["eventId"] for i in on]
    # right after the question it answers, ahead of the replies that share its words
    assert ids[:2] == ["talk_ch1_e0", "talk_ch1_e1"]
    # the reply itself is delivered, quoted from its own content
    assert on[1]["quote"]["text"] == "User: Biscuit!"


async def test_without_the_window_the_reply_ranks_below_the_wordy_ones(tmp_path: Path) -> None:
    off = await _first_page(
        tmp_path / "off",
        coverage_weight=0.0,
        **{**TUNE_PICK, "records": {**TUNE_PICK["records"], "window_weight": 0.0}},
    )
    ids = [i["eventId"] for i in off]
    assert ids[0] == "talk_ch1_e0" and "talk_ch1_e1" not in ids[:2]


NEARBY = (
    "query($c: String!, $id: ID!, $s: String) { nearby(cursor: $c, eventId: $id, before: 3,"
    " after: 3, session: $s) { items { eventId } } }"
)
FIRST = (
    "query($q: String, $s: String) { search(query: $q, session: $s) { cursor items { eventId } } }"
)
# turn 5 answers the question; the far turns 0, 1, 10, 11 share two of its words (the search
# delivers them); inside nearby(3, 3), turns 2 and 8 share one word, turns 3, 4, 6, 7 none
SESSION = [
    "User: Our adopted puppy loves the beach.",
    "User: Everyone called the puppy cute at the park.",
    "User: The puppy chewed my slippers again.",
    "User: The weather was grey all week.",
    "Assistant: Grey weeks happen; any plans for the weekend?",
    "User: The puppy I adopted is called Biscuit.",
    "User: Then we went shopping for groceries and paper towels.",
    "Assistant: Sounds like a busy day of errands.",
    "User: We adopted a new morning routine.",
    "User: My sister called about her new job in accounting.",
    "User: I adopted the habit of walking the puppy at dawn.",
    "User: The vet called: the puppy is healthy.",
]


async def _nearby_ids(tmp_path: Path, by_query: bool) -> list[str]:
    async with running(offline_settings(tmp_path, retrieval=AS_DOCUMENTS)) as api:
        for i, text in enumerate(SESSION):
            await api.gql(SAVE, input={"content": text, "id": f"day_ch1_e{i}"})
        api.app.state.memory.retriever.ranker.nearby_by_query = by_query
        page = (await api.gql(FIRST, q="What is the puppy I adopted called?", s="n"))["search"]
        assert page["items"][0]["eventId"] == "day_ch1_e5"
        out = await api.gql(NEARBY, c=page["cursor"], id="day_ch1_e5", s="n")
    return [
        i["eventId"]
        for i in out["nearby"]["items"]
        if i["eventId"] not in {x["eventId"] for x in page["items"]}
    ]


async def test_nearby_by_query_keeps_the_neighbours_nearest_the_question(tmp_path: Path) -> None:
    by_position = await _nearby_ids(tmp_path / "position", False)
    by_query = await _nearby_ids(tmp_path / "query", True)
    assert len(by_position) == len(by_query) == 4
    # the nearest four by position are the wordless turns 3, 4, 6, 7; by the question, the two
    # turns that share a word with it come in from the window's edges
    assert set(by_position) == {"day_ch1_e3", "day_ch1_e4", "day_ch1_e6", "day_ch1_e7"}
    assert {"day_ch1_e2", "day_ch1_e8"} <= set(by_query)
