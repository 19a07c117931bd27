"""revectorize: compute everything first, swap in one go, clear cursors; faults change nothing."""

from __future__ import annotations

from pathlib import Path

from tests.api.conftest import Api, fake_model_settings, running
from tests.api.test_save import SAVE
from tests.fake_model_server import FakeModelServer

REVEC = "mutation { revectorize { model dimensions events persons concepts locations chunks } }"
TEXTS = [
    "张三：我们在杭州讨论了 Neo4j 的部署。" + "细节" * 500,
    "Alice: the backup job failed twice last night.",
    "Bob: caching made the search twice as fast.",
]


async def _seed(api: Api) -> None:
    for t in TEXTS:
        await api.gql(SAVE, input={"content": t})


async def test_revectorize_unblocks_a_changed_model_and_breaks_old_cursors(
    tmp_path: Path, fake_models: FakeModelServer
) -> None:
    async with running(fake_model_settings(tmp_path, fake_models.url)) as api:
        await _seed(api)
    changed = fake_model_settings(tmp_path, fake_models.url)
    changed.embedding.dimensions = 32
    changed.embedding.model = "fake-embedding-v2"
    async with running(changed) as api:
        assert (await api.error(SAVE, input={"content": "x"}))["extensions"][
            "code"
        ] == "EMBEDDING_MISMATCH"
        report = (await api.gql(REVEC))["revectorize"]
        assert report["model"] == "fake-embedding-v2" and report["dimensions"] == 32
        assert report["events"] >= 3 and report["chunks"] >= 4
        index = (
            await api.gql(
                "{ memoryIndex { storedModel storedDimensions mismatch counts { chunks } } }"
            )
        )["memoryIndex"]
        assert index["storedModel"] == "fake-embedding-v2" and index["storedDimensions"] == 32
        assert index["mismatch"] is False and index["counts"]["chunks"] == report["chunks"]
        page = (
            await api.gql(
                '{ search(query: "Neo4j 部署", session: "r") { cursor expandConcepts items { eventId quote { text } } } }'
            )
        )["search"]
        assert page["items"]
        assert (await api.gql(SAVE, input={"content": "after the swap"}))["save"]["eventIds"]
        # revectorize clears every cursor
        await api.gql(REVEC)
        if page["expandConcepts"]:
            err = await api.error(
                'query($c: String!, $id: ID!) { expand(cursor: $c, conceptId: $id, session: "r") { cursor } }',
                c=page["cursor"],
                id=page["expandConcepts"][0],
            )
            assert err["extensions"]["code"] == "CURSOR_INVALID"


async def test_an_embedding_failure_midway_changes_nothing(
    tmp_path: Path, fake_models: FakeModelServer
) -> None:
    settings = fake_model_settings(tmp_path, fake_models.url)
    async with running(settings) as api:
        await _seed(api)
        before = (
            await api.gql(
                "{ memoryIndex { storedModel updated: storedDimensions counts { events chunks } } }"
            )
        )["memoryIndex"]
        page = (await api.gql('{ search(query: "backup", session: "m") { items { eventId } } }'))[
            "search"
        ]
        fake_models.reset()
        # let the first embed call through, fail every call after it (retries included)
        fake_models.fail("embeddings", "http_500", times=0)
        calls_before = len(fake_models.requests_to("/v1/embeddings"))
        fake_models.fail_after("embeddings", "http_500", skip=1, times=50)
        err = await api.error(REVEC)
        assert err["extensions"]["code"] == "REVECTORIZE_FAILED"
        assert "旧向量与元数据未改动" in err["extensions"]["zh"]
        assert (
            len(fake_models.requests_to("/v1/embeddings")) > calls_before + 1
        )  # it failed mid-way
        fake_models.reset()
        after = (
            await api.gql(
                "{ memoryIndex { storedModel updated: storedDimensions counts { events chunks } } }"
            )
        )["memoryIndex"]
        assert after == before
        again = (await api.gql('{ search(query: "backup", session: "m2") { items { eventId } } }'))[
            "search"
        ]
        assert again["items"] == page["items"]


async def test_a_memory_restored_without_vectors_refuses_saves_and_searches_alike(
    tmp_path: Path, fake_models: FakeModelServer
) -> None:
    """``stale`` is a mismatch like another model's vectors (``engine.meta``): save, search
    and ``memoryIndex.mismatch`` all say so, until a re-vectorize."""
    from mnemoql.engine import dump
    from mnemoql.web.service import open_store

    source = fake_model_settings(tmp_path / "source", fake_models.url)
    async with running(source) as api:
        await _seed(api)
    restored = fake_model_settings(tmp_path / "restored", fake_models.url)
    store, target = open_store(source), open_store(restored)
    await store.open()
    await target.open()
    try:
        lines = [line async for line in dump.export_lines(store, vectors=False)]
        await target.import_records(dump.DumpReader(lines).records())
    finally:
        await store.close()
        await target.close()
    search = "query($q: String) { search(query: $q) { items { eventId } } }"
    index = "{ memoryIndex { mismatch } }"
    async with running(restored) as api:
        assert (await api.gql(index))["memoryIndex"]["mismatch"] is True
        for query, variables in ((SAVE, {"input": {"content": "x"}}), (search, {"q": "backup"})):
            err = await api.error(query, **variables)
            assert err["extensions"]["code"] == "EMBEDDING_MISMATCH", err
            assert err["extensions"]["vectors_stale"] is True
            assert "restored without its vectors" in err["message"]
        await api.gql(REVEC)
        assert (await api.gql(index))["memoryIndex"]["mismatch"] is False
        assert (await api.gql(SAVE, input={"content": "Carol fixed the backup job."}))["save"]
        assert (await api.gql(search, q="backup"))["search"]["items"]
