"""Text rules: code-point chunking (800/120), name normalisation, NFKC folding, hashes.

Python ``str`` indexes by code point, so every range here is ``[start, end)`` in code points,
exactly what SPEC §1.3 and §1.5 count in.
"""

from __future__ import annotations

import functools
import hashlib
import unicodedata

import numpy as np
import numpy.typing as npt

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


@functools.lru_cache(maxsize=65_536)
def nfkc_char(ch: str) -> str:
    return unicodedata.normalize("NFKC", ch)


@functools.cache
def _code_tables() -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """(seen, changed) flags per code point, learnt as texts arrive (allocated on first use)."""
    return np.zeros(0x110000, dtype=np.bool_), np.zeros(0x110000, dtype=np.bool_)


def _changed_positions(text: str) -> npt.NDArray[np.intp]:
    """Indexes of the code points of ``text`` that NFKC changes on their own."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    seen, changed = _code_tables()
    fresh = np.unique(codes[~seen[codes]])
    for code in fresh.tolist():
        changed[code] = nfkc_char(chr(code)) != chr(code)
    seen[fresh] = True
    return np.flatnonzero(changed[codes])


_NONE_CHANGED: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)
_NONE_CHANGED.flags.writeable = False


def nfkc(text: str) -> tuple[str, npt.NDArray[np.intp] | None]:
    """NFKC of ``text``, and the positions that were mapped one code point at a time.

    Chinese text is rarely NFKC as stored (full-width punctuation, ……) and CPython's
    normaliser is slow on such strings, so each changed code point is mapped on its own. The
    result equals the whole-string NFKC whenever it is itself normalised (normalisation
    respects compatibility equivalence, which concatenation preserves); otherwise (combining
    marks that compose) fall back to the whole string and return None for the positions.
    """
    if text.isascii():  # ASCII is NFKC already: the common case of English text, at C speed
        return text, _NONE_CHANGED
    where = _changed_positions(text)
    mapped = text
    if where.size:
        pieces: list[str] = []
        prev = 0
        for i in where.tolist():
            pieces += (text[prev:i], nfkc_char(text[i]))
            prev = i + 1
        pieces.append(text[prev:])
        mapped = "".join(pieces)
    if unicodedata.is_normalized("NFKC", mapped):
        return mapped, where
    return unicodedata.normalize("NFKC", text), None


def normalise(text: str) -> str:
    """NFKC then lowercase: the form both query and documents are matched in."""
    return nfkc(text)[0].lower()
