"""The activated_memory_slices block (SPEC §2.8 step 4): messages, projections and the XML."""

from __future__ import annotations

from mnemoql.engine.topics.block import (
    ActivatedSlice,
    SliceMessage,
    content_messages,
    projection_for,
    render_block,
)


def slice_of(n: int, slice_id: str = "event_1", summary: str = "the summary") -> ActivatedSlice:
    content = "\n".join(f"{'Assistant' if i % 2 else 'Bart'}: m{i}" for i in range(n))
    return ActivatedSlice("default", slice_id, "2026-03-01", 0, summary, content_messages(content))


def test_messages_are_the_non_blank_lines_with_a_role_from_the_speaker() -> None:
    got = content_messages(
        "Alice: hi\n\n  \nAssistant: hello\n助手：你好\nAI: yes\nno speaker here"
    )
    assert got == (
        SliceMessage("user", "Alice: hi"),
        SliceMessage("assistant", "Assistant: hello"),
        SliceMessage("assistant", "助手：你好"),
        SliceMessage("assistant", "AI: yes"),
        SliceMessage("user", "no speaker here"),
    )
    assert content_messages("") == ()


def test_full_with_ten_messages_shows_all_of_them() -> None:
    xml = render_block([slice_of(10)])
    assert xml.count("<message ") == 10 and "omitted_messages" not in xml
    assert render_block([slice_of(10)], "compact") == xml  # compact only differs past 10


def test_full_compact_and_abstract_of_a_twelve_message_slice() -> None:
    # n = 12: the first 2, 省略了 2 (ms = 4), m4..m7, 省略了 2 ((n-2) - me = 2), m10, m11
    full = render_block([slice_of(12)])
    assert full == "\n".join(
        [
            '<activated_memory_slices source="memory_selector" urgency="normal">',
            '  <memory_slice slice_id="event_1" unit_id="default">',
            "    <slice_summary>the summary</slice_summary>",
            "    <source_messages>",
            '      <message role="user">Bart: m0</message>',
            '      <message role="assistant">Assistant: m1</message>',
            "      <omitted_messages>省略了 2 条消息</omitted_messages>",
            '      <message role="user">Bart: m4</message>',
            '      <message role="assistant">Assistant: m5</message>',
            '      <message role="user">Bart: m6</message>',
            '      <message role="assistant">Assistant: m7</message>',
            "      <omitted_messages>省略了 2 条消息</omitted_messages>",
            '      <message role="user">Bart: m10</message>',
            '      <message role="assistant">Assistant: m11</message>',
            "    </source_messages>",
            "  </memory_slice>",
            "</activated_memory_slices>",
        ]
    )
    compact = render_block([slice_of(12)], "compact")
    assert "Bart: m0" not in compact and "Assistant: m1<" not in compact
    assert compact.splitlines() == [
        ln
        for ln in full.splitlines()
        if not ln.endswith(": m0</message>") and not ln.endswith(": m1</message>")
    ]
    assert render_block([slice_of(12)], "abstract") == "\n".join(
        [
            '<activated_memory_slices source="memory_selector" urgency="normal">',
            '  <memory_slice slice_id="event_1" unit_id="default">',
            "    <summary>the summary</summary>",
            "  </memory_slice>",
            "</activated_memory_slices>",
        ]
    )


def test_eleven_messages_have_one_omitted_note_before_and_two_after_the_middle() -> None:
    # n = 11: ms = max(2, 7 // 2) = 3, me = min(9, 7) = 7, so 1 left out before, 2 after
    lines = render_block([slice_of(11)]).splitlines()
    shown = [ln.strip() for ln in lines if "<message" in ln or "omitted" in ln]
    assert [s.split(">")[1].split("<")[0] for s in shown] == [
        "Bart: m0", "Assistant: m1", "省略了 1 条消息", "Assistant: m3", "Bart: m4",
        "Assistant: m5", "Bart: m6", "省略了 2 条消息", "Assistant: m9", "Bart: m10",
    ]  # fmt: skip


def test_an_empty_block_and_escaping() -> None:
    assert (
        render_block([]) == '<activated_memory_slices source="memory_selector" urgency="normal"/>'
    )
    odd = ActivatedSlice('u"1', "s<1>", "2026-03-01", 0, "a & b", content_messages("x: 1 < 2 > 0"))
    xml = render_block([odd])
    assert '<memory_slice slice_id="s&lt;1&gt;" unit_id="u&quot;1">' in xml
    assert "<slice_summary>a &amp; b</slice_summary>" in xml
    assert '<message role="user">x: 1 &lt; 2 &gt; 0</message>' in xml
    empty = ActivatedSlice("u", "s", "2026-03-01", 0, "", ())
    assert render_block([empty]).splitlines()[2:4] == [
        "    <slice_summary/>",
        "    <source_messages/>",
    ]


def test_which_projection_partner_shows_at_an_activation_score() -> None:
    assert [projection_for(s) for s in (100, 70, 69.9, 30, 29.9, 0)] == [
        "full", "full", "compact", "compact", "abstract", "abstract",
    ]  # fmt: skip
