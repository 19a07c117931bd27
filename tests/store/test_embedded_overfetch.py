"""The embedded ANN route's adaptive over-fetch (issue 30 item 4): it starts at
``first_overfetch`` x the page and grows (up to ``overfetch`` x) only while the exactly rescored
page is unstable, and returns exactly the exact scan's pages, near ties included."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from mnemoql.engine.models import EMPTY_FILTERS, MemoryMeta
from mnemoql.engine.store.embedded import EmbeddedStore
from mnemoql.engine.store.embedded._ann import AnnSettings
from mnemoql.engine.store.embedded._hnsw import Hnsw
from mnemoql.engine.store.embedded._rescore import order_by_score
from mnemoql.engine.store.embedded._rowsets import among, distinct
from tests.store._builders import chunks_for, event, plan

D = 32
N = 2_500  # events: 2,500 summary vectors and 2,500 chunk vectors
LIMIT = 40
META = MemoryMeta("test-embedder", D, "2026-03-01T09:00:00+08:00")
ADAPTIVE = AnnSettings(min_vectors=0, first_overfetch=3, overfetch=10)


def unit(v: np.ndarray) -> np.ndarray:
    out: np.ndarray = (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(np.float32)
    return out


def clustered(rng: np.random.Generator, n: int) -> np.ndarray:
    """Vectors around 50 centres: dense neighbourhoods, as text embeddings have."""
    centres = unit(rng.standard_normal((50, D)))
    return unit(centres[rng.integers(0, 50, n)] + 0.35 * unit(rng.standard_normal((n, D))))


def ring(rng: np.random.Generator, q: np.ndarray, n: int, cosine: float) -> np.ndarray:
    """``n`` unit vectors at nearly the same cosine to ``q`` (within 0.002): a page whose last
    places are near ties with far more events than a first fetch holds."""
    # around one shared direction, so the near ties are also each other's neighbours (HNSW
    # reaches them from one another, as it does a topic's texts)
    other = rng.standard_normal(D) + 0.8 * rng.standard_normal((n, D)).astype(np.float32)
    other -= np.outer(other @ q, q)
    c = cosine + rng.uniform(0, 0.002, n)
    return unit(c[:, None] * q + np.sqrt(1 - c**2)[:, None] * unit(other))


async def memory(path: Path, vecs: np.ndarray, ann: AnnSettings) -> EmbeddedStore:
    rng = np.random.default_rng(5)
    events = []
    for i, v in enumerate(vecs):
        ev = event(f"e{i:05d}", v, content=f"event {i} " + "y" * 40)
        near = unit(v + 0.15 * unit(rng.standard_normal(D)))
        ev.chunks = chunks_for(ev.content, [near])
        events.append(ev)
    store = EmbeddedStore(path, ann=ann)
    await store.open()
    await store.apply_save(plan(events, [], [], meta=META))
    db = store._database
    if ann.mode == "auto":  # built inline at this size
        assert all(db.ann.index(k, db.generation) is not None for k in ("summary", "chunk"))
    return store


@contextmanager
def fetches(store: EmbeddedStore) -> Iterator[list[int]]:
    """The key counts each index search of ``store`` asks for, in order."""
    asked: list[int] = []
    original = Hnsw.search

    def search(self: Hnsw, query: np.ndarray, count: int) -> np.ndarray | None:
        asked.append(count)
        return original(self, query, count)

    Hnsw.search = search  # type: ignore[method-assign]
    try:
        yield asked
    finally:
        Hnsw.search = original  # type: ignore[method-assign]


def pages(pool: object) -> list[list[tuple[str, int | None]]]:
    """Both routes' pages: event ids and best chunks, in order."""
    return [[(h.event_id, h.chunk_index) for h in getattr(pool, r)] for r in ("summary", "chunk")]


def same(got: object, want: object) -> None:
    """The same pages, scores equal up to float rounding (the scan and the rescoring sum in
    other orders)."""
    assert pages(got) == pages(want)
    for route in ("summary", "chunk"):
        scores = [h.score for h in getattr(want, route)]
        assert [h.score for h in getattr(got, route)] == pytest.approx(scores, abs=1e-5)


