from __future__ import annotations

import logging

import pytest

from tests.fake_model_fixtures import fake_models, model_client  # noqa: F401


@pytest.fixture(scope="session", autouse=True)
def _warm_jieba() -> None:
    """Load jieba's dictionary and the offline extractor's name lists once, so the first
    offline extraction (the fake model server's too) is not slower than the short client
    timeouts the fault tests use."""
    import jieba

    from mnemoql.engine.providers.lexicons import lexicons

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    lexicons()
