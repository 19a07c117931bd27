"""The source_messages windows of the activated_memory_slices block (SPEC §2.8 step 4)."""

from __future__ import annotations

import pytest

from mnemoql.engine.topics import Omitted, Projection, window_messages


def msgs(n: int) -> list[str]:
    return [f"m{i}" for i in range(n)]


@pytest.mark.parametrize("projection", ["full", "compact"])
def test_ten_or_fewer_messages_are_shown_whole(projection: Projection) -> None:
    assert window_messages(msgs(10), projection) == msgs(10)
    assert window_messages([], projection) == []


def test_eleven_messages() -> None:
    # ms = max(2, 7 // 2) = 3, me = min(9, 7) = 7, (n-2) - me = 2
    assert window_messages(msgs(11)) == [
        "m0", "m1", Omitted(1), "m3", "m4", "m5", "m6", Omitted(2), "m9", "m10",
    ]  # fmt: skip
    assert window_messages(msgs(11), "compact") == [
        Omitted(1), "m3", "m4", "m5", "m6", Omitted(2), "m9", "m10",
    ]  # fmt: skip


def test_twenty_messages() -> None:
    # ms = 8, me = 12, (n-2) - me = 6
    full = window_messages(msgs(20))
    assert full == [
        "m0", "m1", Omitted(6), "m8", "m9", "m10", "m11", Omitted(6), "m18", "m19",
    ]  # fmt: skip
    assert full[2] == Omitted(6) and Omitted(6).text == "省略了 6 条消息"
    assert window_messages(msgs(20), "compact") == full[2:]


def test_twelve_messages() -> None:
    # ms = 4, me = 8, (n-2) - me = 2
    assert window_messages(msgs(12)) == [
        "m0", "m1", Omitted(2), "m4", "m5", "m6", "m7", Omitted(2), "m10", "m11",
    ]  # fmt: skip


def test_abstract_shows_no_messages() -> None:
    assert window_messages(msgs(20), "abstract") == []
    assert window_messages(msgs(3), "abstract") == []


@pytest.mark.parametrize("n", range(11, 60))
def test_full_window_accounts_for_every_message(n: int) -> None:
    window = window_messages(msgs(n))
    shown = [m for m in window if isinstance(m, str)]
    omitted = sum(m.count for m in window if isinstance(m, Omitted))
    assert len(shown) == 8 and shown[:2] == ["m0", "m1"] and shown[-2:] == msgs(n)[-2:]
    assert len(shown) + omitted == n
