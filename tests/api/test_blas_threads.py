"""A serving process runs numpy's BLAS on ``retrieval.blas_threads`` threads (default 1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from threadpoolctl import threadpool_info, threadpool_limits

from mnemoql.engine.config import load_settings
from mnemoql.web.app import create_app
from mnemoql.web.service import limit_blas_threads
from tests.api.conftest import offline_settings


def blas_threads() -> int:
    np.ones((2, 2)) @ np.ones((2, 2))  # numpy's BLAS is loaded
    pools = [p for p in threadpool_info() if p["user_api"] == "blas"]
    assert pools, "threadpoolctl sees no BLAS library under numpy"
    return int(pools[0]["num_threads"])


@pytest.fixture
def two_blas_threads() -> Iterator[None]:
    """The process's BLAS at 2 threads for the test, put back as it was afterwards."""
    with threadpool_limits(limits=None, user_api="blas"):  # restores the original on exit
        threadpool_limits(limits=2, user_api="blas")
        if blas_threads() != 2:
            pytest.skip("this BLAS cannot run 2 threads here")
        yield


def test_the_limit_is_applied_and_zero_leaves_blas_alone(two_blas_threads: None) -> None:
    limit_blas_threads(0)
    assert blas_threads() == 2
    limit_blas_threads(1)
    assert blas_threads() == 1


@pytest.mark.parametrize(("setting", "expected"), [(None, 1), (0, 2), (2, 2)])
async def test_the_served_app_sets_the_configured_blas_threads(
    tmp_path: Path, two_blas_threads: None, setting: int | None, expected: int
) -> None:
    """The lifespan runs on the serving loop's thread: uvicorn's main thread, as here (once the
    main thread has set a count, OpenBLAS 0.3.31 ignores counts set from other threads)."""
    retrieval = {} if setting is None else {"retrieval": {"blas_threads": setting}}
    app = create_app(offline_settings(tmp_path, **retrieval))
    assert blas_threads() == 2  # nothing at build time: the lifespan sets it
    async with app.router.lifespan_context(app):
        assert blas_threads() == expected


def test_a_negative_thread_count_is_refused_naming_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="blas_threads"):
        load_settings({"MNEMOQL_RETRIEVAL__BLAS_THREADS": "-1"}, data_dir=tmp_path)
