"""The catalogue of messages (engine/messages.py): every key in both languages, the
Accept-Language choice, and no user-facing Chinese text outside the catalogue."""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

import pytest

from mnemoql.engine import errors
from mnemoql.engine.config import load_settings
from mnemoql.engine.errors import MnemoError, NotFound
from mnemoql.engine.locale_choice import preferred
from mnemoql.engine.messages import CATALOGUE, LOCALES, message
from mnemoql.engine.retrieval.evidence import EvidencePage, Note, NoteCode
from mnemoql.engine.retrieval.render import render

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "resolvers", "schema", "web", "mnemoql")
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")

# Modules that read Chinese input (dates, names, stop words, speaker labels): their Chinese
# literals are patterns and word lists, never shown to a user.
READS_CHINESE = {
    "engine/dates.py",
    "engine/date_rules.py",
    "engine/providers/offline.py",
    "engine/providers/_blocks.py",  # speaker prefixes and sentence ends, split out of offline.py
    "engine/providers/_namewords.py",  # role words (用户, 助手), split out of offline.py
    "engine/providers/_english_persons.py",  # a full-width colon ends a sentence
    "engine/retrieval/terms.py",
    "engine/topics/names.py",
    "engine/topics/block.py",
    "engine/binding.py",
    "engine/store/lexical.py",
    "engine/retrieval/speakers.py",  # who a question points to (我, 用户, 你说)
    "engine/retrieval/quotes.py",  # merged summaries are ；-joined (see NOT_MESSAGES)
    "engine/messages.py",  # the catalogue itself
}
# Chinese input a user may type, named as an example in English texts (descriptions, hints).
INPUT_EXAMPLES = ("12月1日", "最近3天", "上周五", "上周一", "上周")
# Single Chinese literals elsewhere that are not messages in a language of ours, with why.
NOT_MESSAGES = {
    # merged event summaries are data, joined as the extraction model writes them
    ("engine/extraction_input.py", "；"),
    # the Partner projection's wire format (SliceEntry.text "as Partner words it")
    ("engine/topics/slices.py", "省略了 "),
    ("engine/topics/slices.py", " 条消息"),
    # the judge model's prompt (a model reads it, not a user)
    ("engine/providers/openai.py", "A 与 B 是否指同一个概念？"),
    ("schema/recall.py", "'省略了 N 条消息': N left out."),
}
# Modules whose patterns match Chinese punctuation or scripts (regular expressions only).
PATTERNS = {
    "engine/retrieval/pipeline.py",
    "engine/retrieval/routes.py",
    "engine/providers/hashing.py",
}
# The Chinese wording of errors built at the raise site, passed on to ``zh=``.
ERROR_WORDING = {
    "engine/providers/openai_http.py",
    "engine/dump_checks.py",  # _zh: "line N" of an error in Chinese
    "engine/store/rules.py",
    "engine/store/neo4j/managed.py",
    "engine/store/neo4j/install.py",  # the install hint in Chinese
    "engine/store/neo4j/home.py",
    "web/guards/sizes.py",  # refusals' Chinese, passed on as refuse(zh=...)
}


def _fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def test_every_key_exists_in_both_languages_with_the_same_fields() -> None:
    assert set(LOCALES) == {"en", "zh"}
    for key, texts in CATALOGUE.items():
        assert set(texts) == set(LOCALES), f"{key} lacks {set(LOCALES) - set(texts)}"
        assert all(texts[x].strip() or key.endswith("sep") for x in LOCALES), key
        assert _fields(texts["en"]) == _fields(texts["zh"]), key
        assert texts["en"] != texts["zh"] or not CJK.search(texts["zh"]), key
    zh_only = {k for k, t in CATALOGUE.items() if CJK.search(t["en"])}
    assert not zh_only, f"Chinese in the English text of {zh_only}"


def test_every_note_code_has_its_message() -> None:
    for code in NoteCode:
        for locale in LOCALES:
            assert Note(code, 7).message(locale) == message(f"note.{code.value}", locale, value=7)


@pytest.mark.parametrize(
    ("header", "default", "chosen"),
    [
        (None, "en", "en"),
        ("", "zh", "zh"),
        ("zh-CN,zh;q=0.9,en;q=0.8", "en", "zh"),
        ("en-US,en;q=0.9,zh-CN;q=0.8", "zh", "en"),
        ("fr-FR, de;q=0.9", "zh", "zh"),  # none of ours: the setting
        ("fr, zh;q=0.5, en;q=0.4", "en", "zh"),  # the best of ours
        ("en;q=0.2, zh;q=0.8", "en", "zh"),  # by q-value, not order
        ("zh;q=0, en", "zh", "en"),  # q=0 refuses
        ("zh;q=0", "zh", "zh"),  # refusing all of ours: the setting
        ("*", "zh", "zh"),
        ("ZH_hans", "en", "zh"),
        ("en;q=0.5, zh;q=0.5", "zh", "en"),  # equal q: the first
        ("zh;q=abc, en;q=0.1", "zh", "en"),  # a malformed q is not acceptable
        ("zh;q=1.5, en;q=0.1", "zh", "en"),
        (";;,,en", "zh", "en"),
    ],
)
def test_accept_language(header: str | None, default: str, chosen: str) -> None:
    assert preferred(header, default) == chosen  # type: ignore[arg-type]


