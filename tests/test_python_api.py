"""``mnemoql.Memory`` and ``mnemoql.SyncMemory``: the embedded memory in-process, on a temporary
data dir (and on the test Neo4j where one is configured), with the API's checks and codes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

import mnemoql
from mnemoql import (
    EvidencePage,
    InvalidInput,
    Memory,
    MnemoError,
    NotFound,
    SaveResult,
    SyncMemory,
    TextRange,
)
from mnemoql.engine.config import Settings, load_settings
from mnemoql.errors import ConceptNotOffered, CursorInvalid, ExtractionInvalid, OutOfRange
from tests.api.conftest import offline_settings, running
from tests.processes import Place, stores
from tests.store.factory_neo4j import target

BERLIN = "Alice met Bob in Berlin to talk about Neo4j."
HANGZHOU = "Bob: 我们在杭州讨论了图数据库。"
CHAPTER = [
    (f"book_ch1_e{n:02}", text)
    for n, text in enumerate(
        [
            "Carol opened the shop at dawn and counted the coins.",
            "A stranger asked Carol about the old lighthouse keeper.",
            "Carol closed the shop early and walked to the lighthouse.",
            "The lighthouse keeper told Carol about the storm of 1952.",
            "Carol wrote the story down in her notebook.",
            "The stranger came back with a map of the coast.",
            "Carol and the stranger followed the map to a cave.",
            "In the cave they found the keeper's lost logbook.",
        ],
        start=1,
    )
]


def settings_for(place: Place) -> Settings:
    groups: dict[str, Any] = {"embedding": {"provider": "hashing"}}
    if place.store == "neo4j":
        t = target()
        assert t is not None
        groups["neo4j"] = {"uri": t.uri, "user": t.user, "password": t.password}
    return load_settings({}, data_dir=place.data_dir, store=place.store, **groups)


@pytest.fixture(params=stores())
async def place(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Place]:
    p = Place(tmp_path / "data", request.param)
    yield p
    await asyncio.to_thread(p.drop)


@pytest.fixture
async def memory(place: Place) -> AsyncIterator[Memory]:
    async with Memory(settings=settings_for(place), space=place.space, locale="en") as m:
        yield m


async def test_save_search_read_and_forget_return_typed_results(memory: Memory) -> None:
    saved = await memory.save(BERLIN, id="met_berlin")
    assert isinstance(saved, SaveResult)
    assert saved.event_ids == ("met_berlin",) and not saved.replayed
    assert len(saved.created_persons) == 2 and saved.refs["e1"] == "met_berlin"

    page = await memory.search("Who met in Berlin?")
    assert isinstance(page, EvidencePage) and page.operation == "search"
    (item,) = page.items
    assert item.event_id == "met_berlin" and item.quote is not None
    assert BERLIN[item.quote.start : item.quote.end] == item.quote.text  # exact, verbatim
    assert page.cursor and "met_berlin" in page.text and page.session == "default"

    text = await memory.read("met_berlin", start=10, limit=7)
    assert text == TextRange("met_berlin", BERLIN[10:17], 10, 17, len(BERLIN), 17)

    forgotten = await memory.forget("met_berlin")
    assert "met_berlin" in forgotten.deleted_ids
    with pytest.raises(NotFound) as caught:
        await memory.read("met_berlin")
    assert caught.value.code == "NOT_FOUND"


async def test_sessions_deliver_each_event_once(memory: Memory) -> None:
    await memory.save(BERLIN)
    await memory.save(HANGZHOU)
    first = await memory.search("Bob", session="s1")
    again = await memory.search("Bob", session="s1")
    assert first.items and not again.items and again.excluded_count == len(first.items)
    other = await memory.search("Bob", session="s2")
    assert [i.event_id for i in other.items] == [i.event_id for i in first.items]
    reset = await memory.search("Bob", session="s1", reset_seen=True)
    assert [i.event_id for i in reset.items] == [i.event_id for i in first.items]


async def test_a_pages_cursor_brings_the_next_page_of_its_search(memory: Memory) -> None:
    for event_id, text in CHAPTER:
        await memory.save(text, id=event_id)
    first = await memory.search("Carol lighthouse shop stranger", session="pages")
    second = await memory.search(cursor=first)
    assert len(first.items) == 4 and second.session == "pages"
    ids = [i.event_id for i in first.items + second.items]
    assert sorted(ids) == sorted(e for e, _ in CHAPTER)  # the rest, none twice


async def test_expand_and_nearby_follow_a_page(memory: Memory) -> None:
    for event_id, text in CHAPTER:
        await memory.save(text, id=event_id)
    page = await memory.search("lighthouse keeper stranger", session="chain")
    delivered = {i.event_id for i in page.items}
    assert len(delivered) == 4 and page.nearby_events and page.expand_concepts
    around = await memory.nearby(page, page.nearby_events[0], before=10, after=10)
    assert around.operation == "nearby" and around.session == "chain"
    # the records around it that this session has not seen, in record order
    assert [i.event_id for i in around.items] == [e for e, _ in CHAPTER if e not in delivered]
    concept = page.expand_concepts[0]
    expanded = await memory.expand(page.cursor or "", concept, limit=2, session="chain")
    assert expanded.operation == "expand" and expanded.session == "chain"
    assert not {i.event_id for i in expanded.items} & delivered
    with pytest.raises(ConceptNotOffered):
        await memory.expand(page, "concept_999")


async def test_a_replayed_save_writes_nothing_new(memory: Memory) -> None:
    first = await memory.save(BERLIN, idempotency_key="k-1")
    again = await memory.save(BERLIN, idempotency_key="k-1")
    assert again.replayed and again.event_ids == first.event_ids
    lines = [json.loads(line) async for line in memory.export()]
    assert lines[0]["kind"] == "header"
    assert sum(1 for r in lines if r.get("kind") == "node" and r.get("label") == "Event") == 1


async def test_a_ready_extraction_is_checked_as_the_api_checks_it(memory: Memory) -> None:
    extraction = {
        "events": [{"ref": "e", "summary": "A talk", "concepts": ["c"]}],
        "concepts": [{"ref": "c", "name": "graph databases"}],
    }
    saved = await memory.save(BERLIN, extraction=extraction)
    assert saved.created_concepts and saved.refs["c"] == saved.created_concepts[0]
    with pytest.raises(ExtractionInvalid) as caught:
        await memory.save(BERLIN, extraction={"events": [{"ref": "e", "persons": []}]})
    assert caught.value.code == "EXTRACTION_INVALID"


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda m: m.save(""), "BAD_USER_INPUT"),
        (lambda m: m.save(123), "BAD_USER_INPUT"),
        (lambda m: m.save("x\ud800y"), "INVALID_TEXT"),
        (lambda m: m.read("nope"), "NOT_FOUND"),
        (lambda m: m.read("nope", limit=0), "OUT_OF_RANGE"),
        (lambda m: m.expand("cur_nonsense", "concept_1"), "CURSOR_INVALID"),
        (lambda m: m.search("x", time_hint="the 45th of Smarch"), "TIME_HINT_INVALID"),
        (lambda m: m.search("x" * 2001), "LIMIT_EXCEEDED"),
        (lambda m: m.search("Bob", target="Person", reset_seen=False), None),
    ],
)
async def test_mistakes_raise_the_api_codes(memory: Memory, call: Any, code: str | None) -> None:
    if code is None:
        page = await call(memory)
        assert page.target == "Person" and page.cursor is None
        return
    with pytest.raises(MnemoError) as caught:
        await call(memory)
    assert caught.value.code == code, caught.value


async def test_the_codes_are_the_graphql_apis(tmp_path: Path) -> None:
    """The same mistakes against the GraphQL API and against Memory: the same codes."""
    cases = [
        ('mutation { save(input: {content: ""}) { eventIds } }', lambda m: m.save("")),
        ('{ read(eventId: "nope") { text } }', lambda m: m.read("nope")),
        ('{ read(eventId: "nope", limit: 0) { text } }', lambda m: m.read("nope", limit=0)),
        (
            '{ expand(cursor: "cur_x", conceptId: "concept_1") { cursor } }',
            lambda m: m.expand("cur_x", "concept_1"),
        ),
        (
            '{ search(query: "x", timeHint: "the 45th of Smarch") { cursor } }',
            lambda m: m.search("x", time_hint="the 45th of Smarch"),
        ),
        ('{ search(target: PERSON) { cursor } }', lambda m: m.search(target="Person")),
    ]
    settings = offline_settings(tmp_path / "data")
    async with running(settings) as api:
        api_codes = [(await api.error(q))["extensions"]["code"] for q, _ in cases]
    ours = []
    async with Memory(settings=settings) as memory:
        for _, call in cases:
            with pytest.raises(MnemoError) as caught:
                await call(memory)
            ours.append(caught.value.code)
    assert ours == api_codes
    assert len(set(ours)) >= 5  # the cases reach different checks


async def test_a_follow_up_keeps_the_session_of_its_page(place: Place) -> None:
    settings = settings_for(place)
    async with Memory(settings=settings, space=place.space, session="mine") as memory:
        for event_id, text in CHAPTER:
            await memory.save(text, id=event_id)
        page = await memory.search("lighthouse keeper stranger", session="theirs")
        assert page.session == "theirs"
        around = await memory.nearby(page, page.nearby_events[0])
        assert around.session == "theirs"  # the page's, not the memory's default
        by_token = await memory.nearby(page.cursor or "", page.nearby_events[0], session="theirs")
        assert by_token.session == "theirs"
        with pytest.raises(MnemoError) as caught:  # a bare cursor takes the default: "mine"
            await memory.nearby(page.cursor or "", page.nearby_events[0])
        assert caught.value.code == "CURSOR_SESSION"


async def test_expand_on_a_page_without_cursor_is_refused(memory: Memory) -> None:
    empty = await memory.search("nothing saved yet")
    assert empty.cursor is None
    with pytest.raises(CursorInvalid):
        await memory.expand(empty, "concept_1")


async def test_spaces_are_separate_memories(tmp_path: Path) -> None:
    settings = offline_settings(tmp_path / "data")
    async with Memory(settings=settings, space="work") as work:
        await work.save(BERLIN, id="work_1")
    async with Memory(settings=settings, space="home") as home:
        with pytest.raises(NotFound):
            await home.read("work_1")
    async with Memory(settings=settings, space="work") as work:
        assert (await work.read("work_1")).text == BERLIN  # kept across open and close
    with pytest.raises(InvalidInput):
        async with Memory(settings=settings, space="no spaces/allowed"):
            pass


async def test_data_dir_and_overrides_open_the_store_there(tmp_path: Path) -> None:
    async with Memory(tmp_path / "mine", embedding={"provider": "hashing"}) as memory:
        assert memory.settings.data_dir == tmp_path / "mine"
        await memory.save(BERLIN)
    assert list((tmp_path / "mine").glob("memory*.db"))
    with pytest.raises(TypeError):
        Memory(tmp_path, settings=offline_settings(tmp_path))


async def test_a_memory_that_is_not_open_says_so(tmp_path: Path) -> None:
    memory = Memory(settings=offline_settings(tmp_path))
    with pytest.raises(RuntimeError, match="not open"):
        await memory.search("x")
    await memory.open()
    await memory.close()
    with pytest.raises(RuntimeError, match="not open"):
        await memory.read("x")


@pytest.fixture
def sync_memory(tmp_path: Path) -> Iterator[SyncMemory]:
    with SyncMemory(settings=offline_settings(tmp_path / "data"), locale="en") as m:
        yield m


def test_sync_memory_has_the_same_calls(sync_memory: SyncMemory) -> None:
    saved = sync_memory.save(BERLIN, id="met_berlin")
    page = sync_memory.search("Berlin")
    assert [i.event_id for i in page.items] == list(saved.event_ids)
    assert sync_memory.read("met_berlin", limit=5).text == BERLIN[:5]
    lines = list(sync_memory.export())
    assert json.loads(lines[0])["kind"] == "header" and len(lines) > 3
    with pytest.raises(OutOfRange):
        sync_memory.read("met_berlin", limit=0)
    assert sync_memory.forget("met_berlin").deleted_ids[0] == "met_berlin"


async def test_sync_memory_works_where_a_loop_already_runs(tmp_path: Path) -> None:
    """A notebook runs its own event loop: the sync wrapper must not need this thread's."""
    with SyncMemory(settings=offline_settings(tmp_path)) as memory:
        assert memory.save(HANGZHOU).event_ids
        assert memory.search("杭州").items


def test_a_closed_sync_memory_refuses_calls(tmp_path: Path) -> None:
    memory = SyncMemory(settings=offline_settings(tmp_path)).open()
    memory.close()
    with pytest.raises(RuntimeError, match="not open"):
        memory.search("x")


def test_import_mnemoql_loads_no_engine() -> None:
    code = (
        "import sys, mnemoql; "
        "print(sorted(m for m in ('numpy', 'httpx', 'strawberry', 'mnemoql.engine.memory') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
    assert mnemoql.Memory is Memory and mnemoql.SyncMemory is SyncMemory
