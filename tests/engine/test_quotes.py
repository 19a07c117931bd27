from __future__ import annotations

import numpy as np

from mnemoql.engine.models import Chunk
from mnemoql.engine.retrieval.evidence import Excerpt, Note, NoteCode, Quote, QuoteRef
from mnemoql.engine.retrieval.quotes import (
    QuoteBudget,
    QuoteSource,
    best_chunk,
    choose_window,
    package_quotes,
    quote_region,
    quote_window,
)
from mnemoql.engine.retrieval.terms import query_terms, term_spans


def _naive_window(
    content: str, region: tuple[int, int], spans: list[tuple[str, int, int]], length: int
) -> tuple[int, int]:
    """Reference: try every start, count distinct terms fully inside."""
    start, end = region
    best, best_p = -1, start
    for p in range(start, max(start, end - 1) + 1):
        hi = min(p + length, end)
        got = {t for t, a, b in spans if p <= a and b <= hi}
        if len(got) > best:
            best, best_p = len(got), p
    return best_p, min(best_p + length, end)


# ---- region ----


def test_region_is_best_chunk_clipped_to_32000() -> None:
    assert quote_region(50_000, (240, 1040)) == (240, 1040)
    assert quote_region(50_000, (31_960, 32_760)) == (31_960, 32_000)


def test_region_falls_back_to_content_prefix() -> None:
    assert quote_region(1820, None) == (0, 1820)
    assert quote_region(50_000, None) == (0, 32_000)
    assert quote_region(50_000, (32_000, 32_800)) == (0, 32_000)  # chunk starts too late


def test_best_chunk_ignores_chunks_from_32000_and_missing_vectors() -> None:
    def chunk(i: int, start: int, vec: list[float] | None) -> Chunk:
        emb = None if vec is None else np.asarray(vec, dtype=np.float32)
        return Chunk("e", i, start, start + 800, "", "", emb)

    query = np.array([1.0, 0.0])
    chunks = [
        chunk(0, 0, [0.0, 1.0]),
        chunk(1, 680, [0.7, 0.7]),
        chunk(2, 1360, None),
        chunk(47, 31_960, [0.9, 0.1]),
        chunk(48, 32_640, [1.0, 0.0]),  # best, but starts past 32000
    ]
    assert best_chunk(chunks, query) == (31_960, 32_760)
    assert best_chunk(chunks[:3], query) == (680, 1480)
    assert best_chunk([chunks[2], chunks[4]], query) is None


# ---- window ----


def test_window_maximises_distinct_terms_inside() -> None:
    content = "x" * 50 + " Neo4j 部署 方式 " + "y" * 200 + "方案演进 neo4j " + "z" * 10
    terms = query_terms("Neo4j 的部署方式和方案演进")
    # 方案, 案演, 演进, neo4j end at 273: the earliest start holding all four is 153
    assert choose_window(content, (0, len(content)), terms, 120) == (153, 273)


def test_window_earliest_start_on_ties_and_region_start_without_terms() -> None:
    content = "a" * 10 + "部署" + "b" * 300 + "部署" + "c" * 10
    assert choose_window(content, (0, len(content)), frozenset({"部署"}), 120) == (0, 120)
    assert choose_window(content, (5, 200), frozenset(), 120) == (5, 125)
    assert choose_window(content, (5, 200), frozenset({"missing"}), 120) == (5, 125)


def test_window_counts_a_term_once_however_often_it_occurs() -> None:
    content = "部署部署部署" + "x" * 100 + "部署 方式"
    terms = frozenset({"部署", "方式"})
    p, end = choose_window(content, (0, len(content)), terms, 20)
    assert content[p:end].count("方式") == 1


def test_window_clips_to_region_end_and_stays_inside_region() -> None:
    content = "x" * 1000
    assert choose_window(content, (900, 950), frozenset(), 120) == (900, 950)
    content = "y" * 500 + "目标" + "y" * 500
    assert choose_window(content, (600, 1002), frozenset({"目标"}), 120) == (600, 720)


def test_window_is_an_exact_substring_with_whitespace_kept() -> None:
    content = "   \n部署 方式\n   "
    p, end = choose_window(content, (0, len(content)), frozenset({"部署"}), 120)
    assert content[p:end] == content


def test_window_needs_the_whole_term_inside() -> None:
    content = "部" * 10 + "neo4j" + "署" * 10
    assert choose_window(content, (0, len(content)), frozenset({"neo4j"}), 4) == (0, 4)
    assert choose_window(content, (0, len(content)), frozenset({"neo4j"}), 5) == (10, 15)
    glued = "a" * 10 + "neo4j" + "b" * 10  # one latin token, so neo4j is not in it
    assert choose_window(glued, (0, len(glued)), frozenset({"neo4j"}), 5) == (0, 5)


