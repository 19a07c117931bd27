"""GraphQL guards: depth, token, alias and page limits, the body limit, time limits, masked
internal errors, a store that goes away and comes back, and model providers failing at every
step of save and revectorize (bounded retries, a clear error, nothing written)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from mnemoql.engine.providers.base import EmbedKind
from mnemoql.engine.providers.hashing import HashingEmbedder
from mnemoql.engine.providers.openai import OpenAIEmbedder
from mnemoql.engine.spaces import Spaces
from tests.api.conftest import Api, fake_model_settings, offline_settings, running
from tests.api.test_auth import Caller, token_settings
from tests.api.test_save import COUNTS, EXTRACTION, SAVE, TEXT
from tests.fake_model_server import FakeModelServer

EMPTY = {"events": 0, "persons": 0, "concepts": 0, "locations": 0, "chunks": 0, "relationships": 0}


async def counts(api: Api) -> dict[str, int]:
    result: dict[str, int] = (await api.gql(COUNTS))["memoryIndex"]["counts"]
    return result


class StubEmbedder(HashingEmbedder):
    """The hashing embedder, optionally slow or broken (an unexpected exception)."""

    def __init__(self) -> None:
        super().__init__()
        self.delay_s = 0.0
        self.broken = False

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Any:
        if self.broken:
            raise RuntimeError("embedder exploded: internal-detail-7f3a")
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return await super().embed(texts, kind)


# ---------------------------------------------------------------- query shape limits


async def test_depth_token_and_alias_limits_refuse_before_running(api: Api) -> None:
    deep = (
        "{ events { edges { node { " + "participants { edges { node { events { edges { node { " * 3
    )
    deep += "id" + " } } } } } }" * 3 + " } } } }"
    err = await api.error(deep)
    assert "exceeds maximum operation depth" in err["message"]
    aliases = "{ " + " ".join(f"a{i}: memoryIndex {{ model }}" for i in range(31)) + " }"
    err = await api.error(aliases)
    assert "aliases" in err["message"].lower()
    assert err["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    tokens = "{ memoryIndex { " + "model " * 6000 + "} }"
    err = await api.error(tokens)
    assert "tokens" in err["message"].lower()
    # the parser stops at the token limit: the document was never parsed
    assert err["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"


@pytest.mark.parametrize(
    "query",
    [
        "{ events(first: 101) { totalCount } }",
        "{ persons(first: -1) { totalCount } }",
        "{ events { edges { node { participants(first: 101) { edges { role } } } } } }",
        "{ graph(maxNodes: 5001) { truncatedNodes } }",
        "{ graph(maxRelationships: 30001) { truncatedNodes } }",
        '{ neighbourhood(id: "event_1", first: 5001) { truncatedNodes } }',
        '{ read(eventId: "event_1", limit: 10001) { text } }',
    ],
)
async def test_every_page_size_is_bounded(api: Api, query: str) -> None:
    await api.gql(SAVE, input={"content": TEXT, "extraction": EXTRACTION})
    err = await api.error(query)
    assert err["extensions"]["code"] == "OUT_OF_RANGE", err


async def test_save_many_is_bounded(tmp_path: Path) -> None:
    async with running(offline_settings(tmp_path, limits={"max_save_many": 3})) as api:
        err = await api.error(
            "mutation($i: [SaveInput!]!) { saveMany(inputs: $i) { saved } }",
            i=[{"content": f"note {n}"} for n in range(4)],
        )
        assert err["extensions"]["code"] == "OUT_OF_RANGE"
        assert await counts(api) == EMPTY


# ---------------------------------------------------------------- body size


async def test_a_body_over_the_limit_is_a_413(tmp_path: Path) -> None:
    async with running(offline_settings(tmp_path, limits={"max_body_bytes": 4096})) as api:
        big = {"query": SAVE, "variables": {"input": {"content": "x" * 5000}}}
        r = await api.client.post("/graphql", json=big)
        assert r.status_code == 413
        assert r.json()["errors"][0]["extensions"]["code"] == "PAYLOAD_TOO_LARGE"

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it streams
            yield b'{"query": "{ memoryIndex { model } }", "pad": "'
            for _ in range(10):
                yield b"y" * 1000
            yield b'"}'

        r = await api.client.post(
            "/graphql", content=chunks(), headers={"content-type": "application/json"}
        )
        assert r.status_code == 413
        assert await counts(api) == EMPTY
        small = await api.gql(SAVE, input={"content": "x" * 1000})
        assert small["save"]["eventIds"]


# ---------------------------------------------------------------- time limits


async def test_a_slow_query_times_out_and_a_mutation_gets_longer(tmp_path: Path) -> None:
    slow = StubEmbedder()
    settings = offline_settings(
        tmp_path, limits={"query_timeout_s": 0.2, "mutation_timeout_s": 3.0}
    )
    async with running(settings, embedder=slow) as api:
        slow.delay_s = 0.5
        saved = await api.gql(SAVE, input={"content": TEXT})  # 0.5 s > 0.2 s: mutations get 3 s
        assert saved["save"]["eventIds"]
        body = await api.post('{ search(query: "Berlin") { cursor } }')
        assert body["data"] is None
        err = body["errors"][0]
        assert err["extensions"]["code"] == "TIMEOUT" and "0.2 s" in err["message"]
        slow.delay_s = 0.0
        assert (await api.gql('{ search(query: "Berlin") { cursor } }'))["search"]["cursor"]


async def test_a_save_that_times_out_writes_nothing(tmp_path: Path) -> None:
    slow = StubEmbedder()
    settings = offline_settings(tmp_path, limits={"mutation_timeout_s": 0.2})
    async with running(settings, embedder=slow) as api:
        slow.delay_s = 1.0
        err = await api.error(SAVE, input={"content": TEXT, "idempotencyKey": "k1"})
        assert err["extensions"]["code"] == "TIMEOUT"
        slow.delay_s = 0.0
        assert await counts(api) == EMPTY
        # retrying with the same key saves once
        first = await api.gql(SAVE, input={"content": TEXT, "idempotencyKey": "k1"})
        again = await api.gql(SAVE, input={"content": TEXT, "idempotencyKey": "k1"})
        assert again["save"]["replayed"] and again["save"]["eventIds"] == first["save"]["eventIds"]


# ---------------------------------------------------------------- unexpected errors


async def test_an_unexpected_exception_is_masked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken = StubEmbedder()
    async with running(offline_settings(tmp_path), embedder=broken) as api:
        broken.broken = True
        for query, variables in (
            ('{ search(query: "Berlin") { cursor } }', {}),
            (SAVE, {"input": {"content": TEXT}}),
        ):
            body = await api.post(query, variables)
            err = body["errors"][0]
            assert err["message"] == "Internal server error"
            assert err["extensions"] == {"code": "INTERNAL_SERVER_ERROR"}
            assert "internal-detail" not in str(body) and "Traceback" not in str(body)
        broken.broken = False
        assert await counts(api) == EMPTY
    assert "internal-detail-7f3a" in caplog.text  # the operator still sees what happened


# ---------------------------------------------------------------- the store going away


def _block(path: Path) -> Path:
    """Move a data directory away and put a plain file in its place: nothing can open there."""
    hidden = path.with_name(path.name + ".away")
    path.rename(hidden)
    path.write_text("not a directory", encoding="utf-8")
    return hidden


def _unblock(path: Path, hidden: Path) -> None:
    path.unlink()
    hidden.rename(path)


async def test_a_store_that_goes_away_is_reported_and_recovers(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with running(token_settings(data)) as api:
        alice = Caller(api, "both-token-0123456789abcdef")
        bob = Caller(api, "other-space-token-0123456789")
        await alice.gql(SAVE, input={"content": TEXT, "extraction": EXTRACTION})
        spaces: Spaces = api.app.state.spaces
        spaces.revive_every_s = 0.0  # retry at once instead of once a second
        memory = await spaces.get("alice")
        await memory.store.close()  # the database went away ...
        hidden = _block(data)  # ... and cannot be reopened

        for query in (
            COUNTS,
            "{ events { totalCount } }",
            '{ search(query: "Berlin") { cursor } }',
        ):
            assert await alice.code(query) == "STORE_UNAVAILABLE", query
        assert await alice.code(SAVE, input={"content": "while down"}) == "STORE_UNAVAILABLE"
        # a space opened for the first time while the disk is gone fails the same way
        body = await bob.body(COUNTS)
        assert body["errors"][0]["extensions"]["code"] == "STORE_UNAVAILABLE"
        ready = await api.client.get("/readyz")
        assert ready.status_code == 503 and ready.json() == {"status": "unavailable"}
        assert (await api.client.get("/healthz")).status_code == 200

        _unblock(data, hidden)  # it is back
        ready = await api.client.get("/readyz")
        assert ready.status_code == 200 and ready.json() == {"status": "ready"}
        assert (await alice.gql(COUNTS))["memoryIndex"]["counts"]["events"] == 1
        assert (await bob.gql(COUNTS))["memoryIndex"]["counts"]["events"] == 0
        saved = await alice.gql(SAVE, input={"content": "after the outage"})
        assert saved["save"]["eventIds"] == ["event_2"]


async def test_requests_alone_revive_a_store(tmp_path: Path) -> None:
    async with running(offline_settings(tmp_path)) as api:
        await api.gql(SAVE, input={"content": TEXT})
        api.app.state.spaces.revive_every_s = 0.0
        await api.app.state.memory.store.close()
        assert (await api.error(COUNTS))["extensions"]["code"] == "STORE_UNAVAILABLE"
        # no /readyz call: the next request of the space reopens the store
        assert (await counts(api))["events"] == 1


async def test_a_store_that_cannot_open_at_start_up_stops_the_app(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    from mnemoql.engine.errors import StoreUnavailable
    from mnemoql.engine.store.embedded import EmbeddedStore

    store = EmbeddedStore(blocker / "memory.db")
    with pytest.raises(StoreUnavailable):
        async with running(offline_settings(tmp_path), store=store):
            pass


# ---------------------------------------------------------------- model faults


def judged_settings(tmp_path: Path, fake: FakeModelServer) -> Any:
    return fake_model_settings(
        tmp_path,
        fake.url,
        alignment={
            "enabled": True,
            "url": fake.judge_url,
            "api_key": "sk-judge-SECRET",
            "timeout_s": 0.5,
        },
    )


def _concept(name: str) -> dict[str, Any]:
    return {
        "events": [{"ref": "e", "summary": f"about {name}", "concepts": ["c"]}],
        "concepts": [{"ref": "c", "name": name}],
    }


@pytest.mark.parametrize("mode", ["http_500", "http_429", "timeout", "malformed_json"])
async def test_a_failing_judge_is_retried_a_bounded_number_of_times_then_means_not_the_same(
    tmp_path: Path, fake_models: FakeModelServer, mode: str
) -> None:
    async with running(judged_settings(tmp_path, fake_models)) as api:
        await api.gql(SAVE, input={"content": "one", "extraction": _concept("graph database")})
        fake_models.set_judge("the graph database", "graph database", 0.99)
        fake_models.fail("judge", mode, times=50)  # type: ignore[arg-type]
        before = len(fake_models.requests_to("judge"))
        saved = (
            await api.gql(
                SAVE, input={"content": "two", "extraction": _concept("the graph database")}
            )
        )["save"]
        assert saved["createdConcepts"] == ["concept_2"] and saved["merged"] == []
        calls = len(fake_models.requests_to("judge")) - before
        # one candidate pair; the default judge retries once on a transient failure
        transient = mode != "malformed_json"
        assert calls == (2 if transient else 1), calls
        assert (await counts(api))["concepts"] == 2


@pytest.mark.parametrize(
    ("endpoint", "mode", "code"),
    [
        ("chat", "http_429", "UPSTREAM_FAILED"),
        ("embeddings", "http_429", "UPSTREAM_FAILED"),
        ("embeddings", "malformed_json", "UPSTREAM_FAILED"),
        ("chat", "http_401", "UPSTREAM_FAILED"),
    ],
)
async def test_more_save_faults_write_nothing(
    tmp_path: Path, fake_models: FakeModelServer, endpoint: str, mode: str, code: str
) -> None:
    async with running(fake_model_settings(tmp_path, fake_models.url)) as api:
        fake_models.fail(endpoint, mode, times=50)  # type: ignore[arg-type]
        body = await api.post(SAVE, {"input": {"content": TEXT}})
        err = body["errors"][0]
        assert err["extensions"]["code"] == code, err
        assert "SECRET" not in str(body)
        calls = len(fake_models.requests_to(endpoint))
        retried = mode in {"http_429"}
        # retries: 1 in these settings, so a transient fault is tried twice, a permanent once
        if endpoint == "chat":
            assert calls == (2 if retried else 1)
        else:
            assert 1 <= calls <= 2 * 4  # at most EMBED_CONCURRENCY batches in flight, each x2
        assert await counts(api) == EMPTY


async def test_garbage_extraction_text_writes_nothing(
    tmp_path: Path, fake_models: FakeModelServer
) -> None:
    async with running(fake_model_settings(tmp_path, fake_models.url)) as api:
        for garbage in ("", "I cannot help with that.", "[1, 2, 3]", '{"events": "none"}'):
            fake_models.queue_extraction(garbage)
            err = await api.error(SAVE, input={"content": TEXT})
            assert err["extensions"]["code"] == "EXTRACTION_INVALID", (garbage, err)
        assert await counts(api) == EMPTY


async def test_a_transient_429_is_retried_and_the_save_lands(
    tmp_path: Path, fake_models: FakeModelServer
) -> None:
    async with running(fake_model_settings(tmp_path, fake_models.url)) as api:
        fake_models.fail("chat", "http_429", times=1)
        fake_models.fail("embeddings", "http_429", times=1)
        assert (await api.gql(SAVE, input={"content": TEXT}))["save"]["eventIds"]
        assert len(fake_models.requests_to("chat")) == 2


async def test_retry_after_is_honoured_and_capped() -> None:
    waits: list[float] = []
    answers = iter([("429", "3"), ("503", "120"), ("200", None)])

    def handler(request: httpx.Request) -> httpx.Response:
        status, retry_after = next(answers)
        if status != "200":
            return httpx.Response(int(status), headers={"Retry-After": retry_after or ""})
        body = {"data": [{"index": 0, "embedding": [1.0, 0.0, 0.0, 0.0]}]}
        return httpx.Response(200, json=body)

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    from pydantic import SecretStr

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        embedder = OpenAIEmbedder(
            client, "http://models.test/v1", "m", 4, SecretStr("sk-x"), retries=2, sleep=sleep
        )
        vectors = await embedder.embed(["hello"])
    assert vectors.shape == (1, 4)
    assert waits == [3.0, 16.0]  # the server's hint, then the hint capped at BACKOFF_MAX_S


REVEC = "mutation { revectorize { events chunks } }"


@pytest.mark.parametrize(
    "mode", ["http_500", "http_429", "timeout", "malformed_json", "wrong_dimensions"]
)
async def test_revectorize_faults_change_nothing(
    tmp_path: Path, fake_models: FakeModelServer, mode: str
) -> None:
    # a client timeout well below the fake server's 2 s "timeout" stall
    settings = fake_model_settings(tmp_path, fake_models.url, embedding={"timeout_s": 0.5})
    async with running(settings) as api:
        for n in range(12):  # enough distinct texts for several embedding batches
            ex = {**EXTRACTION, "events": [{**EXTRACTION["events"][0], "summary": f"move {n}"}]}
            await api.gql(SAVE, input={"content": f"{TEXT} ({n})", "extraction": ex})
        page = await api.gql('{ search(query: "Berlin", session: "r") { items { eventId } } }')
        fake_models.reset()
        fake_models.fail_after("embeddings", mode, skip=1, times=50)  # type: ignore[arg-type]
        err = await api.error(REVEC)
        assert err["extensions"]["code"] == "REVECTORIZE_FAILED", err
        assert len(fake_models.requests_to("embeddings")) > 1  # it failed after a good batch
        fake_models.reset()
        assert (await counts(api))["events"] == 12
        again = await api.gql('{ search(query: "Berlin", session: "r2") { items { eventId } } }')
        assert again == page
        assert (await api.gql(REVEC))["revectorize"]["events"] == 12  # and it works afterwards


async def test_a_large_body_is_parsed_with_the_collector_paused_and_resumed(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc
    import json

    from mnemoql.web import guards

    seen: list[bool] = []
    real_loads = json.loads  # strawberry parses with the json module too

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return real_loads(*args, **kwargs)

    monkeypatch.setattr("json.loads", spy)
    padding = "x" * (guards.GC_FREE_PARSE_BYTES + 10)
    query = "query($p: String) { memoryIndex { counts { events } } }"
    for body in (
        f'{{"query": "{query}", "variables": {{"p": "{padding}"}}}}',  # large: paused
        f'{{"query": "{query}"}}',  # small: left alone
        f'{{"query": "{query}", "variables": {{"p": "{padding}"',  # large and broken
    ):
        r = await api.client.post("/graphql", content=body,
                                  headers={"content-type": "application/json"})  # fmt: skip
        assert r.status_code in (200, 400), r.text
        assert gc.isenabled()  # resumed, also after a parse error
    assert seen[:3] == [False, True, False], seen


async def test_large_bodies_take_turns_and_small_ones_never_wait() -> None:
    """guards.ParseBudget: a large body books its parse time / share of wall time; the next
    large one waits for it, a small one does not."""
    from mnemoql.web.guards import ParseBudget

    budget = ParseBudget(share=0.25, min_bytes=1000)
    loop = asyncio.get_running_loop()
    await budget.turn(5000)
    budget.spent(5000, 0.05)  # books 0.2 s
    start = loop.time()
    await budget.turn(10)  # small: at once
    assert budget.waited == 0
    await budget.turn(5000)  # large: after the booking
    assert budget.waited >= 1
    assert loop.time() - start >= 0.15  # waited (a lower bound only, never an upper one)


async def test_a_large_body_still_answers_through_the_budget(api: Api) -> None:
    padding = "x" * (1024 * 1024 + 10)
    query = "query($p: String) { events(first: 1, where: {summary: {eq: $p}}) { totalCount } }"
    for _ in range(2):
        r = await api.client.post("/graphql", json={"query": query, "variables": {"p": padding}})
        assert r.status_code == 200, r.text
        assert r.json()["data"]["events"]["totalCount"] == 0, r.text


# ---------------------------------------------------------------- hosts, origins, fair limits


@pytest.mark.parametrize(
    ("host", "loopback_bind", "listed", "allowed"),
    [
        ("127.0.0.1:8000", True, [], True),
        ("localhost:8000", True, [], True),
        ("LOCALHOST.", True, [], True),
        ("[::1]:8000", True, [], True),
        ("127.0.0.2", True, [], True),
        ("evil.example:8000", True, [], False),
        ("127.0.0.1.evil.example", True, [], False),
        ("localhost:80x", True, [], False),
        (None, True, [], False),
        ("memory.example:443", True, ["memory.example"], True),
        ("a.memory.example", True, ["*.memory.example"], True),
        ("memory.example", True, ["*.memory.example"], False),
        ("evil.example", True, ["*"], True),
        ("evil.example", False, [], True),  # a public bind: tokens guard it
        ("evil.example", False, ["memory.example"], False),
        ("localhost", False, ["memory.example"], True),
    ],
)
def test_hosts_a_service_answers_to(
    host: str | None, loopback_bind: bool, listed: list[str], allowed: bool
) -> None:
    from mnemoql.web.guards import HostRule

    rule = HostRule(loopback_bind=loopback_bind, allowed_hosts=listed, cors_origins=[])
    assert rule.host_allowed(host) is allowed


@pytest.mark.parametrize(
    ("origin", "host", "allowed"),
    [
        (None, "127.0.0.1:8000", True),  # not a browser
        ("http://127.0.0.1:8000", "127.0.0.1:8000", True),  # the service's own page
        ("http://127.0.0.1:8000/", "127.0.0.1:8000", True),
        ("http://localhost:8000", "127.0.0.1:8000", False),  # another origin, same machine
        ("http://127.0.0.1:5173", "127.0.0.1:8000", False),
        ("http://localhost:5173", "127.0.0.1:8000", True),  # listed
        ("http://evil.example:8000", "evil.example:8000", True),  # same origin: Host decides
        ("https://memory.example", "memory.example", True),
        ("http://memory.example", "memory.example:8080", False),
        ("null", "127.0.0.1:8000", False),
        ("file://", "127.0.0.1:8000", False),
        ("http://127.0.0.1:99999", "127.0.0.1:8000", False),
    ],
)
def test_origins_a_service_accepts(origin: str | None, host: str, allowed: bool) -> None:
    from mnemoql.web.guards import HostRule

    rule = HostRule(loopback_bind=True, allowed_hosts=[], cors_origins=["http://localhost:5173"])
    scheme = "https" if origin and origin.startswith("https") else "http"
    assert rule.origin_allowed(origin, host, scheme) is allowed


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_refusals_refill_over_time_per_client() -> None:
    from mnemoql.engine.service_settings import HttpSettings
    from mnemoql.web.guards import ClientLimits

    clock = FakeClock()
    limits = ClientLimits(HttpSettings(refusals_burst=2, refusals_per_s=0.5), clock)
    for _ in range(2):
        assert limits.admit("addr:a") is None
        limits.finish("addr:a", 0.0, refused=True)
    refused = limits.admit("addr:a")
    assert refused is not None and refused.retry_after_s == 2  # one refusal back in 2 s
    assert limits.admit("addr:b") is None  # another client
    clock.now += 2
    assert limits.admit("addr:a") is None


def test_busy_time_is_a_budget_a_waiting_client_never_exceeds() -> None:
    from mnemoql.engine.service_settings import HttpSettings
    from mnemoql.web.guards import ClientLimits

    clock = FakeClock()
    limits = ClientLimits(HttpSettings(busy_burst_s=2, busy_per_s=1.0), clock)
    for _ in range(50):  # one request at a time, each 1 s: a client that waits for answers
        assert limits.admit("token:a") is None
        clock.now += 1.0
        limits.finish("token:a", 1.0, refused=False)
    for _ in range(4):  # four at once, each 1 s: past its share
        assert limits.admit("token:b") is None
    clock.now += 1.0
    for _ in range(4):
        limits.finish("token:b", 1.0, refused=False)
    refused = limits.admit("token:b")  # a budget of 2 s, 4 s spent: 2 s to wait
    assert refused is not None and refused.retry_after_s == 2
    clock.now += 2.0
    assert limits.admit("token:b") is None


def test_subscriptions_are_capped_per_client_and_in_total() -> None:
    from mnemoql.engine.service_settings import HttpSettings
    from mnemoql.web.guards import ClientLimits

    limits = ClientLimits(HttpSettings(max_subscriptions_per_client=2, max_subscriptions=3))
    assert limits.open_subscription("a") is None
    assert limits.open_subscription("a") is None
    assert limits.open_subscription("a") is not None  # a's own cap
    assert limits.open_subscription("b") is None
    total = limits.open_subscription("c")
    assert total is not None and "MNEMOQL_HTTP__MAX_SUBSCRIPTIONS=" in total.message
    limits.close_subscription("a")
    assert limits.open_subscription("c") is None


def test_an_open_service_on_a_public_address_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from mnemoql.web.app import create_app

    settings = offline_settings(tmp_path).model_copy(
        update={"host": "0.0.0.0", "allow_public": True}
    )
    with caplog.at_level("WARNING", logger="mnemoql"):
        create_app(settings)
    assert any("no access tokens" in r.getMessage() for r in caplog.records), caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="mnemoql"):
        create_app(offline_settings(tmp_path))
    assert not any("no access tokens" in r.getMessage() for r in caplog.records)
