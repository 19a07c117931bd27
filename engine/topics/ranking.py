"""Ranking activated memories: how well each matches the conversation, fused with plain vector
search (the ranking half of ``activate``; SPEC §2.8 gives only the candidates).

Partner's cues find candidates but do not say which of them the conversation is about: a date
or an entity can call up dozens of memories in save order, and a topic's score of SPEC §2.5
knows nothing of the lines. So every cue candidate gets a *cue score*::

    similarity (raw cosine of the lines' query vector and the memory, best of summary / chunk)
    + COVERAGE_WEIGHT * share of the lines' terms found in the memory
    + recency (Partner's tiers of SPEC §2.5: 0.30 / 0.22 / 0.15 / 0.08 / 0)
    + CUE_BONUS per further cue that found it (at most MAX_CUE_BONUS)

and the cue list (by cue score) is fused with the vector list of the same lines by reciprocal
rank fusion. Without cues the result *is* the vector list; a memory both lists hold rises above
memories only one of them holds, which is where a cue carries information the embedding missed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.topics.scoring import recency_score

RRF_K = 60
VECTOR_WEIGHT = 1.0
CUE_WEIGHT = 1.0
COVERAGE_WEIGHT = 0.10
CUE_BONUS = 0.02
MAX_CUE_BONUS = 2


@dataclass(slots=True)
class CueEvidence:
    """What the cues and the lines say about one candidate memory."""

    event_id: str
    timestamp_ms: int
    cues: list[int] = field(default_factory=list)  # which cues found it, in cue order
    similarity: float | None = None  # raw cosine to the lines; None without vectors
    coverage: float = 0.0  # share of the lines' terms the memory holds

    def recency(self, now_ms: int) -> float:
        return recency_score(self.timestamp_ms, now_ms)

    def score(self, now_ms: int) -> float:
        """The cue score of the module docstring (higher is better)."""
        bonus = CUE_BONUS * min(max(len(self.cues) - 1, 0), MAX_CUE_BONUS)
        return (
            (self.similarity or 0.0)
            + COVERAGE_WEIGHT * self.coverage
            + self.recency(now_ms)
            + bonus
        )


def rank_cued(evidence: Sequence[CueEvidence], now_ms: int) -> list[str]:
    """Cue candidates best first: cue score DESC, then newer, then the order they came in."""
    order = sorted(
        range(len(evidence)),
        key=lambda i: (-evidence[i].score(now_ms), -evidence[i].timestamp_ms, i),
    )
    return [evidence[i].event_id for i in order]


@dataclass(frozen=True, slots=True)
class Fused:
    event_id: str
    score: float  # the reciprocal-rank sum
    vector_rank: int | None  # 1-based
    cue_rank: int | None


def fuse(
    vector: Sequence[str],
    cued: Sequence[str],
    *,
    vector_weight: float = VECTOR_WEIGHT,
    cue_weight: float = CUE_WEIGHT,
    k: int = RRF_K,
) -> list[Fused]:
    """Weighted reciprocal rank fusion of the vector list and the cue list.

    ``score = vector_weight / (k + vector rank) + cue_weight / (k + cue rank)``, a missing rank
    adding nothing. Ties go to the better vector rank, then the better cue rank, so with no cue
    list the order is exactly ``vector``.

    >>> [f.event_id for f in fuse(["a", "b", "c"], ["c"])]
    ['c', 'a', 'b']
    """
    ranks_v = {e: i for i, e in enumerate(dict.fromkeys(vector), 1)}
    ranks_c = {e: i for i, e in enumerate(dict.fromkeys(cued), 1)}
    out = []
    for event_id in dict.fromkeys([*ranks_v, *ranks_c]):
        rv, rc = ranks_v.get(event_id), ranks_c.get(event_id)
        value = (vector_weight / (k + rv) if rv else 0.0) + (cue_weight / (k + rc) if rc else 0.0)
        out.append(Fused(event_id, value, rv, rc))
    big = len(out) + 1
    out.sort(key=lambda f: (-f.score, f.vector_rank or big, f.cue_rank or big))
    return out
