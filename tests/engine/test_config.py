from __future__ import annotations

from pathlib import Path

from mnemoql.engine.config import load_settings


def test_original_variable_names_are_aliases() -> None:
    s = load_settings(
        {
            "DEEPSEEK_API_KEY": "sk-a",
            "EMBEDDING_API_KEY": "sk-b",
            "TYPESAFE_API_KEY": "sk-c",
            "NEO4J_PASSWORD": "pw",
            "DSH_NEO4J_MEMORY_TIMEZONE": "Europe/Berlin",
            "DSH_NEO4J_MEMORY_CONCEPT_ALIGNMENT": "false",
            "DSH_NEO4J_MEMORY_NEO4J_MODE": "external",
            "DSH_NEO4J_MEMORY_ALIGNMENT_THRESHOLD": "0.5",
        }
    )
    assert s.extraction.api_key is not None and s.extraction.api_key.get_secret_value() == "sk-a"
    assert s.embedding.api_key is not None and s.embedding.api_key.get_secret_value() == "sk-b"
    assert s.alignment.api_key is not None and s.alignment.api_key.get_secret_value() == "sk-c"
    assert s.neo4j.password is not None and s.neo4j.password.get_secret_value() == "pw"
    assert s.timezone == "Europe/Berlin"
    assert s.alignment.enabled is False
    assert s.neo4j.mode == "external"
    assert s.alignment.threshold == 0.80  # clamped into 0.80..0.99


def test_our_names_win_over_aliases_and_overrides_win_over_both(tmp_path: Path) -> None:
    env = {
        "DEEPSEEK_API_KEY": "alias",
        "MNEMOQL_EXTRACTION__API_KEY": "ours",
        "MNEMOQL_PORT": "9000",
    }
    s = load_settings(env)
    assert s.extraction.api_key is not None and s.extraction.api_key.get_secret_value() == "ours"
    assert s.port == 9000
    s = load_settings(env, port=9100, data_dir=tmp_path)
    assert s.port == 9100 and s.data_dir == tmp_path


def test_secrets_do_not_leak_through_repr_or_dump() -> None:
    s = load_settings({"DEEPSEEK_API_KEY": "sk-very-secret"})
    assert "sk-very-secret" not in repr(s)
    assert "sk-very-secret" not in s.model_dump_json()


def test_defaults_are_the_originals() -> None:
    s = load_settings({})
    assert (s.extraction.base_url, s.extraction.model) == (
        "https://api.deepseek.com",
        "deepseek-flash",
    )
    assert (s.embedding.model, s.embedding.dimensions, s.embedding.batch_size) == (
        "qwen3.7-text-embedding",
        1024,
        10,
    )
    assert (s.alignment.model, s.alignment.threshold, s.alignment.enabled) == ("jev", 0.95, True)
    assert s.timezone == "Asia/Shanghai"
    assert (s.host, s.port, s.store) == ("127.0.0.1", 8000, "embedded")


def test_the_neo4j_route_strategy_settings_reach_the_store() -> None:
    import pytest
    from pydantic import ValidationError

    from mnemoql.web.neo4j_boot import neo4j_store

    base = {"MNEMOQL_NEO4J__MODE": "external", "MNEMOQL_NEO4J__URI": "bolt://127.0.0.1:1"}
    store = neo4j_store(load_settings(base))
    assert (store.index_min_events, store.index_overfetch) == (2000, 15)
    tuned = {**base, "MNEMOQL_NEO4J__INDEX_MIN_EVENTS": "500", "MNEMOQL_NEO4J__INDEX_OVERFETCH": "20"}
    store = neo4j_store(load_settings(tuned))
    assert (store.index_min_events, store.index_overfetch) == (500, 20)
    exact = neo4j_store(load_settings({**tuned, "MNEMOQL_NEO4J__ROUTES": "exact"}))
    assert exact.index_min_events is None  # type: ignore[attr-defined]
    for bad in ({"MNEMOQL_NEO4J__ROUTES": "fast"}, {"MNEMOQL_NEO4J__INDEX_OVERFETCH": "0"}):
        with pytest.raises(ValidationError):
            load_settings({**base, **bad})