def test_window_matches_the_naive_reference_on_random_text() -> None:
    rng = np.random.default_rng(7)
    alphabet = list("部署方式案演进 ab")
    for _ in range(40):
        content = "".join(rng.choice(alphabet, size=int(rng.integers(1, 300))))
        terms = frozenset({"部署", "方式", "演进", "ab"})
        region = (int(rng.integers(0, len(content))), len(content))
        length = int(rng.integers(1, 40))
        spans = []
        for t in terms:
            if t == "ab":
                continue  # latin tokens need boundaries; keep the reference simple
            at = content.find(t, region[0])
            while at >= 0:
                spans.append((t, at, at + len(t)))
                at = content.find(t, at + 1)
        cjk_terms = frozenset(t for t in terms if t != "ab")
        assert choose_window(content, region, cjk_terms, length) == _naive_window(
            content, region, spans, length
        )


def test_window_over_a_full_32000_region() -> None:
    content = ("部署方式" + "x" * 96) * 320
    p, end = choose_window(content, (0, 32_000), query_terms("部署方式"), 120)
    assert (p, end) == (0, 120)


# ---- package ----


def _content(n: int, fill: str = "x") -> str:
    return fill * n


def test_budget_1000_and_cap_120_over_a_package() -> None:
    sources = [QuoteSource(f"event_{i}", _content(500, chr(0x4E00 + i))) for i in range(10)]
    pkg = package_quotes(sources, frozenset())
    lengths = [len(r.quote.text) if r.quote else 0 for r in pkg.results]
    assert lengths == [120] * 8 + [40, 0]
    assert sum(lengths) == 1000
    assert pkg.remaining == 0
    last = pkg.results[-1]
    assert last.quote is None and last.quote_ref is None
    assert last.notes == (Note(NoteCode.BUDGET_EXHAUSTED),)
    assert last.notes[0].message("zh") == "（摘录预算已用尽，请用 read）"
    assert [e.event_id for e in pkg.pending] == [f"event_{i}" for i in range(9)]


def test_quote_records_exact_range_and_total() -> None:
    content = "前言" * 100 + "关键部署" + "后记" * 100
    budget = QuoteBudget(frozenset({"部署"}))
    result = budget.take("event_1", content)
    assert result.quote is not None
    q = result.quote
    assert content[q.start : q.end] == q.text
    assert "部署" in q.text
    assert (q.total, result.total) == (len(content), len(content))
    assert budget.pending == [Excerpt(q.text, "event_1", q.start, q.end)]


def test_quote_ref_reuses_session_history_without_budget() -> None:
    history = {"x" * 120: ("event_3", 0, 120)}
    budget = QuoteBudget(frozenset(), history.get)
    result = budget.take("event_9", "x" * 300)
    assert result.quote is None
    assert result.quote_ref == QuoteRef("event_3", 0, 120)
    assert budget.remaining == 1000
    assert budget.pending == []


def test_quote_ref_reuses_an_earlier_excerpt_of_the_same_package() -> None:
    pkg = package_quotes(
        [QuoteSource("event_1", "同样的内容"), QuoteSource("event_2", "同样的内容")], frozenset()
    )
    first, second = pkg.results
    assert first.quote == Quote("同样的内容", 0, 5, 5)
    assert second.quote_ref == QuoteRef("event_1", 0, 5)
    assert pkg.remaining == 1000 - 5
    assert len(pkg.pending) == 1


def test_session_history_wins_over_the_package() -> None:
    history = {"abc": ("event_0", 7, 10)}
    pkg = package_quotes(
        [QuoteSource("event_1", "abc"), QuoteSource("event_2", "abc")], frozenset(), history.get
    )
    assert [r.quote_ref for r in pkg.results] == [QuoteRef("event_0", 7, 10)] * 2
    assert pkg.pending == []


def test_exhausted_budget_wins_even_over_a_possible_quote_ref() -> None:
    budget = QuoteBudget(frozenset(), {"x" * 5: ("event_0", 0, 5)}.get, budget=0)
    result = budget.take("event_1", "x" * 5)
    assert result.quote_ref is None
    assert result.notes == (Note(NoteCode.BUDGET_EXHAUSTED),)


def test_long_content_gets_the_read_hint_and_quotes_inside_32000() -> None:
    content = "x" * 40_000 + "部署"
    result = QuoteBudget(frozenset({"部署"})).take("event_1", content)
    assert result.quote is not None
    assert result.quote.end <= 32_000
    assert result.notes == (Note(NoteCode.LONG_CONTENT, 40_002),)
    assert result.notes[0].message("zh") == (
        "原文共 40002 字；摘录只在前 32000 字内选择，请用 read 继续读取"
    )


