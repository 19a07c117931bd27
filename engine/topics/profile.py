"""Slice references and activation profiles of the Partner topic memory (SPEC §2.1-§2.3).

Partner keeps profile weights as Java ``float`` and widens them to ``double`` when scoring. We keep
every weight rounded to float32 (stored as a Python ``float``) so that the scores computed from
them are bit-for-bit the doubles Java computes, and so that a state file written by either side
reads back to the same profile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def f32(value: float) -> float:
    """``value`` rounded to the nearest float32, widened back: Java's ``(double) 0.65f``."""
    return float(np.float32(value))


DEFAULT_ACTIVATION_WEIGHT = f32(0.55)
DEFAULT_DIFFUSION_WEIGHT = f32(0.35)
DEFAULT_CONTEXT_INDEPENDENCE_WEIGHT = f32(0.50)
NO_RELATED_DIFFUSION_CAP = f32(0.45)
SINGLE_MESSAGE_ACTIVATION_PENALTY = f32(0.05)


def _clamp_or_default(value: float | None, default: float) -> float:
    # Java would carry NaN through Math.clamp and poison every score; a default is kinder.
    if value is None or math.isnan(value):
        return default
    return min(1.0, max(0.0, f32(value)))


@dataclass(frozen=True, slots=True)
class SliceRef:
    """A pointer to one memory slice: ``unit_id`` + ``slice_id``, compared by value."""

    unit_id: str
    slice_id: str

    @property
    def key(self) -> str:
        """The ``unitId:sliceId`` key Partner dedups candidates on."""
        return f"{self.unit_id}:{self.slice_id}"


@dataclass(frozen=True, slots=True)
class ActivationProfile:
    """Recall weights of a binding, each a float32 in ``[0, 1]``.

    Construction always normalises: values are clamped to ``[0, 1]`` and rounded to float32, so
    an instance is valid whatever it was built from. Use :meth:`of` when fields may be missing.
    """

    activation_weight: float = DEFAULT_ACTIVATION_WEIGHT
    diffusion_weight: float = DEFAULT_DIFFUSION_WEIGHT
    context_independence_weight: float = DEFAULT_CONTEXT_INDEPENDENCE_WEIGHT

    def __post_init__(self) -> None:
        normalised = (
            _clamp_or_default(self.activation_weight, DEFAULT_ACTIVATION_WEIGHT),
            _clamp_or_default(self.diffusion_weight, DEFAULT_DIFFUSION_WEIGHT),
            _clamp_or_default(
                self.context_independence_weight, DEFAULT_CONTEXT_INDEPENDENCE_WEIGHT
            ),
        )
        object.__setattr__(self, "activation_weight", normalised[0])
        object.__setattr__(self, "diffusion_weight", normalised[1])
        object.__setattr__(self, "context_independence_weight", normalised[2])

    @classmethod
    def of(
        cls,
        activation_weight: float | None = None,
        diffusion_weight: float | None = None,
        context_independence_weight: float | None = None,
    ) -> ActivationProfile:
        """A profile from nullable fields: each missing field takes its default."""
        return cls(
            _clamp_or_default(activation_weight, DEFAULT_ACTIVATION_WEIGHT),
            _clamp_or_default(diffusion_weight, DEFAULT_DIFFUSION_WEIGHT),
            _clamp_or_default(context_independence_weight, DEFAULT_CONTEXT_INDEPENDENCE_WEIGHT),
        )


DEFAULT_PROFILE = ActivationProfile()


def normalise_profile(profile: ActivationProfile | None) -> ActivationProfile:
    """``None`` becomes the defaults (0.55, 0.35, 0.50); anything else is already normal."""
    return DEFAULT_PROFILE if profile is None else profile


def stabilise_profile(
    profile: ActivationProfile | None, *, has_related: bool, message_count: int
) -> ActivationProfile:
    """The extractor's post-processing of a model-given profile (SPEC §2.3).

    Without related paths the diffusion weight is capped at 0.45; a slice of at most one message
    loses 0.05 activation (float32 arithmetic, clamped), as in ``MemoryRecallProfileExtractor``.
    """
    base = normalise_profile(profile)
    diffusion = base.diffusion_weight
    activation = base.activation_weight
    if not has_related:
        diffusion = min(diffusion, NO_RELATED_DIFFUSION_CAP)
    if message_count <= 1:
        activation = float(np.float32(activation) - np.float32(SINGLE_MESSAGE_ACTIVATION_PENALTY))
    return ActivationProfile(activation, diffusion, base.context_independence_weight)