def test_the_setting_defaults_to_english_and_takes_zh() -> None:
    assert load_settings({}).locale == "en"
    assert load_settings({"MNEMOQL_LOCALE": "zh"}).locale == "zh"
    assert load_settings({}).mcp.locale is None  # MCP follows MNEMOQL_LOCALE
    assert load_settings({"MNEMOQL_MCP__LOCALE": "zh"}).mcp.locale == "zh"
    with pytest.raises(ValueError, match=r"Input should be 'en' or 'zh'"):
        load_settings({"MNEMOQL_LOCALE": "fr"})


def test_renderings_default_to_english() -> None:
    empty = EvidencePage(operation="search", excluded_count=2)
    assert render(empty).startswith("No new events found.")
    assert render(empty, "zh").startswith("未找到新的事件。")


def test_an_error_has_both_languages_and_shows_one() -> None:
    error = NotFound("no event with id 'event_9'", zh="事件不存在：event_9", id="event_9")
    assert error.extensions() == {
        "code": "NOT_FOUND",
        "en": "no event with id 'event_9'",
        "zh": "事件不存在：event_9",
        "id": "event_9",
    }
    assert error.text("zh") == "事件不存在：event_9" and error.text("en") == error.en
    assert str(error.localize("zh")) == "事件不存在：event_9" == error.message
    assert error.en == "no event with id 'event_9'"  # both kept
    assert str(error.localize("en")) == "no event with id 'event_9'"


def _sources() -> list[Path]:
    found: list[Path] = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if (
                not any(p.is_symlink() for p in [path, *path.parents])
                and relative.parts[0] == package
            ):
                found.append(path)
    return found


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _in_zh_argument(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Inside ``zh=...`` of a call, or the ``"zh"`` value of a dict (an error's extensions)."""
    while node in parents:
        child, node = node, parents[node]
        if isinstance(node, ast.keyword) and node.arg == "zh":
            return True
        if isinstance(node, ast.Dict) and child in node.values:
            key = node.keys[node.values.index(child)]  # type: ignore[arg-type]
            return isinstance(key, ast.Constant) and key.value == "zh"
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module):
            return False
    return False


def _is_pattern(text: str) -> bool:
    """A regular expression (a character class or escapes), not a sentence."""
    return ("[" in text and ("\\" in text or "]" in text)) or bool(re.fullmatch(r"(.-.)+", text))


def test_no_chinese_text_outside_the_catalogue() -> None:
    """A message shown to a user goes through engine/messages.py, so it exists in both
    languages. The Chinese allowed elsewhere: an error's ``zh=`` wording (its English is the
    message beside it), docstrings, modules that read Chinese input, and the listed literals."""
    stray: list[str] = []
    assert len(_sources()) > 100
    for path in _sources():
        name = path.relative_to(ROOT).as_posix()
        if name in READS_CHINESE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = _parents(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            text = node.value
            for example in INPUT_EXAMPLES:
                text = text.replace(example, "")
            if not CJK.search(text) or isinstance(parents.get(node), ast.Expr):
                continue
            if (name, node.value) in NOT_MESSAGES or _in_zh_argument(node, parents):
                continue
            if name in ERROR_WORDING or (name in PATTERNS and _is_pattern(node.value)):
                continue
            stray.append(f"{name}:{node.lineno}: {node.value!r}")
    assert not stray, "Chinese text outside engine/messages.py:\n" + "\n".join(stray)


def _error_classes() -> set[str]:
    return {n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, MnemoError)}


# Errors raised in English only (``extensions.zh`` would repeat the English): none left. A call
# counted here that is no error keeps its count; the count per file may only fall.
ENGLISH_ONLY_ERRORS = {
    "web/mcp/tools.py": 1,  # r.Forgotten there is a result, not the error class of that name
}


def test_errors_are_raised_with_their_chinese_wording() -> None:
    """Every coded error a caller meets carries ``zh=`` beside its English message, except the
    counted ones above (a new English-only error fails here)."""
    classes = _error_classes()
    found: dict[str, int] = {}
    for path in _sources():
        name = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if called in classes and not any(k.arg == "zh" for k in node.keywords):
                found[name] = found.get(name, 0) + 1
    grown = {
        name: (count, ENGLISH_ONLY_ERRORS.get(name, 0))
        for name, count in found.items()
        if count > ENGLISH_ONLY_ERRORS.get(name, 0)
    }
    assert not grown, f"errors raised without zh= (file: (now, allowed)): {grown}"
