"""The dependency-free embedder, ``HashingEmbedder``: signed feature hashing of latin words and
CJK unigrams/bigrams. It knows no synonyms, but texts sharing words get a higher cosine, which
is what lexical retrieval needs.

Also what it shares: the English stopwords it weighs down (the offline extractor's word lists
build on them and on ``wordset``) and ``normalise_rows``, which ends the local embedder's calls
too.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import math
import re
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from mnemoql.engine.model_settings import HASHING_EMBEDDING_MODEL, LOCAL_DIMENSIONS
from mnemoql.engine.models import Vector
from mnemoql.engine.providers.base import EmbedKind

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


def normalise_rows(m: Vector) -> Vector:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vector = np.ascontiguousarray(m / norms, dtype=np.float32)
    return out


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
        return normalise_rows(out)

    async def embed(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vector:
        """Queries and passages share one space; ``kind`` makes no difference here."""
        if len(texts) <= _HASHING_INLINE_MAX:
            return self.embed_sync(texts)
        return await asyncio.to_thread(self.embed_sync, list(texts))
