"""Records saved one message at a time (issue #25): how search ranks them and how much of them a
page shows. Real memories over GraphQL (offline extractor, hashing embedder); the weights are the
defaults chosen on the message bench's tune half (docs/DECISIONS.md, "Records ranking")."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mnemoql.engine.retrieval.pipeline import SearchRequest
from mnemoql.engine.retrieval.quotes import SUMMARY_SHOWN, shown_summary
from mnemoql.engine.retrieval.speakers import asker_role, role_of
from tests.api.conftest import Api, offline_settings, running

SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds } }"
SEARCH = (
    "query($q: String, $s: String) { search(query: $q, session: $s) {"
    " items { eventId summary quote { text start end } } text(locale: EN) } }"
)

# The user's own turn answers; the assistant's reply repeats more of the question's words.
CHAT = [
    "User: I finally bought a used road bike from a neighbour last week.",
    "Assistant: You bought a used road bike? How much you pay for a used road bike depends on "
    "the frame, the chain and the tyres; before you pay for a used road bike, check them all.",
    "User: It cost me 250 dollars.",
]
FILLER = [
    f"User: The {thing} was on sale at the market this morning."
    for thing in ("bread", "coffee", "cheese", "honey", "tea", "jam", "rice", "soap")
]
QUESTION = "How much did I pay for the used road bike I bought?"


async def _seed(api: Api, chat: list[str], prefix: str = "talk") -> None:
    for i, text in enumerate(chat):
        await api.gql(SAVE, input={"content": text, "id": f"{prefix}_ch1_e{i}"})
    for i, text in enumerate(FILLER):
        await api.gql(SAVE, input={"content": text, "id": f"{prefix}_ch{i + 2}_e0"})


async def _ids(tmp_path: Path, chat: list[str], question: str, **retrieval: Any) -> list[str]:
    async with running(offline_settings(tmp_path, retrieval=retrieval)) as api:
        await _seed(api, chat)
        page = await api.gql(SEARCH, q=question, s="r")
    return [i["eventId"] for i in page["search"]["items"]]


async def test_a_first_person_question_ranks_the_askers_own_turn_first(tmp_path: Path) -> None:
    ids = await _ids(tmp_path / "on", CHAT, QUESTION)
    # the user's own words about the bike, ahead of the assistant's wordier reply
    assert ids[0] == "talk_ch1_e0"
    assert ids.index("talk_ch1_e0") < ids.index("talk_ch1_e1")


async def test_without_the_speaker_route_the_wordy_reply_comes_first(tmp_path: Path) -> None:
    ids = await _ids(tmp_path / "off", CHAT, QUESTION, records={"speaker_weight": 0.0})
    assert ids[0] == "talk_ch1_e1"


async def test_a_question_about_what_you_said_ranks_the_assistants_turn_first(
    tmp_path: Path,
) -> None:
    ids = await _ids(tmp_path, CHAT, "What did you suggest I check on a used road bike?")
    assert ids[0] == "talk_ch1_e1"


async def test_records_get_bm25_under_auto(tmp_path: Path) -> None:
    async with running(offline_settings(tmp_path)) as api:
        await _seed(api, CHAT)
        out = await api.app.state.memory.search(SearchRequest(query=QUESTION), "a")
    assert any(e.lexical_rank is not None for e in out.explain.values())


async def test_documents_keep_the_lexical_gate(tmp_path: Path) -> None:
    async with running(offline_settings(tmp_path)) as api:
        for i, text in enumerate([*CHAT, *FILLER]):
            await api.gql(SAVE, input={"content": text, "id": f"note-{i}"})
        out = await api.app.state.memory.search(SearchRequest(query=QUESTION), "d")
    assert out.page.items
    assert all(e.lexical_rank is None for e in out.explain.values())


async def test_a_first_page_of_messages_stays_within_a_thousand_characters(
    tmp_path: Path,
) -> None:
    long_reply = "Assistant: " + " ".join(
        f"Road bike tip {n}: check the used bike's part number {n} before you pay."
        for n in range(30)
    )
    async with running(offline_settings(tmp_path)) as api:
        await _seed(api, [*CHAT, long_reply])
        page = (await api.gql(SEARCH, q=QUESTION, s="c"))["search"]
    items = page["items"]
    assert len(items) == 4
    # what the page's text shows: each item's summary line (``summary`` itself stays whole)
    summaries = [
        ln[len("summary: ") :] for ln in page["text"].splitlines() if ln.startswith("summary: ")
    ]
    quotes = [(i["quote"] or {}).get("text", "") for i in items]
    assert sum(map(len, summaries)) + sum(map(len, quotes)) <= 1000
    for line in summaries:
        # a message's offline summary is its own leading words: never shown twice
        assert not any(line.rstrip("…") in q for q in quotes)
        assert len(line) <= SUMMARY_SHOWN
    assert any(i["summary"] for i in items)  # the field keeps the whole summary for clients


def test_shown_summary_keeps_a_written_summary_and_trims_an_excerpt() -> None:
    content = "User: I bought a bike. " + "It is red and fast. " * 20
    assert shown_summary("The user bought a bike", content, "I bought a bike") == (
        "The user bought a bike"
    )
    assert shown_summary("User: I bought a bike.", content, "User: I bought a bike. It") == ""
    long = content.strip()[:180]
    cut = shown_summary(long, content, "It is red")
    assert len(cut) == SUMMARY_SHOWN and cut.endswith("…") and content.startswith(cut[:-1])
    # parts folded by a caller id ("；") count as an excerpt only when every part is one
    assert shown_summary("User: I bought a bike.；It is red", content, None) == (
        "User: I bought a bike.；It is red"
    )
    assert shown_summary("User: I bought a bike.；A blue car", content, None) == (
        "User: I bought a bike.；A blue car"
    )


def test_speaker_roles() -> None:
    assert role_of("User: hello") == "user"
    assert role_of("Assistant: hi") == "assistant"
    assert role_of("用户：你好") == "user"
    assert role_of("Caroline: hi") is None
    assert role_of("no speaker line") is None
    assert asker_role("What did I buy at the thrift store?") == "user"
    assert asker_role("Can you remind me what sealant you recommended?") == "assistant"
    assert asker_role("I'm going back to our previous conversation about vases.") == "assistant"
    assert asker_role("When did Caroline go to the LGBTQ support group?") is None


# The answer carries none of the question's words; the turn before it (the assistant asking)
# carries them all. The others share none.
PICNIC = [
    "Assistant: Which park did you and Max pick for the picnic on Sunday?",
    "User: Riverside, by the old boathouse.",
    "Assistant: Lovely choice, enjoy the sunshine.",
]
ELSEWHERE = [
    f"User: {text}"
    for text in (
        "The weather was grey all week.",
        "My sister called about her new job.",
        "We went shopping for groceries.",
        "The vet says the cat is healthy.",
        "I finished the book about bridges.",
        "Work was busy again today.",
        "The train was late this morning.",
        "Dinner was pasta with tomatoes.",
    )
]


async def _picnic(tmp_path: Path, **retrieval: Any) -> list[dict[str, Any]]:
    async with running(offline_settings(tmp_path, retrieval=retrieval)) as api:
        for i, text in enumerate(PICNIC):
            await api.gql(SAVE, input={"content": text, "id": f"day_ch1_e{i}"})
        for i, text in enumerate(ELSEWHERE):
            await api.gql(SAVE, input={"content": text, "id": f"day_ch{i + 2}_e0"})
        page = await api.gql(SEARCH, q="Which park did I pick for the picnic with Max?", s="p")
    items: list[dict[str, Any]] = page["search"]["items"]
    return items


async def test_a_short_answer_is_found_through_the_turn_before_it(tmp_path: Path) -> None:
    items = await _picnic(tmp_path)
    answer = next(i for i in items if i["eventId"] == "day_ch1_e1")
    # delivered with its own words, not its neighbour's
    assert answer["quote"]["text"] == "User: Riverside, by the old boathouse."


async def test_without_the_window_route_the_short_answer_is_missed(tmp_path: Path) -> None:
    items = await _picnic(tmp_path, records={"window_weight": 0.0})
    assert "day_ch1_e1" not in [i["eventId"] for i in items]


def test_a_neighbour_share_lifts_the_turn_after_a_strong_one() -> None:
    from mnemoql.engine.retrieval.scoring import Scored, share_with_neighbours

    def sc(i: str, score: float) -> Scored:
        return Scored(i, None, None, score, 0.0, score)

    pool = [sc("t_ch1_e0", 0.05), sc("x_ch2_e0", 0.02), sc("t_ch1_e1", 0.01)]
    adjacent = {"t_ch1_e0": ["t_ch1_e1"], "t_ch1_e1": ["t_ch1_e0", "t_ch1_e2"]}
    lifted = share_with_neighbours(pool, 0.4, lambda i: adjacent.get(i, []))
    assert [s.id for s in lifted] == ["t_ch1_e0", "t_ch1_e1", "x_ch2_e0"]
    assert [s.id for s in share_with_neighbours(pool, 0.0, lambda i: adjacent.get(i, []))] == [
        "t_ch1_e0",
        "x_ch2_e0",
        "t_ch1_e1",
    ]


async def _weights_seen(tmp_path: Path, **retrieval: Any) -> list[bool]:
    """Whether each of three searches ranked as a follow-up: the question, the same question
    again (other words) in its session, then a question in a new session (a new question in a
    used session: tests/store/test_contract_followups.py)."""
    async with running(offline_settings(tmp_path, retrieval=retrieval)) as api:
        await _seed(api, CHAT)
        r = api.app.state.memory.retriever.ranker
        seen: list[bool] = []
        weights = r.record_weights

        def spy(followup: bool = False) -> Any:
            seen.append(followup)
            return weights(followup)

        r.record_weights = spy
        await api.gql(SEARCH, q=QUESTION, s="f")
        await api.gql(SEARCH, q=QUESTION + " Tell me again.", s="f")
        await api.gql(SEARCH, q="What was on sale at the market?", s="g")
    return seen


async def test_a_question_asked_again_ranks_as_a_follow_up_by_default(tmp_path: Path) -> None:
    # the follow-up weights differ from the first call's by default (docs/followups.md)
    assert await _weights_seen(tmp_path) == [False, True, False]


async def test_follow_ups_weighted_as_first_calls_rank_as_first_calls(tmp_path: Path) -> None:
    same = {"followup_window_weight": 1.0, "followup_neighbour_share": 0.0}
    assert await _weights_seen(tmp_path, records=same) == [False, False, False]


# A "when" question: the turn that states the day shares none of its words but "I".
WHEN_CHAT = [
    "User: I finally signed up for the pottery class I told you about, the pottery class at "
    "the community centre.",
    "Assistant: A pottery class is a lovely hobby; your first pottery class will be messy and fun.",
    "User: It was on March 3rd, and I loved it.",
]
SALES = [
    f"User: The {thing} was on sale at the market."
    for thing in ("bread", "coffee", "cheese", "honey", "tea", "jam", "rice", "soap")
]


async def _when_ids(tmp_path: Path, question: str, dated: float) -> list[str]:
    settings = offline_settings(tmp_path, retrieval={"records": {"dated_weight": dated}})
    async with running(settings) as api:
        for i, text in enumerate(WHEN_CHAT):
            await api.gql(SAVE, input={"content": text, "id": f"talk_ch1_e{i}"})
        for i, text in enumerate(SALES):
            await api.gql(SAVE, input={"content": text, "id": f"talk_ch{i + 2}_e0"})
        page = await api.gql(SEARCH, q=question, s="w")
    return [i["eventId"] for i in page["search"]["items"]]


WHEN_Q = "When did I go to my first pottery class?"


async def test_a_when_question_ranks_the_turn_that_states_the_day_first(tmp_path: Path) -> None:
    assert (await _when_ids(tmp_path, WHEN_Q, 2.0))[0] == "talk_ch1_e2"


async def test_without_the_dated_route_the_day_ranks_below_the_wordy_turns(
    tmp_path: Path,
) -> None:
    ids = await _when_ids(tmp_path, WHEN_Q, 0.0)
    assert ids.index("talk_ch1_e2") == 2


async def test_the_dated_route_leaves_other_questions_alone(tmp_path: Path) -> None:
    ids = await _when_ids(tmp_path, "What did I think of my first pottery class?", 2.0)
    assert ids.index("talk_ch1_e2") > 0


# The time route: the same kind of turn on two days; the question names one of them.
SATURDAY_TALK = "User: We went to the lake and had a picnic with my sister."
TUESDAY_TALK = "User: We went to the lake for a picnic with my sister and her dog, the lake picnic."


async def _time_ids(tmp_path: Path, question: str, weight: float) -> list[str]:
    settings = offline_settings(tmp_path, retrieval={"time_weight": weight})
    async with running(settings) as api:
        ingestor = api.app.state.memory.ingestor
        real = ingestor._now
        try:
            for day, i, text in ((18, 1, SATURDAY_TALK), (14, 2, TUESDAY_TALK)):
                at = datetime(2023, 3, day, 10, tzinfo=UTC)
                ingestor._now = lambda at=at: at
                await api.gql(SAVE, input={"content": text, "id": f"talk_ch{i}_e0"})
            for i, text in enumerate(SALES):
                await api.gql(SAVE, input={"content": text, "id": f"talk_ch{i + 3}_e0"})
            ingestor._now = lambda: datetime(2023, 3, 21, 10, tzinfo=UTC)
            page = await api.gql(SEARCH, q=question, s="t")
        finally:
            ingestor._now = real
    return [i["eventId"] for i in page["search"]["items"]]


TIME_Q = "Who did I have a picnic at the lake with last Saturday?"


async def test_a_question_naming_a_day_ranks_what_was_said_that_day_first(tmp_path: Path) -> None:
    assert (await _time_ids(tmp_path, TIME_Q, 2.0))[0] == "talk_ch1_e0"


async def test_without_the_time_route_the_wordier_day_ranks_first(tmp_path: Path) -> None:
    assert (await _time_ids(tmp_path, TIME_Q, 0.0))[0] == "talk_ch2_e0"


async def test_the_time_route_leaves_questions_without_a_time_alone(tmp_path: Path) -> None:
    no_time = "Who did I have a picnic at the lake with?"
    on, off = tmp_path / "on", tmp_path / "off"
    on.mkdir()
    off.mkdir()
    assert await _time_ids(on, no_time, 2.0) == await _time_ids(off, no_time, 0.0)