@pytest.fixture
async def spaces(tmp_path: Path) -> tuple[EmbeddedStore, EmbeddedStore, np.ndarray]:
    rng = np.random.default_rng(17)
    vecs = clustered(rng, N)
    anchor = unit(rng.standard_normal(D))
    vecs[:200] = ring(rng, anchor, 200, 0.9)  # 200 near ties at the top for ``anchor``
    exact = await memory(tmp_path / "exact", vecs, AnnSettings(mode="exact"))
    ann = await memory(tmp_path / "ann", vecs, ADAPTIVE)
    yield exact, ann, anchor  # type: ignore[misc]
    await exact.close()
    await ann.close()


async def test_adaptive_pages_are_the_exact_scans_and_mostly_need_one_fetch(
    spaces: tuple[EmbeddedStore, EmbeddedStore, np.ndarray],
) -> None:
    exact, ann, _ = spaces
    rng = np.random.default_rng(3)
    view = ann._database.events
    queries = unit(view.vecs[rng.integers(200, N, 150)] + 0.3 * unit(rng.standard_normal((150, D))))
    single = 0
    for q in queries:
        want = await exact.route_pool(q, EMPTY_FILTERS, frozenset(), LIMIT)
        with fetches(ann) as asked:
            got = await ann.route_pool(q, EMPTY_FILTERS, frozenset(), LIMIT)
        same(got, want)
        assert asked[:2] == [3 * LIMIT, 3 * LIMIT]  # both indexes, the first fetch
        assert max(asked) <= 10 * LIMIT
        single += len(asked) == 2
    assert single >= len(queries) // 2, f"only {single} of {len(queries)} kept the first fetch"


async def test_near_ties_beyond_the_first_fetch_make_it_grow_to_the_exact_page(
    spaces: tuple[EmbeddedStore, EmbeddedStore, np.ndarray],
) -> None:
    exact, ann, anchor = spaces
    rng = np.random.default_rng(9)
    queries = unit(anchor + 0.01 * unit(rng.standard_normal((20, D))))
    for q in queries:
        want = await exact.route_pool(q, EMPTY_FILTERS, frozenset(), LIMIT)
        with fetches(ann) as asked:
            got = await ann.route_pool(q, EMPTY_FILTERS, frozenset(), LIMIT)
        same(got, want)
        assert len(asked) > 2 and max(asked) > 3 * LIMIT, "the page was near ties: it must grow"
    # without growth the first fetch holds 120 of the 200 near ties and misses some of the
    # exact page: the growth is what finds them
    db = ann._database
    db.ann.settings = AnnSettings(min_vectors=0, first_overfetch=3, overfetch=3)
    missed = 0
    for q in queries:
        want = await exact.route_pool(q, EMPTY_FILTERS, frozenset(), LIMIT)
        got = await ann.route_pool(q, EMPTY_FILTERS, frozenset(), LIMIT)
        missed += pages(got) != pages(want)
    assert missed > 0


async def test_the_single_route_grows_too(
    spaces: tuple[EmbeddedStore, EmbeddedStore, np.ndarray],
) -> None:
    """The near ties are summaries; the chunks lie 0.15 away from them, spread out enough for
    the chunk route's first fetch to be stable."""
    exact, ann, anchor = spaces
    for route, grows in (("summary", True), ("chunk", False)):
        want = await exact.route(route, anchor, EMPTY_FILTERS, frozenset(), LIMIT)  # type: ignore[arg-type]
        with fetches(ann) as asked:
            got = await ann.route(route, anchor, EMPTY_FILTERS, frozenset(), LIMIT)  # type: ignore[arg-type]
        assert [(h.event_id, h.chunk_index) for h in got] == [
            (h.event_id, h.chunk_index) for h in want
        ]
        assert asked[0] == 3 * LIMIT and (len(asked) > 1) == grows


