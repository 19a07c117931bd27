from __future__ import annotations

import itertools

import pytest

from mnemoql.engine.text import chunk_ranges, content_hash, normalise_name, text_hash


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, []),
        (1, [(0, 1)]),
        (800, [(0, 800)]),
        (801, [(0, 800), (680, 801)]),
        (1480, [(0, 800), (680, 1480)]),
        (1481, [(0, 800), (680, 1480), (1360, 1481)]),
        (1500, [(0, 800), (680, 1480), (1360, 1500)]),
    ],
)
def test_chunk_boundaries(n: int, expected: list[tuple[int, int]]) -> None:
    assert chunk_ranges(n) == expected


def test_chunks_count_code_points_not_bytes_or_utf16_units() -> None:
    text = "😀" * 801  # astral: 4 UTF-8 bytes, 2 UTF-16 units each
    ranges = chunk_ranges(len(text))
    assert ranges == [(0, 800), (680, 801)]
    pieces = [text[s:e] for s, e in ranges]
    assert [len(p) for p in pieces] == [800, 121]
    assert pieces[1] == "😀" * 121


def test_every_chunk_overlaps_the_next_by_120() -> None:
    ranges = chunk_ranges(10_000)
    assert ranges[0][0] == 0 and ranges[-1][1] == 10_000
    for (s1, e1), (s2, _) in itertools.pairwise(ranges):
        assert e1 - s2 == 120 and e1 - s1 == 800


def test_names_normalise_with_nfkc_casefold_and_trim() -> None:
    assert normalise_name("  ＮＥＯ４Ｊ ") == "neo4j"
    assert normalise_name("Straße") == normalise_name("STRASSE")


def test_hashes_are_the_ones_spec_names() -> None:
    assert content_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert text_hash("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d"