def test_quote_stays_inside_the_best_chunk() -> None:
    content = "部署" + "x" * 1000 + "部署" + "y" * 1000
    result = QuoteBudget(frozenset({"部署"})).take("event_1", content, best_chunk=(680, 1480))
    assert result.quote is not None
    assert (result.quote.start, result.quote.end) == (1002 - 120 + 2, 1004)


def test_empty_content_gets_no_quote_and_costs_nothing() -> None:
    budget = QuoteBudget(frozenset())
    result = budget.take("event_1", "")
    assert (result.quote, result.quote_ref, result.notes) == (None, None, ())
    assert budget.remaining == 1000


# ---- word boundaries (issue 27 item 7) ----

_DIARY = (
    "Diary, May 8. Flew to Berlin. Finally met Marco in person at Café Einstein after three "
    "months of video calls. He is taller than his webcam suggests."
)
_RETRO = (
    "Lin Xiao pointed out that the teachers Chen Jing interviewed in Hangzhou in March are still "
    "the most loyal group: they write short notes every day and link them by hand far more than "
    "anyone else.\n\n2. What worked. Offline sync held up. Marco reported 0 lost notes since the "
    "CRDT merge fix of 4月10日, and the median sync latency is 420 ms."
)


def _words_whole(content: str, start: int, end: int) -> bool:
    def inside(i: int) -> bool:
        return 0 < i < len(content) and content[i - 1].isalnum() and content[i].isalnum()

    return not inside(start) and not inside(end)


def test_a_quote_never_starts_inside_a_word() -> None:
    # main gave "hem by hand far more ..." (the window ended on "CRDT" and started anywhere)
    result = QuoteBudget(query_terms("Marco CRDT")).take("retro", _RETRO)
    assert result.quote is not None
    q = result.quote
    assert _RETRO[q.start : q.end] == q.text and q.end - q.start <= 120
    assert q.text.startswith("by hand far more") and q.text.endswith("CRDT")
    assert _words_whole(_RETRO, q.start, q.end)


def test_a_chunk_starting_inside_a_word_is_quoted_from_the_next_word() -> None:
    # main gave "rson at Café Einstein ..." (the best chunk began inside "person")
    region = (_DIARY.index("rson at"), len(_DIARY))
    result = QuoteBudget(query_terms("Einstein")).take("diary", _DIARY, best_chunk=region)
    assert result.quote is not None
    q = result.quote
    assert q.text.startswith("at Café Einstein") and _DIARY[q.start : q.end] == q.text
    assert q.start >= region[0] and _words_whole(_DIARY, q.start, q.end)


def test_a_quote_ends_on_a_word_end_and_keeps_accents_and_apostrophes_whole() -> None:
    content = "x " + "Cafe\u0301 O’Brien's dog " * 12
    start, end = quote_window(content, (0, len(content)), frozenset(), 120)
    assert end - start <= 120 and start == 0
    assert content[:end].endswith(("Cafe\u0301", "O’Brien's", "dog"))


def test_cjk_text_is_cut_at_any_character() -> None:
    content = "会议记录：" + "我们讨论了向量检索要不要换成多语言模型" * 10
    terms = query_terms("多语言模型")
    raw = choose_window(content, (0, len(content)), terms, 40)
    assert quote_window(content, (0, len(content)), terms, 40) == raw


def test_a_word_longer_than_the_shift_is_cut_where_the_window_fell() -> None:
    content = "see " + "h" * 300 + " ok"
    assert quote_window(content, (10, 200), frozenset(), 120) == (10, 130)


def test_snapped_windows_keep_their_terms_on_random_text() -> None:
    rng = np.random.default_rng(7)
    words = ["alpha", "beta", "gamma", "delta", "x", "yy", "zzz", "omega", "kappa", "部署", "上线"]
    for _ in range(300):
        content = " ".join(rng.choice(words, size=int(rng.integers(5, 80))))
        terms = frozenset(rng.choice(["alpha", "gamma", "omega", "部署"], size=2))
        n = len(content)
        a = int(rng.integers(0, n))
        region = (a, int(rng.integers(a + 1, n + 1)))
        length = int(rng.integers(5, 121))
        raw = choose_window(content, region, terms, length)
        s, t = quote_window(content, region, terms, length)
        assert region[0] <= s <= t <= region[1] and t - s <= length
        kept = len(term_spans(content[s:t], terms))
        assert kept >= len(term_spans(content[raw[0] : raw[1]], terms)), (content, region)
