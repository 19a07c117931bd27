"""XML text content for prompts: ``&`` and ``<`` escaped, nothing else, so ``->`` in topic paths
stays readable to the model."""

from __future__ import annotations


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;")
