"""Partner's topic recall: candidate sources, the scorer and the collector (SPEC §2.4, §2.5).

Score of a candidate binding, all in doubles::

    source_score + recency + 0.50*activation + 0.30*context_independence
                 + 0.20*relation_factor*diffusion

Partner declares ``source_score`` and ``relation_factor`` as Java ``float`` constants (``0.65f``)
that are widened to ``double``; profile weights are floats too. We use the same float32-widened
values (``f32(0.65) == 0.6499999761581421``) and the same left-to-right evaluation, so scores
equal Java's to the last bit and ties break the same way. The ``0.50/0.30/0.20`` coefficients and
the recency table are ``double`` literals in Java and stay plain floats here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from mnemoql.engine.topics.profile import SliceRef, f32
from mnemoql.engine.topics.tree import TopicBinding, TopicMemoryIndex, TopicNode

MS_PER_DAY = 86_400_000

TOPIC_RESULT_LIMIT = 5
PARENT_CANDIDATE_LIMIT = 2
RELATED_CANDIDATE_LIMIT = 2

ACTIVATION_COEFFICIENT = 0.50
CONTEXT_INDEPENDENCE_COEFFICIENT = 0.30
DIFFUSION_COEFFICIENT = 0.20

# (max age in whole days, recency bonus), checked in order; older gets 0.
RECENCY_TABLE: tuple[tuple[int, float], ...] = ((1, 0.30), (3, 0.22), (7, 0.15), (30, 0.08))


class CandidateSource(StrEnum):
    """Where a candidate came from: the queried node, a related path, or the parent node."""

    PRIMARY = "PRIMARY"
    RELATED = "RELATED"
    PARENT = "PARENT"

    @property
    def source_score(self) -> float:
        return _SOURCE_WEIGHTS[self][0]

    @property
    def relation_factor(self) -> float:
        return _SOURCE_WEIGHTS[self][1]


_SOURCE_WEIGHTS: dict[CandidateSource, tuple[float, float]] = {
    CandidateSource.PRIMARY: (f32(1.00), f32(0.30)),
    CandidateSource.RELATED: (f32(0.65), f32(1.00)),
    CandidateSource.PARENT: (f32(0.45), f32(0.20)),
}


def age_days(timestamp_ms: int, now_ms: int) -> int:
    """Whole days since ``timestamp_ms``; a future timestamp is age 0."""
    return max(0, now_ms - timestamp_ms) // MS_PER_DAY


def recency_score(timestamp_ms: int, now_ms: int) -> float:
    days = age_days(timestamp_ms, now_ms)
    for max_days, bonus in RECENCY_TABLE:
        if days <= max_days:
            return bonus
    return 0.0


def score(source: CandidateSource, binding: TopicBinding, now_ms: int) -> float:
    """The recall score of ``binding`` reached through ``source``, at time ``now_ms``."""
    profile = binding.profile
    return (
        source.source_score
        + recency_score(binding.timestamp_ms, now_ms)
        + ACTIVATION_COEFFICIENT * profile.activation_weight
        + CONTEXT_INDEPENDENCE_COEFFICIENT * profile.context_independence_weight
        + DIFFUSION_COEFFICIENT * source.relation_factor * profile.diffusion_weight
    )


class TopicRecallScorer:
    """Partner's ``TopicRecallScorer`` with the clock passed in (``now_ms``)."""

    def score(self, source: CandidateSource, binding: TopicBinding, now_ms: int) -> float:
        return score(source, binding, now_ms)


@dataclass(frozen=True, slots=True)
class ScoredCandidate:
    """One recalled slice and why: its source, node, score and binding timestamp."""

    ref: SliceRef
    source: CandidateSource
    score: float
    timestamp_ms: int
    topic_path: str


class TopicRecallCollector:
    """Collects, scores, dedups and ranks the slices recalled for one topic node."""

    def __init__(
        self,
        scorer: TopicRecallScorer | None = None,
        *,
        result_limit: int = TOPIC_RESULT_LIMIT,
        parent_limit: int = PARENT_CANDIDATE_LIMIT,
        related_limit: int = RELATED_CANDIDATE_LIMIT,
    ) -> None:
        self.scorer = scorer or TopicRecallScorer()
        self.result_limit = result_limit
        self.parent_limit = parent_limit
        self.related_limit = related_limit

    def collect(self, index: TopicMemoryIndex, path: str, now_ms: int) -> list[ScoredCandidate]:
        """Candidates for ``path``; empty if the node does not exist or nothing is bound."""
        node = index.find(path)
        return [] if node is None else self.collect_node(index, node, now_ms)

    def collect_node(
        self, index: TopicMemoryIndex, node: TopicNode, now_ms: int
    ) -> list[ScoredCandidate]:
        """PRIMARY (all bindings), PARENT (2 newest), RELATED (2 newest per path); top 5.

        Related paths come from the primary bindings, each weighted by the highest diffusion
        weight declaring it; a weight of 0 disables that path. Children are never searched.
        """
        candidates: dict[str, ScoredCandidate] = {}
        related: dict[str, float] = {}
        for binding in self._newest(node, None):
            for path in binding.related_paths:
                related[path] = max(
                    related.get(path, binding.profile.diffusion_weight),
                    binding.profile.diffusion_weight,
                )
            self._offer(candidates, node, binding, CandidateSource.PRIMARY, now_ms)
        if node.parent is not None:
            for binding in self._newest(node.parent, self.parent_limit):
                self._offer(candidates, node.parent, binding, CandidateSource.PARENT, now_ms)
        for path, weight in related.items():
            target = index.find(path) if weight > 0.0 else None
            if target is None:
                continue
            for binding in self._newest(target, self.related_limit):
                self._offer(candidates, target, binding, CandidateSource.RELATED, now_ms)
        ranked = sorted(candidates.values(), key=lambda c: (-c.score, -c.timestamp_ms))
        return ranked[: self.result_limit]

    @staticmethod
    def _newest(node: TopicNode, limit: int | None) -> list[TopicBinding]:
        # A stable sort: equal timestamps keep insertion order, as Java's List.sort does.
        ordered = sorted(node.bindings, key=lambda b: -b.timestamp_ms)
        return ordered if limit is None else ordered[:limit]

    def _offer(
        self,
        candidates: dict[str, ScoredCandidate],
        node: TopicNode,
        binding: TopicBinding,
        source: CandidateSource,
        now_ms: int,
    ) -> None:
        value = self.scorer.score(source, binding, now_ms)
        key = binding.slice_ref.key
        current = candidates.get(key)
        # Only a strictly higher score replaces; the key keeps its first position either way.
        if current is None or value > current.score:
            candidates[key] = ScoredCandidate(
                binding.slice_ref, source, value, binding.timestamp_ms, node.path
            )
