"""Recall-evaluator prompt (Partner's ``MemoryRecallEvaluator``, SPEC §2.8) and its reply model.

One call per recalled memory: does this memory help with the new inputs? The reply is
``{"passed": true|false}``; anything else counts as a failure, which drops the memory.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, StrictBool

from mnemoql.prompts._xml import escape

PROMPT_VERSION = "recall-evaluator-v1"

SYSTEM_PROMPT = """你是记忆筛选器。<new_inputs> 是对话中最新的输入，<memory_slice> 是一段被联想起的记忆
（摘要和原文片段）。判断这段记忆对理解或回应最新输入是否有帮助。
只输出一个 JSON 对象，不要输出其他文字：{"passed": true} 或 {"passed": false}。
与输入无关、只是字面相似、或已经过时无用的记忆，passed 为 false。
"""


class EvaluatorReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    passed: StrictBool


def user_message(inputs: Sequence[str], summary: str, source: Sequence[str]) -> str:
    """The new inputs, then the memory's summary and source messages (already windowed)."""
    lines = "\n".join(f'<input offset="0">{escape(x)}</input>' for x in inputs)
    messages = "\n".join(f"<message>{escape(m)}</message>" for m in source)
    return (
        f"<new_inputs>\n{lines}\n</new_inputs>\n"
        "<memory_slice>\n"
        f"<slice_summary>{escape(summary)}</slice_summary>\n"
        f"<source_messages>\n{messages}\n</source_messages>\n"
        "</memory_slice>"
    )
