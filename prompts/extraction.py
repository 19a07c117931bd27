"""Extraction prompt (v1) and the response model every extraction must satisfy (SPEC §1.3.3).

The same model validates what a chat model returns, what a client sends with ``save``, and what
the offline extractor produces, so all three reach the store in one shape.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

PROMPT_VERSION = "extraction-v2"

SYSTEM_PROMPT = """你是一个记忆抽取器。把用户给出的文本整理成事件、人物、概念、地点以及它们的关系，只输出一个 JSON 对象，不要输出其他文字。

JSON 结构：
{"events":[{"ref":"e1","summary":"一句话摘要，忠于原文","time":"原文中提到的发生时间（可省略）",
            "participants":[{"person":"p1","role":"可选角色"}],"locations":["l1"],"concepts":["c1"]}],
 "persons":[{"ref":"p1","name":"姓名","aliases":[],"description":""}],
 "concepts":[{"ref":"c1","name":"概念名","aliases":[],"description":""}],
 "locations":[{"ref":"l1","name":"地点名","aliases":[]}],
 "attitudes":[{"person":"p1","target":"c1","attitude":"态度","event":"e1"}]}

规则：
- 至少一个事件；每个事件的 summary 不能为空，用原文的语言书写。
- 只抽取原文明确出现的人物、地点和概念；不要编造。
- time 只填原文中写明的发生时间，不要用“当前时间”推断。
- ref 在本次输出内唯一，关系只能引用已列出的 ref。

可选字段 "topic"：这段记忆在话题树中的位置，供以后按话题联想回忆：
 "topic":{"topicPath":"工作->mnemoql->接口设计","relatedTopicPaths":["工作->招聘"],
          "activationProfile":{"activationWeight":0.55,"diffusionWeight":0.35,
                               "contextIndependenceWeight":0.5}}
- topicPath 用 "->" 分隔层级，从宽到窄，一般 1-3 层；优先沿用“现有话题树”中的路径，
  不要编造比需要更深的层级，不要在路径里写 [root]、{slices: N} 之类的标注。
- relatedTopicPaths 只列确实相关的其他话题路径（优先已有路径），没有就给空数组。
- activationWeight：以后值得被主动想起的程度；diffusionWeight：应当联想带出相关话题的程度；
  contextIndependenceWeight：脱离当时上下文也能被理解的程度。三者都在 0 到 1 之间。
- 拿不准话题时省略 topic。
"""

# The topic tree sent to the model is cut at this many characters (whole lines only).
TOPIC_TREE_MAX_CHARS = 6000


def user_message(content: str, now_iso: str, topic_tree: str | None = None) -> str:
    """The header lines (time, then the current topic tree if any), a blank line, the content.

    The header never contains a blank line, so the first ``\n\n`` always ends it.
    """
    header = f"当前时间: {now_iso}"
    tree = topic_tree_block(topic_tree or "")
    return f"{header}\n{tree}\n\n{content}" if tree else f"{header}\n\n{content}"


def topic_tree_block(tree_text: str, max_chars: int = TOPIC_TREE_MAX_CHARS) -> str:
    """``现有话题树:`` and one tree line per line (control characters inside a path become
    spaces), cut at whole lines to ``max_chars``; empty when there is no tree."""
    kept = tree_lines(tree_text, max_chars)
    return "现有话题树:\n" + "\n".join(kept) if kept else ""


def tree_lines(tree_text: str, max_chars: int = TOPIC_TREE_MAX_CHARS) -> list[str]:
    """The lines of a ``getTopicTree`` text, cleaned, at most ``max_chars`` in all ("..." marks
    a cut)."""
    lines = [_CONTROL.sub(" ", ln).strip() for ln in tree_text.split("\r\n")]
    kept: list[str] = []
    size = 0
    for line in filter(None, lines):
        if size + len(line) + 1 > max_chars:
            kept.append("...")
            break
        kept.append(line)
        size += len(line) + 1
    return kept


_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Participant(_Loose):
    person: str
    role: str | None = None


class EventItem(_Loose):
    ref: str
    summary: str
    time: str | None = None
    participants: list[Participant] = Field(default_factory=list)
    locations: list[str] = Field(default_factory=list)
    concepts: list[str] = Field(default_factory=list)


class EntityItem(_Loose):
    ref: str
    name: str
    aliases: list[str] = Field(default_factory=list)
    description: str | None = None


class AttitudeItem(_Loose):
    person: str
    target: str
    attitude: str
    event: str | None = None


class ProfileItem(_Loose):
    """Partner's ``activationProfile``: each weight optional (defaults and clamps apply later).
    NaN and infinities are refused: no clamp makes them a weight."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, allow_inf_nan=False)

    activation_weight: float | None = Field(default=None, alias="activationWeight")
    diffusion_weight: float | None = Field(default=None, alias="diffusionWeight")
    context_independence_weight: float | None = Field(
        default=None, alias="contextIndependenceWeight"
    )


