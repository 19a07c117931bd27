"""Ranking activated memories: how well each matches the conversation, fused with plain vector
search (the ranking half of ``activate``; SPEC §2.8 gives only the candidates).

Partner's cues find candidates but do not say which of them the conversation is about: a date
or an entity can call up dozens of memories in save order, and a topic's score of SPEC §2.5
knows nothing of the lines. So the candidates are the plain vector search of the lines joined
with every memory a cue called up, and each is ranked by its *relevance*::

    similarity                      mean of the summary and best-chunk cosines to the lines
    + CUE_BOOST * specificity       summed over the cues that found it (0 for none)
    + COVERAGE_WEIGHT * coverage    share of the lines' terms it holds (cue-activated only)
    + RECENCY_WEIGHT * recency      Partner's tiers of SPEC §2.5 (cue-activated only)

A cue's *specificity* is how much it narrows the memory: a cue calling up ``n`` of the ``N``
memories counts ``log(N/n) / log N`` -- 1 for one memory, 0 for all of them (a user's own name,
a topic everything is filed under). Without cues the order is exactly the vector search's; a
memory that specific cues point at rises by what they say.

Why sums of scores and not reciprocal rank fusion: on MADial (``bench/madial_activate.py``)
RRF of per-cue lists with the vector list lost to the vector list alone at every weight we
tried, because a cue list ranks its members from 1 whatever their similarity, so a vague cue's
best member jumps over closer memories. A bounded additive boost cannot move a memory past one
that is more than ``CUE_BOOST`` closer to the lines. The weights are on the scale of e5
cosines, where neighbouring memories differ by about 0.01.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from mnemoql.engine.topics.scoring import RECENCY_TABLE, recency_score

CUE_BOOST = 0.01
COVERAGE_WEIGHT = 0.01
# the freshest tier (0.30, within a day) is worth as much as a cue naming a single memory
RECENCY_WEIGHT = CUE_BOOST / RECENCY_TABLE[0][1]


def specificity(members: int, total: int) -> float:
    """How much a cue that calls up ``members`` of ``total`` memories narrows, in [0, 1].

    >>> specificity(1, 100), specificity(10, 100), specificity(100, 100)
    (1.0, 0.5, 0.0)
    """
    if members <= 0 or members >= total:
        return 0.0
    return math.log(total / members) / math.log(total)


@dataclass(slots=True)
class CueEvidence:
    """What the cues and the lines say about one candidate memory."""

    event_id: str
    timestamp_ms: int
    cues: list[int] = field(default_factory=list)  # which cues found it, in cue order
    similarity: float | None = None  # to the lines; None without vectors
    coverage: float = 0.0  # share of the lines' terms the memory holds
    specificity: float = 0.0  # summed over ``cues``

    def recency(self, now_ms: int) -> float:
        return recency_score(self.timestamp_ms, now_ms)

    def cue_score(self, now_ms: int) -> float:
        """What the cues add to the similarity (0 for a memory no cue found)."""
        if not self.cues:
            return 0.0
        return (
            CUE_BOOST * self.specificity
            + COVERAGE_WEIGHT * self.coverage
            + RECENCY_WEIGHT * self.recency(now_ms)
        )

    def relevance(self, now_ms: int) -> float:
        return (self.similarity or 0.0) + self.cue_score(now_ms)


@dataclass(frozen=True, slots=True)
class Ranked:
    event_id: str
    relevance: float
    vector_rank: int | None  # 1-based rank in the vector search
    cue_rank: int | None  # 1-based rank among the cue-activated memories


def cue_specificity(members: Iterable[Sequence[str]], total: int) -> dict[str, float]:
    """Each memory's specificity summed over the cues (one id list per cue) that found it."""
    out: dict[str, float] = {}
    for ids in members:
        weight = specificity(len(ids), total)
        for event_id in dict.fromkeys(ids):
            out[event_id] = out.get(event_id, 0.0) + weight
    return out


def rank(vector: Sequence[str], evidence: Sequence[CueEvidence], now_ms: int) -> list[Ranked]:
    """The vector search's memories and the cue-activated ones, by relevance DESC; ties go to
    the better vector rank, then the newer memory, then the id. ``evidence`` must hold every
    memory of ``vector`` that is to be ranked (others are skipped)."""
    ranks_v = {e: i for i, e in enumerate(dict.fromkeys(vector), 1)}
    known = {e.event_id: e for e in evidence}
    pool = [known[i] for i in dict.fromkeys([*ranks_v, *known]) if i in known]
    pool = [e for e in pool if e.event_id in ranks_v or e.cues]
    big = len(pool) + 1
    pool.sort(
        key=lambda e: (
            -e.relevance(now_ms),
            ranks_v.get(e.event_id, big),
            -e.timestamp_ms,
            e.event_id,
        )
    )
    cue_ranks = {e.event_id: i for i, e in enumerate((e for e in pool if e.cues), 1)}
    return [
        Ranked(e.event_id, e.relevance(now_ms), ranks_v.get(e.event_id), cue_ranks.get(e.event_id))
        for e in pool
    ]
