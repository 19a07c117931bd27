"""Who a question asks about, and who said a message (issue #25, "who in the question").

A chat agent saves each message with its speaker line ("User: ...", "Assistant: ..."). A
question in the first person ("What did I buy at the thrift store?") asks about what the user
said; one about what "you" said ("what sealant you recommended") about the assistant's turns.
On the tune half of the message bench 70 of 75 gold turns are the user's, while a third of the
plain top four are the assistant's long, wordy replies (docs/DECISIONS.md, "Records ranking").

``asker_role`` reads the question; ``role_of`` reads a message's speaker line. Both answer
``"user"``, ``"assistant"`` or None (no speaker line, a named speaker, a question in the third
person): the speaker route then stays out of the ranking.
"""

from __future__ import annotations

import re
from typing import Literal

Role = Literal["user", "assistant"]

# speaker-line words of each role (the offline extractor's role words, split by side)
_USER_WORDS = frozenset({"user", "human", "me", "用户", "我"})
_ASSISTANT_WORDS = frozenset({"assistant", "ai", "bot", "model", "助手", "机器人", "模型"})
_SPEAKER = re.compile(r"^\s*([^\s:：]{1,12})\s*[:：]")
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself)\b|我", re.IGNORECASE)
# the question asks what the assistant said or did earlier in the conversation
_ASSISTANT_SAID = re.compile(
    r"\byou\b[^.?!]{0,40}\b(?:said|told|recommend\w*|suggest\w*|mention\w*|gave|provid\w*|"
    r"list\w*|shar\w*|wrote|explain\w*|propos\w*)\b"
    r"|\bour (?:previous|last|earlier|past) (?:chat|conversation|discussion)\b"
    r"|你(?:说|提到|推荐|建议)",
    re.IGNORECASE,
)


def role_of(content: str) -> Role | None:
    """The role of a message's speaker line, None without one (or for a named speaker)."""
    m = _SPEAKER.match(content[:40])
    if m is None:
        return None
    word = m.group(1).lower()
    if word in _USER_WORDS:
        return "user"
    if word in _ASSISTANT_WORDS:
        return "assistant"
    return None


def role_lines(content: str) -> int:
    """How many lines of ``content`` (its first 4,000 code points) open with a speaker-role
    word: 1 for a message saved on its own, 2 or more for an exchange saved whole."""
    return sum(role_of(line) is not None for line in content[:4000].splitlines())


def asker_role(query: str) -> Role | None:
    """Whose messages a question asks about: the assistant's when it asks what "you" said,
    the user's when it is in the first person, else None."""
    if _ASSISTANT_SAID.search(query):
        return "assistant"
    if _FIRST_PERSON.search(query):
        return "user"
    return None
