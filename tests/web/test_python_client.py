"""``mnemoql.Client`` and ``mnemoql.AsyncClient`` against a real ``mnemoql serve`` with tokens:
typed results, the token's space and scopes, sessions, and coded errors as exceptions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemoql import AsyncClient, Client, EvidencePage, SaveResult, TextRange
from mnemoql.errors import (
    ConceptNotOffered,
    CursorInvalid,
    Forbidden,
    MnemoError,
    NotFound,
    OutOfRange,
    ServerError,
    Unauthorized,
    Unreachable,
)
from tests.web.served import ALICE, ALICE_READ, BOB, TOKENS, Served, free_port, served

BERLIN = "Alice met Bob in Berlin to talk about Neo4j."
CHAPTER = [
    ("tale_ch1_e01", "Carol opened the shop at dawn and counted the coins."),
    ("tale_ch1_e02", "A stranger asked Carol about the old lighthouse keeper."),
    ("tale_ch1_e03", "Carol closed the shop early and walked to the lighthouse."),
    ("tale_ch1_e04", "The lighthouse keeper told Carol about the storm of 1952."),
    ("tale_ch1_e05", "Carol wrote the story down in her notebook."),
    ("tale_ch1_e06", "The stranger came back with a map of the coast."),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("client") / "data", tokens=TOKENS) as s:
        yield s


@pytest.fixture
def alice(server: Served) -> Iterator[Client]:
    with Client(server.url, token=ALICE, locale="en") as client:
        yield client


def test_save_search_read_forget_over_the_api(alice: Client) -> None:
    saved = alice.save(BERLIN, id="client_berlin", time="2026-03-01")
    assert isinstance(saved, SaveResult) and saved.event_ids == ("client_berlin",)
    assert saved.refs["e1"] == "client_berlin" and len(saved.created_persons) == 2

    page = alice.search("Who met in Berlin?", session="first-look")
    assert isinstance(page, EvidencePage) and page.session == "first-look"
    item = next(i for i in page.items if i.event_id == "client_berlin")
    assert item.quote is not None and BERLIN[item.quote.start : item.quote.end] == item.quote.text
    assert item.time == "2026-03-01" and "client_berlin" in page.text and page.cursor

    assert alice.read("client_berlin", start=6, limit=3) == TextRange(
        "client_berlin", "met", 6, 9, len(BERLIN), 9
    )
    assert "client_berlin" in alice.forget("client_berlin").deleted_ids
    with pytest.raises(NotFound) as caught:
        alice.read("client_berlin")
    assert caught.value.code == "NOT_FOUND" and caught.value.details.get("id") == "client_berlin"


def test_save_options_reach_the_server(alice: Client) -> None:
    first = alice.save(
        "Dana booked the train to Lyon for the conference.",
        topic_path="travel->lyon",
        related_topics=["work->conferences"],
        idempotency_key="dana-train",
    )
    assert first.topic_path == "travel->lyon" and first.topic_source == "client"
    again = alice.save("Dana booked the train to Lyon for the conference.",
                       idempotency_key="dana-train")  # fmt: skip
    assert again.replayed and again.event_ids == first.event_ids
    same = alice.save("Dana booked the train to Lyon for the conference.", dedupe_by_hash=True)
    assert same.replayed and same.event_ids == first.event_ids
    extraction = {
        "events": [{"ref": "e", "summary": "A booking", "concepts": ["c"]}],
        "concepts": [{"ref": "c", "name": "train tickets"}],
    }
    ready = alice.save("Dana paid for the tickets.", extraction=extraction, time="Friday")
    assert ready.refs["c"] == ready.created_concepts[0]


def test_a_token_picks_its_space_and_scopes(server: Served) -> None:
    with Client(server.url, token=ALICE) as alice, Client(server.url, token=BOB) as bob:
        saved = alice.save("Only Alice's space holds this note about tulips.")
        (event_id,) = saved.event_ids
        with pytest.raises(NotFound):
            bob.read(event_id)
        assert alice.read(event_id).text.startswith("Only Alice")
    with Client(server.url, token=ALICE_READ) as reader:
        assert reader.read(event_id).total > 0
        with pytest.raises(Forbidden) as forbidden:
            reader.save("a reader cannot write")
        assert forbidden.value.code == "FORBIDDEN"
    with Client(server.url) as nobody, pytest.raises(Unauthorized) as refused:
        nobody.search("tulips")
    assert refused.value.code == "UNAUTHENTICATED"
    stranger = Client(server.url, token="not-a-token-of-this-server")
    with stranger, pytest.raises(Unauthorized):
        stranger.read(event_id)


def test_a_session_gets_each_event_once(server: Served) -> None:
    with Client(server.url, token=BOB, session="bob-agent") as bob:
        bob.save("Bob planted tomatoes in the garden on Sunday.")
        first = bob.search("tomatoes garden")
        assert first.items and first.session == "bob-agent"
        again = bob.search("tomatoes garden")  # the same arguments: the same page (GraphQL)
        assert [i.event_id for i in again.items] == [i.event_id for i in first.items]
        more = bob.search("garden tomatoes Sunday")  # another search: nothing given twice
        assert not more.items and more.excluded_count >= 1
        other = bob.search("tomatoes garden", session="bob-other")
        assert [i.event_id for i in other.items] == [i.event_id for i in first.items]
        reset = bob.search("tomatoes garden", reset_seen=True)
        assert [i.event_id for i in reset.items] == [i.event_id for i in first.items]


def test_a_pages_cursor_brings_the_next_page_of_its_search(server: Served) -> None:
    with Client(server.url, token=BOB, session="bob-pages") as bob:
        for n in range(10):
            bob.save(f"Bob watered the quillwort bed, row {n}, before the storm.", id=f"row_{n}")
        first = bob.search("quillwort bed storm")
        assert len(first.items) == 4 and first.cursor
        second = bob.search(cursor=first)  # the page stands for its search and session
        third = bob.search(cursor=second.cursor)  # or its cursor token
        pages = [first, second, third]
        ids = [i.event_id for page in pages for i in page.items]
        assert len(ids) == len(set(ids)), ids  # nothing twice
        assert {f"row_{n}" for n in range(10)} <= set(ids)  # every row, over three pages
        assert {page.session for page in pages} == {"bob-pages"}
        with pytest.raises(CursorInvalid):
            bob.search(cursor="not-a-cursor")


def test_expand_and_nearby_continue_a_page(alice: Client) -> None:
    for event_id, text in CHAPTER:
        alice.save(text, id=event_id)
    page = alice.search("lighthouse keeper stranger", session="chain")
    delivered = {i.event_id for i in page.items}
    assert page.nearby_events and page.expand_concepts
    around = alice.nearby(page, page.nearby_events[0], before=10, after=10)
    assert around.operation == "nearby" and around.session == "chain"
    assert [i.event_id for i in around.items] == [e for e, _ in CHAPTER if e not in delivered]
    expanded = alice.expand(page, page.expand_concepts[0], limit=2)
    assert expanded.operation == "expand" and not {i.event_id for i in expanded.items} & delivered
    with pytest.raises(ConceptNotOffered):
        alice.expand(page, "concept_999")
    people = alice.search("Carol", target="Person")
    assert people.entity_hits[0].name == "Carol" and people.entity_hits[0].label == "Person"


@pytest.mark.parametrize(
    ("call", "kind", "code"),
    [
        (lambda c: c.read("x", limit=0), OutOfRange, "OUT_OF_RANGE"),
        (lambda c: c.expand("cur_nonsense", "concept_1"), CursorInvalid, "CURSOR_INVALID"),
        (lambda c: c.save(""), MnemoError, "BAD_USER_INPUT"),
        (lambda c: c.search("x", time_hint="the 45th of Smarch"), MnemoError, "TIME_HINT_INVALID"),
        (lambda c: c.graphql("{ nonsense }"), ServerError, "GRAPHQL_VALIDATION_FAILED"),
    ],
)
def test_coded_errors_are_exceptions(alice: Client, call: object, kind: type, code: str) -> None:
    with pytest.raises(kind) as caught:
        call(alice)  # type: ignore[operator]
    assert caught.value.code == code, caught.value
    assert caught.value.message


def test_any_other_operation_goes_through_graphql(alice: Client) -> None:
    data = alice.graphql("query($n: Int!) { events(first: $n) { totalCount } }", {"n": 1})
    assert data["events"]["totalCount"] >= 0


def test_a_server_that_is_not_there_is_unreachable(tmp_path: Path) -> None:
    client = Client(f"http://127.0.0.1:{free_port()}", timeout=5)
    with client, pytest.raises(Unreachable) as caught:
        client.search("anything")
    assert caught.value.code == "UNREACHABLE"


async def test_the_async_client_has_the_same_calls(server: Served) -> None:
    async with AsyncClient(server.url, token=BOB, session="async") as bob:
        saved = await bob.save("Bob repaired the bicycle with a new chain.", id="bike_fix")
        page = await bob.search("bicycle chain")
        assert "bike_fix" in [i.event_id for i in page.items] and page.session == "async"
        assert (await bob.read("bike_fix", limit=3)).text == "Bob"
        with pytest.raises(NotFound):
            await bob.read("never_saved")
        assert saved.event_ids == (await bob.forget("bike_fix")).deleted_ids[:1]
    async with AsyncClient(server.url) as nobody:
        with pytest.raises(Unauthorized):
            await nobody.read("bike_fix")
