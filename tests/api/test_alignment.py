"""Concept alignment: vector candidates judged by the (fake) jev service over HTTP."""

from __future__ import annotations

from pathlib import Path

from tests.api.conftest import fake_model_settings, running
from tests.api.test_save import SAVE
from tests.fake_model_server import FakeModelServer


def _ex(concept: str) -> dict[str, object]:
    return {
        "events": [{"ref": "e", "summary": f"about {concept}", "concepts": ["c"]}],
        "concepts": [{"ref": "c", "name": concept}],
    }


async def test_judge_merges_concepts_above_threshold_only(
    tmp_path: Path, fake_models: FakeModelServer
) -> None:
    settings = fake_model_settings(
        tmp_path,
        fake_models.url,
        alignment={
            "enabled": True,
            "url": fake_models.judge_url,
            "api_key": "sk-judge-SECRET",
            "threshold": 0.9,
        },
    )
    async with running(settings) as api:
        await api.gql(SAVE, input={"content": "one", "extraction": _ex("graph database")})
        # the hashing embeddings of these names have cosine 1.0 (stopwords dropped), so each new
        # name is a vector candidate and the judge decides
        fake_models.set_judge("the graph database", "graph database", 0.97)
        merged = (
            await api.gql(SAVE, input={"content": "two", "extraction": _ex("the graph database")})
        )["save"]
        assert merged["createdConcepts"] == [] and merged["merged"] == [
            {"id": "concept_1", "aliasesAdded": ["the graph database"]}
        ]
        judge = fake_models.requests_to("/v1/systemone")[-1]
        assert judge.json["model"] == "jev"
        assert judge.json["questions"]["same_concept"]["type"] == "noul"
        assert {judge.json["state"]["a"]["name"], judge.json["state"]["b"]["name"]} == {
            "the graph database",
            "graph database",
        }
        assert judge.headers["authorization"] == "Bearer sk-judge-SECRET"
        fake_models.set_judge("a graph database", "graph database", 0.5)
        calls = len(fake_models.requests_to("/v1/systemone"))
        kept = (
            await api.gql(SAVE, input={"content": "three", "extraction": _ex("a graph database")})
        )["save"]
        assert kept["createdConcepts"] == ["concept_2"]
        assert len(fake_models.requests_to("/v1/systemone")) > calls  # judged, and refused
        # a failing judge means "not the same" and does not fail the save
        fake_models.fail("judge", "http_500", times=20)
        alone = (
            await api.gql(SAVE, input={"content": "four", "extraction": _ex("graph-database")})
        )["save"]
        assert alone["createdConcepts"] == ["concept_3"]
