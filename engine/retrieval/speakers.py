"""Who a question asks about, and who said a message (issue #25, "who in the question").

A chat agent saves each message with its speaker line ("User: ...", "Assistant: ..."). A
question in the first person ("What did I buy at the thrift store?") asks about what the user
said; one about what "you" said ("what sealant you recommended") about the assistant's turns.
On the tune half of the message bench 70 of 75 gold turns are the user's, while a third of the
plain top four are the assistant's long, wordy replies (docs/DECISIONS.md, "Records ranking").

``asker_role`` reads the question; ``role_of`` reads a message's speaker line. Both answer
``"user"``, ``"assistant"`` or None (no speaker line, a named speaker, a question in the third
person): the speaker route then stays out of the ranking.

A question in the third person may name a speaker ("What did Caroline research?"): since
issue #11 a named speaker is a Person the message MENTIONS. ``named_people`` gives the names a
question may hold (capitalised words and pairs of them, English); the person route
(``routes.person_route``) keeps those the memory knows as Persons and ranks their
messages and mentions.
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


# A capitalised word, or two in a row ("Mary Ann"), with an optional possessive ("Alex's").
_NAME = re.compile(r"\b([A-Z][a-z]+(?:[ -][A-Z][a-z]+)?)(?:'s|’s)?\b")
# How many names of one question are looked up (each is a store lookup).
MAX_NAMES = 4
# Capitalised words that open a question or sentence and are not names.
_NOT_NAMES_TEXT = """
    what who whom whose when where why how which did do does is are was were can could would
    will should have has had the a an and but or if so please tell remind give list in on at
    for from with to my our your his her their this that these those there
"""
_NOT_NAMES = frozenset(_NOT_NAMES_TEXT.split())


def named_people(query: str) -> list[str]:
    """The capitalised words of ``query`` (pairs first, then each word of a pair), in order,
    at most ``MAX_NAMES``: the names to look up as Persons. Lowercase names and CJK names are
    not read (the question's words are not all looked up: one store read per name)."""
    out: dict[str, None] = {}
    for m in _NAME.finditer(query):
        parts = [p for p in re.split(r"[ -]", m.group(1)) if p.lower() not in _NOT_NAMES]
        if len(parts) == 2:
            out.setdefault(m.group(1), None)
        for part in parts:
            out.setdefault(part, None)
    return list(out)[:MAX_NAMES]


# A question that asks when (the day, the date, how long ago), English and Chinese.
_WHEN = re.compile(
    r"\bwhen\b|\b(?:what|which)\s+(?:day|date|days|dates|month|year|week|weekend|time of year)\b"
    r"|\bhow\s+(?:long\s+ago|many\s+(?:days|weeks|months|years))\b|\bago\b"
    r"|什么时候|哪天|哪一天|几号|几月|哪年|多久|多长时间",
    re.IGNORECASE,
)


def asks_when(query: str) -> bool:
    """Whether a question asks when something happened (or how long ago, or before what)."""
    return _WHEN.search(query) is not None


_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_STATES = re.compile(r"\b(?:i|i'm|i've|i'd|my|we|we've|we're|our)\b|我", re.IGNORECASE)


def states_in_first_person(content: str) -> bool:
    """Whether a message (its first 4,000 code points, past its speaker line) holds a sentence
    in the first person that is not a question: "I've been relying on food delivery lately."
    states a fact; "Can you remind me what I paid?" asks for one."""
    text = content[:4000]
    if (m := _SPEAKER.match(text[:40])) is not None:
        text = text[m.end() :]
    for sentence in _SENTENCE.findall(text):
        s = sentence.strip()
        if s and not s.endswith(("?", "？")) and _STATES.search(s):
            return True
    return False
