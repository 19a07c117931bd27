"""Entity-name candidates in conversation lines: the substrings that could be a stored name.

Pure text work; the activator looks the candidates up in the store (``find_entities``).
"""

from __future__ import annotations

import re

from mnemoql.engine.text import normalise_name

NAME_CANDIDATES = 8_000
NAME_MAX_WORDS = 4
NAME_MAX_CJK = 8

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_CJK}]+")
# letters and digits (with .+#&'’- inside) and no CJK: "berlin" in "我在berlin工作"
_LETTER = rf"[^\W_{_CJK}]"
_LATIN_RUN = re.compile(rf"{_LETTER}(?:(?:{_LETTER}|[.+#&'’-])*{_LETTER})?")
_EDGE = "\"'“”‘’()[]{}<>«»,.;:!?，。；：！？、…"


def name_candidates(text: str) -> list[str]:
    """Normalised substrings of ``text`` that could be an entity's name or alias.

    Runs of 1-4 words (edge punctuation stripped), CJK substrings of 2-8 characters and latin
    runs inside mixed words; at least 2 characters each. Ordered by first appearance, longer
    first at one position, at most ``NAME_CANDIDATES``.
    """
    found: dict[str, tuple[int, int]] = {}

    def add(candidate: str, start: int) -> None:
        key = normalise_name(candidate)
        if len(key) >= 2 and key not in found:
            found[key] = (start, -len(key))

    words = []
    for m in re.finditer(r"\S+", text):
        word = m.group().strip(_EDGE)
        if word:
            words.append((m.start() + m.group().find(word), word))
    for i, (start, _) in enumerate(words):
        for n in range(1, NAME_MAX_WORDS + 1):
            if i + n <= len(words):
                add(" ".join(w for _, w in words[i : i + n]), start)
    for m in _CJK_RUN.finditer(text):
        run = m.group()
        for i in range(len(run)):
            for size in range(2, min(NAME_MAX_CJK, len(run) - i) + 1):
                add(run[i : i + size], m.start() + i)
    for m in _LATIN_RUN.finditer(text):
        add(m.group(), m.start())
    return sorted(found, key=found.__getitem__)[:NAME_CANDIDATES]