async def test_a_ledger_of_other_questions_adds_at_most_a_page_of_keys(
    spaces: tuple[EmbeddedStore, EmbeddedStore, np.ndarray],
) -> None:
    """A session given 600 events far from the query (its other questions) asks each index for
    the first fetch and one page more, not for 600 more keys (bench/results/search_ledger.md),
    after a top-``LIMIT`` look at the summary index; its pages stay the exact scan's."""
    exact, ann, _ = spaces
    rng = np.random.default_rng(4)
    view = ann._database.events
    queries = unit(view.vecs[rng.integers(200, N, 30)] + 0.3 * unit(rng.standard_normal((30, D))))
    for q in queries:
        far = np.argsort(view.vecs[: view.n] @ q)[:600]
        ledger = frozenset(view.ids[int(r)] for r in far)
        want = await exact.route_pool(q, EMPTY_FILTERS, ledger, LIMIT)
        with fetches(ann) as asked:
            got = await ann.route_pool(q, EMPTY_FILTERS, ledger, LIMIT)
        same(got, want)
        assert asked[0] == LIMIT  # the look: would a given event stand on this page?
        assert asked[1:3] == [4 * LIMIT, 4 * LIMIT]  # 3 x the page, and one page of room


async def test_a_follow_up_starts_deeper(
    spaces: tuple[EmbeddedStore, EmbeddedStore, np.ndarray],
) -> None:
    """The same question after its first page was given: those events stand above this page,
    which lies deeper than a first call's, so the first fetch is grown once (x6, plus the given
    events), and the pages are the exact scan's without them."""
    exact, ann, _ = spaces
    rng = np.random.default_rng(6)
    view = ann._database.events
    queries = unit(view.vecs[rng.integers(200, N, 30)] + 0.3 * unit(rng.standard_normal((30, D))))
    for q in queries:
        first = await exact.route_pool(q, EMPTY_FILTERS, frozenset(), LIMIT)
        given = frozenset(h.event_id for h in first.summary[:8])
        want = await exact.route_pool(q, EMPTY_FILTERS, given, LIMIT)
        with fetches(ann) as asked:
            got = await ann.route_pool(q, EMPTY_FILTERS, given, LIMIT)
        same(got, want)
        assert asked[0] == LIMIT and asked[1:3] == [6 * LIMIT + 8, 6 * LIMIT + 8]


@pytest.mark.parametrize("seed", range(20))
def test_row_sets_answer_as_numpy(seed: int) -> None:
    """The candidates' row sets (``distinct``: each index's rows and their union; ``among``:
    page stability and exclusions) give numpy's answers, with values repeated, unsorted, out
    of range, absent or none at all."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1000, int(rng.integers(0, 300)))
    b = rng.integers(0, 1000, int(rng.integers(0, 40)))
    for got, want in ((distinct(a), np.unique(a)), (distinct(a, b), np.union1d(a, b))):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    rows = np.unique(a)
    values = rng.integers(-5, 1010, int(rng.integers(0, 200)))
    if rows.size and seed % 2:
        values = np.concatenate([values, rng.choice(rows, 30)])  # repeats of real rows
    given = among(rows, values)
    assert given.dtype == np.bool_ and np.array_equal(given, np.isin(rows, values))


@pytest.mark.parametrize("seed", range(20))
def test_the_page_order_is_score_then_id_with_or_without_ties(seed: int) -> None:
    """``order_by_score`` orders by (score DESC, id ASC) as a plain sort of every candidate
    does, its partition keeping every score tied with the cut (scores drawn from five values
    make ties; ids sort as strings, event_10 before event_2)."""
    rng = np.random.default_rng(seed)
    ids = [f"event_{i}" for i in range(500)]
    for _ in range(50):
        n = int(rng.integers(0, 200))
        tied = rng.integers(0, 5, n) / 4 if seed % 2 else rng.random(n)
        scores = tied.astype(np.float32)
        rows = rng.choice(500, n, replace=False).astype(np.int64)
        limit = int(rng.integers(0, 60))
        plain = sorted(range(n), key=lambda j: (-float(scores[j]), ids[int(rows[j])]))
        assert order_by_score(scores, rows, ids, limit) == plain[:limit]
