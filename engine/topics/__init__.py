"""Partner's topic-path and date memory: pure, in-memory semantics (SPEC §2).

    profile   SliceRef, ActivationProfile (float32 weights), stabilise_profile
    tree      TopicMemoryIndex (the topic forest), fix_topic_path, normalise_related
    dates     DateMemoryIndex, local_date (in an explicit zone)
    scoring   CandidateSource, score, TopicRecallScorer, TopicRecallCollector, ScoredCandidate
    codec     to_state / load_state / from_state for topic_based_memory.json
    runtime   TopicRecall: both indexes behind one lock; lookups return a LookupMiss, not raise
    cues      Cue, fix_cues (model post-fix), offline_cues (model-free matcher)
    slices    slice_messages, window_messages (full / compact / abstract), Omitted

No I/O and no clocks: callers pass ``now_ms`` and a time zone, and persist the state dicts.
"""

from mnemoql.engine.topics.codec import from_state, load_state, to_state
from mnemoql.engine.topics.cues import Cue, CueType, fix_cues, offline_cues
from mnemoql.engine.topics.dates import DateMemoryIndex, local_date
from mnemoql.engine.topics.profile import (
    DEFAULT_PROFILE,
    ActivationProfile,
    SliceRef,
    normalise_profile,
    stabilise_profile,
)
from mnemoql.engine.topics.runtime import (
    DateLookup,
    LookupMiss,
    LookupTarget,
    TopicLookup,
    TopicRecall,
    parse_date,
)
from mnemoql.engine.topics.scoring import (
    MS_PER_DAY,
    CandidateSource,
    ScoredCandidate,
    TopicRecallCollector,
    TopicRecallScorer,
    age_days,
    recency_score,
    score,
)
from mnemoql.engine.topics.slices import Omitted, Projection, slice_messages, window_messages
from mnemoql.engine.topics.tree import (
    TopicBinding,
    TopicMemoryIndex,
    TopicNode,
    fix_topic_path,
    normalise_related,
    normalise_topic_path,
)

__all__ = [
    "DEFAULT_PROFILE",
    "MS_PER_DAY",
    "ActivationProfile",
    "CandidateSource",
    "Cue",
    "CueType",
    "DateLookup",
    "DateMemoryIndex",
    "LookupMiss",
    "LookupTarget",
    "Omitted",
    "Projection",
    "ScoredCandidate",
    "SliceRef",
    "TopicBinding",
    "TopicLookup",
    "TopicMemoryIndex",
    "TopicNode",
    "TopicRecall",
    "TopicRecallCollector",
    "TopicRecallScorer",
    "age_days",
    "fix_cues",
    "fix_topic_path",
    "from_state",
    "load_state",
    "local_date",
    "normalise_profile",
    "normalise_related",
    "normalise_topic_path",
    "offline_cues",
    "parse_date",
    "recency_score",
    "score",
    "slice_messages",
    "stabilise_profile",
    "to_state",
    "window_messages",
]
