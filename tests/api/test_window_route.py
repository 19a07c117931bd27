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
# the setting the tune half chose (off by default: docs/DECISIONS.md, "Window route")
TUNE_PICK: dict[str, Any] = {"window_span": 1, "window_weight": 2.0, "summary_weight": 0.25}
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
        items: list[dict[str, Any]] = (await api.gql(SEARCH, q=QUESTION, s="w"))["search"][
            "items"
        ]
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
        tmp_path / "off", coverage_weight=0.0, **{**TUNE_PICK, "window_weight": 0.0}
    )
    ids = [i["eventId"] for i in off]
    assert ids[0] == "talk_ch1_e0" and "talk_ch1_e1" not in ids[:2]
