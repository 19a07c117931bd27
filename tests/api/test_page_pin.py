"""One page pinned (issue #30, "a search near its index"): a small fixed memory, one search,
and everything the page and its explain say (events, order, quotes, scores, MMR steps) equal
to what the ranking gave before it was made faster. A change of any result fails here; a
change of the retrieval defaults does not (the weights are given).

Regenerate only for a change that means to rank differently: print ``_record(out)``."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

from mnemoql.engine.retrieval.delivery import Outcome
from mnemoql.engine.retrieval.pipeline import SearchRequest
from tests.api.conftest import Api, offline_settings, running

SAVE = "mutation($input: SaveInput!) { save(input: $input) { eventIds } }"
# the weights this page was ranked with, given so that new defaults leave it alone
WEIGHTS = {
    "lexical": True,
    "lexical_weight": 1.0,
    "coverage_weight": 0.10,
    "window_weight": 0.0,
    "summary_weight": 1.0,
}
SHARED = (
    "The XK-4471-B pump was replaced after the pressure test failed twice. The technician "
    "logged the serial number and the new seal kit in the maintenance book."
)
NOTES = [
    SHARED,
    SHARED + "\n\nA follow-up visit checked the XK-4471-B pump seals again in March.",
    "Pressure tests on the cooling loop passed in February; no pump work was needed then.",
    "The maintenance book lists every seal kit ordered this year, with the supplier's invoice "
    "INV-2024-0032 for the pump parts and the delivery dates.",
    "Lunch order for the team: two pizzas, a salad and lemonade.",
    "The technician's notes say the XK-4471-B pump hums at high load; the vendor says it is "
    "normal for the model and the warranty covers the bearings.",
    SHARED,  # the same content twice: one of them is delivered
    "Café visit: the espresso machine's pump failed; the barista fixed the pressure valve.",
    "Serial numbers of the replaced parts were copied into the spreadsheet by the technician.",
    "The quarterly report mentions the cooling loop and the pump replacement budget.",
]
# Two long notes that share one chunk's text (the chunks are 800 code points every 680), with
# other first sentences: MMR's chunk overlap between them, not their summaries' cosine.
BLOCK = " ".join(
    f"Step {i}: the XK-4471-B pump seal kit was fitted and the technician logged the torque."
    for i in range(1, 11)
)
LONG_A = BLOCK + " The old seals went back to the vendor."
LONG_B = ("Site diary, loading bay entries, week of the pump overhaul. " * 12)[:680] + BLOCK
NOTES += [LONG_A, LONG_B]
QUERY = "When was the XK-4471-B pump replaced, and which seal kit did the technician log?"


def _record(out: Outcome) -> dict[str, Any]:
    page = dataclasses.asdict(out.page)
    page.pop("cursor")
    for item in page["items"]:
        item.pop("create_time")  # the clock's, not the ranking's
    explain = {i: dataclasses.asdict(e) for i, e in out.explain.items()}
    return {"page": page, "explain": explain}


async def _search(api: Api) -> Outcome:
    for i, text in enumerate(NOTES):
        await api.gql(SAVE, input={"content": text, "id": f"note-{i}"})
    return await api.app.state.memory.search(SearchRequest(query=QUERY), "pin")


def _same(got: Any, pinned: Any, where: str = "") -> list[str]:
    """Where ``got`` differs from ``pinned``: floats within 1e-6 relative (float32 sums
    differ in their last bits between CPUs' SIMD widths: a cosine of 0.12486954 on one
    machine is 0.12486953 on another), everything else exactly."""
    if isinstance(pinned, float) and isinstance(got, float):
        return [] if math.isclose(got, pinned, rel_tol=1e-6, abs_tol=1e-9) else [where]
    if isinstance(pinned, dict) and isinstance(got, dict):
        if got.keys() != pinned.keys():
            return [f"{where}: keys {sorted(got)} != {sorted(pinned)}"]
        return [d for k in pinned for d in _same(got[k], pinned[k], f"{where}.{k}")]
    if isinstance(pinned, list) and isinstance(got, list) and len(got) == len(pinned):
        pairs = enumerate(zip(got, pinned, strict=True))
        return [d for i, (a, b) in pairs for d in _same(a, b, f"{where}[{i}]")]
    return [] if got == pinned else [f"{where}: {got!r} != {pinned!r}"]


def test_same_tells_a_changed_page() -> None:
    """The comparison itself: last-bit float noise passes, a rank, an order or a real score
    change does not."""
    assert _same({"a": [0.12486954033374786, "x"]}, {"a": [0.12486952543258667, "x"]}) == []
    assert _same({"a": [0.1249, "x"]}, {"a": [0.1248, "x"]}) == [".a[0]"]
    assert _same({"rank": 3}, {"rank": 2}) and _same(["b", "a"], ["a", "b"])


async def test_the_pinned_page_is_unchanged(tmp_path: Path) -> None:
    async with running(offline_settings(tmp_path, retrieval=WEIGHTS)) as api:
        got = _record(await _search(api))
    assert _same(got, PINNED) == []


# written by the ranking of main at af70a5c, before this branch made it faster
PINNED: dict[str, Any] = {
    "explain": {
        "note-0": {
            "chunk_cosine": 0.6228697896003723,
            "chunk_rank": 3,
            "coverage": 0.7,
            "lexical_rank": 1,
            "lexical_score": 1.7979730871586075,
            "mmr_step": 1,
            "order": "hybrid",
            "redundancy": 0.0,
            "relevance": 1.0,
            "rrf": 0.04839549075403121,
            "score": 0.1183954907540312,
            "summary_cosine": 0.5072506070137024,
            "summary_rank": 2,
        },
        "note-1": {
            "chunk_cosine": 0.5645700693130493,
            "chunk_rank": 5,
            "coverage": 0.7,
            "lexical_rank": 3,
            "lexical_score": 1.561752922782089,
            "mmr_step": 4,
            "order": "hybrid",
            "redundancy": 1.0,
            "relevance": 0.9893167922584838,
            "rrf": 0.04713064713064713,
            "score": 0.11713064713064712,
            "summary_cosine": 0.5072506070137024,
            "summary_rank": 3,
        },
        "note-10": {
            "chunk_cosine": 0.6453145742416382,
            "chunk_rank": 1,
            "coverage": 0.6,
            "lexical_rank": 5,
            "lexical_score": 1.1887268458442037,
            "mmr_step": 3,
            "order": "hybrid",
            "redundancy": 0.5,
            "relevance": 0.9136454432647718,
            "rrf": 0.048171500630517027,
            "score": 0.10817150063051703,
            "summary_cosine": 0.6433820724487305,
            "summary_rank": 1,
        },
        "note-11": {
            "chunk_cosine": 0.6453145742416382,
            "chunk_rank": 2,
            "coverage": 0.6,
            "lexical_rank": 6,
            "lexical_score": 1.1887268458442037,
            "mmr_step": 2,
            "order": "hybrid",
            "redundancy": 0.126219504113188,
            "relevance": 0.8933896076541804,
            "rrf": 0.045773301032768075,
            "score": 0.10577330103276808,
            "summary_cosine": 0.12486952543258667,
            "summary_rank": 9,
        },
    },
    "page": {
        "chain_count": 4,
        "chain_limit": 20,
        "continuations": {
            "expand_concepts": (
                "concept_1",
                "concept_12",
                "concept_13",
                "concept_14",
                "concept_7",
                "concept_8",
                "concept_9",
                "concept_10",
                "concept_11",
            ),
            "nearby_events": (),
        },
        "cursor_ttl_minutes": 15,
        "excluded_count": 0,
        "items": (
            {
                "concepts": ({"id": "concept_1", "name": "XK-4471-B pump"},),
                "event_id": "note-0",
                "notes": (),
                "quote": {
                    "end": 130,
                    "start": 11,
                    "text": "-B pump was replaced after the pressure test failed "
                    "twice. The technician logged the serial number and the "
                    "new seal kit",
                    "total": 155,
                },
                "quote_ref": None,
                "shown": "The XK-4471-B pump was replaced after the pressure test failed twice.",
                "summary": "The XK-4471-B pump was replaced after the pressure test failed twice.",
                "time": None,
                "total": 155,
            },
            {
                "concepts": (
                    {"id": "concept_12", "name": "loading bay entries"},
                    {"id": "concept_13", "name": "pump overhaul"},
                    {"id": "concept_14", "name": "diary"},
                    {"id": "concept_7", "name": "XK-4471-B pump seal kit"},
                    {"id": "concept_8", "name": "technician"},
                    {"id": "concept_9", "name": "torque"},
                ),
                "event_id": "note-11",
                "notes": (),
                "quote": {
                    "end": 800,
                    "start": 680,
                    "text": "Step 1: the XK-4471-B pump seal kit was fitted and the "
                    "technician logged the torque. Step 2: the XK-4471-B "
                    "pump seal kit",
                    "total": 1530,
                },
                "quote_ref": None,
                "shown": "Site diary, loading bay entries, week of the pump overhaul.",
                "summary": "Site diary, loading bay entries, week of the pump overhaul.",
                "time": None,
                "total": 1530,
            },
            {
                "concepts": (
                    {"id": "concept_10", "name": "seals"},
                    {"id": "concept_11", "name": "vendor"},
                    {"id": "concept_7", "name": "XK-4471-B pump seal kit"},
                    {"id": "concept_8", "name": "technician"},
                    {"id": "concept_9", "name": "torque"},
                ),
                "event_id": "note-10",
                "notes": (),
                "quote": None,
                "quote_ref": {"end": 800, "id": "note-11", "start": 680},
                "shown": "Step 1: the XK-4471-B pump seal kit was fitted and the "
                "technician logged the torque.",
                "summary": "Step 1: the XK-4471-B pump seal kit was fitted and the "
                "technician logged the torque.",
                "time": None,
                "total": 889,
            },
            {
                "concepts": ({"id": "concept_1", "name": "XK-4471-B pump"},),
                "event_id": "note-1",
                "notes": (),
                "quote": None,
                "quote_ref": {"end": 130, "id": "note-0", "start": 11},
                "shown": "The XK-4471-B pump was replaced after the pressure test failed twice.",
                "summary": "The XK-4471-B pump was replaced after the pressure test failed twice.",
                "time": None,
                "total": 223,
            },
        ),
        "notes": (),
        "operation": "search",
        "search_again": True,
        "shared_concepts": (
            {"event_ids": ("note-0", "note-1"), "id": "concept_1", "name": "XK-4471-B pump"},
            {
                "event_ids": ("note-11", "note-10"),
                "id": "concept_7",
                "name": "XK-4471-B pump seal kit",
            },
            {"event_ids": ("note-11", "note-10"), "id": "concept_8", "name": "technician"},
            {"event_ids": ("note-11", "note-10"), "id": "concept_9", "name": "torque"},
        ),
        "target": "Event",
    },
}
