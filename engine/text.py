"""Text rules: code-point chunking (800/120), name normalisation, hashes.

Python ``str`` indexes by code point, so every range here is ``[start, end)`` in code points,
exactly what SPEC §1.3 and §1.5 count in.
"""

from __future__ import annotations

import hashlib
import unicodedata

CHUNK_SIZE = 800
CHUNK_OVERLAP = 120
CHUNK_STEP = CHUNK_SIZE - CHUNK_OVERLAP  # 680


def chunk_ranges(
    n: int, size: int = CHUNK_SIZE, overlap: int = CHUNK_OVERLAP
) -> list[tuple[int, int]]:
    """``[start, end)`` ranges covering ``n`` code points; none for ``n == 0``.

    >>> chunk_ranges(1500)
    [(0, 800), (680, 1480), (1360, 1500)]
    """
    step = size - overlap
    ranges: list[tuple[int, int]] = []
    start = 0
    while n > 0:
        end = min(start + size, n)
        ranges.append((start, end))
        if end == n:
            break
        start += step
    return ranges


def normalise_name(name: str) -> str:
    """NFKC, casefold, trim: the key entity merging and entity_filter compare on."""
    return unicodedata.normalize("NFKC", name).casefold().strip()


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()
