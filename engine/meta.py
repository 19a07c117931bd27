"""Are the stored vectors ours? The one MemoryMeta check behind save, search and activation.

SPEC §1.2 (MemoryMeta rules) and §1.12: when the model or the dimensions in the configuration
differ from the memory's ``MemoryMeta``, save and semantic search (targeted search, expand and
nearby too) are rejected with ``EMBEDDING_MISMATCH`` until a re-vectorize. ``MemoryMeta.stale``
is that same mismatch, not a lesser one: a restore wrote events without any vector, so the
stored vectors are not the configured model's either -- there are none. Save, search,
activation and ``memoryIndex.mismatch`` all ask ``vectors_are_ours``; a memory without a
``MemoryMeta`` (nothing saved yet) is ours, and its first save writes one.
"""

from __future__ import annotations

from mnemoql.engine.errors import MetaMismatch
from mnemoql.engine.models import MemoryMeta


def vectors_are_ours(meta: MemoryMeta | None, model: str, dims: int) -> bool:
    """True when the stored vectors are ``model``'s at width ``dims`` (or there is no meta)."""
    return meta is None or (not meta.stale and (meta.model, meta.dimensions) == (model, dims))


def check_vectors(meta: MemoryMeta | None, model: str, dims: int) -> None:
    """EMBEDDING_MISMATCH unless the stored vectors are ours."""
    if meta is not None and not vectors_are_ours(meta, model, dims):
        raise mismatch(meta, model, dims)


def mismatch(meta: MemoryMeta, model: str, dims: int) -> MetaMismatch:
    """The error for vectors that are not ours, saying how to make them ours again."""
    if meta.stale:
        return MetaMismatch(
            "the memory was restored without its vectors and has not been re-embedded yet, so "
            "saving and semantic search would compare against nothing; run the revectorize "
            "mutation (or `mnemoql revectorize`)",
            zh="记忆恢复时未携带向量，尚未重新向量化；保存与语义检索已暂停，请先重新向量化",
            stored_model=meta.model,
            stored_dimensions=meta.dimensions,
            configured_model=model,
            configured_dimensions=dims,
            vectors_stale=True,
        )
    return MetaMismatch(
        f"the memory was embedded with {meta.model}/{meta.dimensions} but the service is "
        f"configured for {model}/{dims}; saving and semantic search are paused until you run "
        "the revectorize mutation (or `mnemoql revectorize`)",
        zh=(
            f"向量模型或维度与库中记录不一致（库：{meta.model}/{meta.dimensions}，当前：{model}/{dims}），"
            "保存与语义检索已暂停，请先重新向量化"
        ),
        stored_model=meta.model,
        stored_dimensions=meta.dimensions,
        configured_model=model,
        configured_dimensions=dims,
    )
