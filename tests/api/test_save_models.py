"""save through real HTTP model calls (the fake OpenAI-compatible server): faults write nothing."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.api.conftest import Api, fake_model_settings, running
from tests.api.test_save import COUNTS, SAVE
from tests.fake_model_server import FakeModelServer

TEXT = "张三：上周三我们在杭州讨论了 Neo4j 的部署方式。\n\n李四：我更喜欢嵌入式存储。"


async def _counts(api: Api) -> dict[str, int]:
    result: dict[str, int] = (await api.gql(COUNTS))["memoryIndex"]["counts"]
    return result


async def test_save_calls_chat_and_embeddings_as_specified(
    tmp_path: Path, fake_models: FakeModelServer
) -> None:
    async with running(fake_model_settings(tmp_path, fake_models.url)) as api:
        saved = (await api.gql(SAVE, input={"content": TEXT}))["save"]
        assert saved["eventIds"]
        chat = fake_models.requests_to("/v1/chat/completions")[0]
        assert chat.json["model"] == "deepseek-flash"
        assert chat.json["temperature"] == 0
        assert chat.json["response_format"] == {"type": "json_object"}
        assert chat.json["messages"][1]["content"].startswith("当前时间: ")
        assert chat.json["messages"][1]["content"].endswith(TEXT)
        assert chat.headers["authorization"] == "Bearer sk-extract-SECRET"
        embeds = fake_models.requests_to("/v1/embeddings")
        assert embeds and all(len(r.json["input"]) <= 10 for r in embeds)
        assert all(
            r.json["dimensions"] == 64 and r.json["encoding_format"] == "float" for r in embeds
        )
        index = (
            await api.gql(
                "{ memoryIndex { model dimensions storedModel storedDimensions mismatch } }"
            )
        )["memoryIndex"]
        assert index == {
            "model": "fake-embedding",
            "dimensions": 64,
            "storedModel": "fake-embedding",
            "storedDimensions": 64,
            "mismatch": False,
        }


@pytest.mark.parametrize(
    ("endpoint", "mode", "code"),
    [
        ("chat", "malformed_json", "EXTRACTION_INVALID"),
        ("chat", "empty_events", "EXTRACTION_INVALID"),
        ("chat", "http_500", "UPSTREAM_FAILED"),
        ("chat", "timeout", "UPSTREAM_FAILED"),
        ("embeddings", "http_500", "UPSTREAM_FAILED"),
        ("embeddings", "timeout", "UPSTREAM_FAILED"),
        ("embeddings", "wrong_dimensions", "EMBEDDING_DIMENSION"),
    ],
)
async def test_model_faults_give_a_clear_error_and_write_nothing(
    tmp_path: Path,
    fake_models: FakeModelServer,
    endpoint: str,
    mode: str,
    code: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with running(fake_model_settings(tmp_path, fake_models.url)) as api:
        fake_models.timeout_sleep_s = 4.0  # past the client's 3 s timeout
        fake_models.fail(endpoint, mode, times=5)  # type: ignore[arg-type]
        body = await api.post(SAVE, {"input": {"content": TEXT}})
        err = body["errors"][0]
        assert err["extensions"]["code"] == code, err
        assert "SECRET" not in str(body)
        assert await _counts(api) == {
            "events": 0,
            "persons": 0,
            "concepts": 0,
            "locations": 0,
            "chunks": 0,
            "relationships": 0,
        }
        # the service recovers once the provider does
        fake_models.reset()
        assert (await api.gql(SAVE, input={"content": TEXT}))["save"]["eventIds"]
    assert "SECRET" not in caplog.text


async def test_a_transient_500_is_retried(tmp_path: Path, fake_models: FakeModelServer) -> None:
    async with running(fake_model_settings(tmp_path, fake_models.url)) as api:
        fake_models.fail("embeddings", "http_500", times=1)
        assert (await api.gql(SAVE, input={"content": TEXT}))["save"]["eventIds"]


async def test_changed_embedding_model_pauses_save_but_not_read(
    tmp_path: Path, fake_models: FakeModelServer
) -> None:
    async with running(fake_model_settings(tmp_path, fake_models.url)) as api:
        await api.gql(SAVE, input={"content": TEXT})
    changed = fake_model_settings(tmp_path, fake_models.url)
    changed.embedding.dimensions = 32
    async with running(changed) as api:
        err = await api.error(SAVE, input={"content": "more"})
        assert err["extensions"]["code"] == "EMBEDDING_MISMATCH"
        assert "revectorize" in err["message"]
        assert err["extensions"]["zh"].startswith(
            "向量模型或维度与库中记录不一致（库：fake-embedding/64，当前：fake-embedding/32）"
        )
        assert (await api.gql('{ read(eventId: "event_1", limit: 2) { text } }'))["read"][
            "text"
        ] == "张三"
        assert (await api.gql("{ memoryIndex { mismatch } }"))["memoryIndex"]["mismatch"] is True
        err = await api.error('{ search(query: "Neo4j") { cursor } }')
        assert err["extensions"]["code"] == "EMBEDDING_MISMATCH"
        # entity/date-only search still works
        ok = await api.gql('{ search(timeHint: "今年") { items { eventId } } }')
        assert ok["search"]["items"]


async def test_a_bad_model_extraction_is_refused_as_a_client_one(
    tmp_path: Path, fake_models: FakeModelServer
) -> None:
    # before: "extraction result is invalid: Value error, e1 refers to ..." in English only
    async with running(fake_model_settings(tmp_path, fake_models.url)) as api:
        fake_models.queue_extraction({"events": [{"ref": "e1", "summary": "s", "concepts": ["c9"]}]})
        body = await api.post(SAVE, {"input": {"content": TEXT}})
        (err,) = body["errors"]
        assert err["extensions"]["code"] == "EXTRACTION_INVALID"
        assert err["message"] == "invalid extraction: e1 refers to unknown concept ref 'c9'"
        assert err["extensions"]["zh"] == "提取结果无效：事件 e1 引用了不存在的概念 ref 'c9'"
        assert (await _counts(api))["events"] == 0
