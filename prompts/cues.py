"""Recall-cue prompt (Partner's ``MemoryRecallCueExtractor``, SPEC §2.8) and its reply model.

The model reads the recent conversation inputs and the topic tree and names the topics and
days worth recalling. Its reply is ``{"matches": [{"type": "topic"|"date", "text": ...}]}``;
``engine.topics.fix_cues`` cleans it afterwards (topics fixed, other types dropped).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from mnemoql.prompts._xml import escape
from mnemoql.prompts.extraction import tree_lines

PROMPT_VERSION = "recall-cues-v1"

SYSTEM_PROMPT = """你是记忆回忆线索提取器。根据 <memory_input_entries> 中最近的对话输入，判断需要回忆哪些记忆，
只输出一个 JSON 对象，不要输出其他文字：

{"matches":[{"type":"topic","text":"工作->mnemoql->接口设计"},{"type":"date","text":"2026-03-01"}]}

规则：
- type 只能是 "topic" 或 "date"。
- topic 的 text 是 <memory_topic_tree> 中的话题路径，用 "->" 分隔层级；优先使用树中已有的节点，
  不要编造比树中更深的节点，不要带 [root]、{slices: N} 之类的标注。
- date 的 text 是 yyyy-MM-dd；只有当输入能确定到具体某一天时才输出（可参照 received_date_time
  推算“昨天”“上周三”等）。
- 不要输出含糊、宽泛、与输入无关的话题。
- 拿不准时返回 {"matches":[]}。
"""


class CueMatch(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str | None = None
    text: str | None = None


class CueReply(BaseModel):
    """The model's reply: null entries are dropped by ``fix_cues``; anything malformed is a
    failure (no cues)."""

    model_config = ConfigDict(extra="ignore")

    matches: list[CueMatch | None] = Field(default_factory=list)


def user_message(inputs: Sequence[str], received: datetime, topic_tree: str) -> str:
    """One input entry (the lines received together at ``received``) and the topic tree
    (CRLF-joined as Partner's ``getTopicTree``, cut at whole lines for very large trees).

    Lines have no times of their own, so every ``interval-to-first`` is 0.
    """
    items = "".join(f'<input interval-to-first="0">{escape(line)}</input>' for line in inputs)
    stamp = received.replace(tzinfo=None).isoformat(timespec="seconds")
    tree = "\r\n".join(tree_lines(topic_tree))
    return (
        "<memory_input_entries>\n"
        "  <memory_input_entry>\n"
        f"    <received_date_time>{escape(stamp)}</received_date_time>\n"
        f"    <inputs>{items}</inputs>\n"
        "  </memory_input_entry>\n"
        "</memory_input_entries>\n"
        f"<memory_topic_tree>\n{escape(tree)}\n</memory_topic_tree>"
    )