class TopicItem(_Loose):
    """Partner's ``MemoryTopicResult``: where the memory sits in the topic tree (SPEC §2.3)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    topic_path: str = Field(alias="topicPath")
    related_topic_paths: list[str] = Field(default_factory=list, alias="relatedTopicPaths")
    activation_profile: ProfileItem | None = Field(default=None, alias="activationProfile")


class Extraction(_Loose):
    """What one save extracts. Validation errors read like SPEC's "提取结果无效：<reason>".

    ``topic`` is optional and tolerant: a malformed one is dropped (the save then falls back to
    the offline topic rule or a date-only record), never failing the extraction.
    """

    events: list[EventItem] = Field(default_factory=list)
    persons: list[EntityItem] = Field(default_factory=list)
    concepts: list[EntityItem] = Field(default_factory=list)
    locations: list[EntityItem] = Field(default_factory=list)
    attitudes: list[AttitudeItem] = Field(default_factory=list)
    topic: TopicItem | None = None

    @field_validator("topic", mode="wrap")
    @classmethod
    def _tolerant_topic(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(value)
        except ValidationError:
            return None

    @model_validator(mode="after")
    def _refs_resolve(self) -> Extraction:
        if not self.events:
            raise _problem("events_empty", "events must not be empty")
        refs: dict[str, str] = {}
        for kind, items in (
            ("event", self.events),
            ("person", self.persons),
            ("concept", self.concepts),
            ("location", self.locations),
        ):
            for item in items:
                if not item.ref.strip():
                    raise _problem("empty_ref", "a {kind} has an empty ref", kind=kind)
                if item.ref in refs:
                    raise _problem("ref_twice", "ref {ref} is used twice", ref=repr(item.ref))
                refs[item.ref] = kind
        for ev in self.events:
            if not ev.summary.strip():
                raise _problem("empty_summary", "event {ref} has an empty summary", ref=ev.ref)
            for p in ev.participants:
                _expect(refs, p.person, "person", ev.ref)
            for loc in ev.locations:
                _expect(refs, loc, "location", ev.ref)
            for c in ev.concepts:
                _expect(refs, c, "concept", ev.ref)
        for name, items in (
            ("person", self.persons),
            ("concept", self.concepts),
            ("location", self.locations),
        ):
            for item in items:
                if not item.name.strip():
                    raise _problem(
                        "empty_name", "{kind} {ref} has an empty name", kind=name, ref=item.ref
                    )
        for att in self.attitudes:
            _expect(refs, att.person, "person", None)
            if refs.get(att.target) not in {"person", "concept"}:
                raise _problem(
                    "attitude_target",
                    "attitude target {ref} is not a person or concept ref",
                    ref=repr(att.target),
                )
            if att.event is not None:
                _expect(refs, att.event, "event", None)
        return self


def _expect(refs: dict[str, str], ref: str, kind: str, event: str | None) -> None:
    """``ref`` names a ``kind`` of this extraction; ``event``: the event that names it (None:
    an attitude)."""
    if refs.get(ref) == kind:
        return
    if event is None:
        raise _problem(
            "attitude_unknown_ref", "attitude refers to unknown {kind} ref {ref}",
            kind=kind, ref=repr(ref),
        )  # fmt: skip
    raise _problem(
        "unknown_ref", "{event} refers to unknown {kind} ref {ref}",
        event=event, kind=kind, ref=repr(ref),
    )  # fmt: skip


def _problem(name: str, english: str, /, **values: str) -> PydanticCustomError:
    """A validation error of type ``extraction_<name>`` with ``values`` as its context. Its
    wording in both languages is ``engine.messages``' ``extraction.<name>``; ``english`` is
    the same template, pydantic's message (what a model is told when it answered badly)."""
    return PydanticCustomError(f"extraction_{name}", english, values)
