"""Extraction prompt (v1) and the response model every extraction must satisfy (SPEC §1.3.3).

The same model validates what a chat model returns, what a client sends with ``save``, and what
the offline extractor produces, so all three reach the store in one shape.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

PROMPT_VERSION = "extraction-v1"

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
"""


def user_message(content: str, now_iso: str) -> str:
    return f"当前时间: {now_iso}\n\n{content}"


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


class Extraction(_Loose):
    """What one save extracts. Validation errors read like SPEC's "提取结果无效：<reason>"."""

    events: list[EventItem] = Field(default_factory=list)
    persons: list[EntityItem] = Field(default_factory=list)
    concepts: list[EntityItem] = Field(default_factory=list)
    locations: list[EntityItem] = Field(default_factory=list)
    attitudes: list[AttitudeItem] = Field(default_factory=list)

    @model_validator(mode="after")
    def _refs_resolve(self) -> Extraction:
        if not self.events:
            raise ValueError("events must not be empty")
        refs: dict[str, str] = {}
        for kind, items in (
            ("event", self.events),
            ("person", self.persons),
            ("concept", self.concepts),
            ("location", self.locations),
        ):
            for item in items:
                if not item.ref.strip():
                    raise ValueError(f"a {kind} has an empty ref")
                if item.ref in refs:
                    raise ValueError(f"ref {item.ref!r} is used twice")
                refs[item.ref] = kind
        for ev in self.events:
            if not ev.summary.strip():
                raise ValueError(f"event {ev.ref} has an empty summary")
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
                    raise ValueError(f"{name} {item.ref} has an empty name")
        for att in self.attitudes:
            _expect(refs, att.person, "person", "attitude")
            if refs.get(att.target) not in {"person", "concept"}:
                raise ValueError(f"attitude target {att.target!r} is not a person or concept ref")
            if att.event is not None:
                _expect(refs, att.event, "event", "attitude")
        return self


def _expect(refs: dict[str, str], ref: str, kind: str, where: str) -> None:
    if refs.get(ref) != kind:
        raise ValueError(f"{where} refers to unknown {kind} ref {ref!r}")
