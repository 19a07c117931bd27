"""The one "are these vectors ours?" check (``engine.meta``) that save, search, activation and
``memoryIndex.mismatch`` share: a stale memory (restored without vectors) is a mismatch."""

from __future__ import annotations

import pytest

from mnemoql.engine.errors import MetaMismatch
from mnemoql.engine.meta import check_vectors, vectors_are_ours
from mnemoql.engine.models import MemoryMeta

MODEL, DIMS = "m-1", 8


def meta(model: str = MODEL, dims: int = DIMS, *, stale: bool = False) -> MemoryMeta:
    return MemoryMeta(model, dims, "2026-01-01T00:00:00+00:00", stale=stale)


@pytest.mark.parametrize(
    ("stored", "ours"),
    [
        (None, True),  # nothing saved yet: the first save writes the meta
        (meta(), True),
        (meta("m-2"), False),
        (meta(dims=16), False),
        (meta(stale=True), False),  # the configured model, but no vectors at all
    ],
)
def test_vectors_are_ours_only_when_model_width_and_presence_match(
    stored: MemoryMeta | None, ours: bool
) -> None:
    assert vectors_are_ours(stored, MODEL, DIMS) is ours
    if ours:
        check_vectors(stored, MODEL, DIMS)
    else:
        with pytest.raises(MetaMismatch) as err:
            check_vectors(stored, MODEL, DIMS)
        assert err.value.code == "EMBEDDING_MISMATCH"
        assert err.value.details.get("vectors_stale", False) is bool(stored and stored.stale)
