"""Every sentence mnemoql shows a person or a model, in English and Chinese, by a stable key.

One language setting decides what a user reads: ``MNEMOQL_LOCALE`` (``en`` by default, or
``zh``), overridden per request by a ``locale`` argument or an HTTP ``Accept-Language`` header
(``engine.locale_choice`` reads them). The texts live here, not at their call sites, so that no
message can exist in one language only (``tests/engine/test_messages.py`` fails on a key
without both, and on Chinese text outside this module that is not the ``zh=`` wording of an
error).

Errors are the one exception to "by key": a ``MnemoError`` is raised with its English message
and its Chinese wording side by side (``zh=``), because the values in it (ids, limits, paths) are
only known where it is raised; ``MnemoError.text(locale)`` picks one.

Keys are dotted by where the text is used (``save.*``, ``note.*``, ``render.*``, ``mcp.*``,
``cli.*``); templates are ``str.format`` templates and both languages of a key take the same
fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

Locale = Literal["en", "zh"]
LOCALES: tuple[Locale, ...] = get_args(Locale)
DEFAULT_LOCALE: Locale = "en"

CATALOGUE: Mapping[str, Mapping[Locale, str]] = {
    # ---- save: the one line a save answers with (SPEC §1.3.10's wording in zh) ----
    "save.saved": {
        "en": "saved {count} event(s): {ids}",
        "zh": "已保存 {count} 个事件：{ids}",
    },
    "save.replayed": {
        "en": "already saved, nothing new written: {ids}",
        "zh": "已存在，未重复保存：{ids}",
    },
    "save.created": {"en": "new {ids}", "zh": "新增 {ids}"},
    "save.merged": {"en": "merged into {id}", "zh": "合并 {id}"},
    "save.aliases": {"en": " (aliases {added})", "zh": "（别名 {added}）"},
    "save.alias_sep": {"en": ", ", "zh": "、"},
    "save.sep": {"en": "; ", "zh": "；"},
    "save.topic": {"en": "; topic: {path}", "zh": "；话题：{path}"},
    # ---- notes on evidence items and pages (engine.retrieval.evidence.NoteCode) ----
    "note.BUDGET_EXHAUSTED": {
        "en": "(excerpt budget used up; use read)",
        "zh": "（摘录预算已用尽，请用 read）",
    },
    "note.LONG_CONTENT": {
        "en": "source has {value} chars; excerpts come from the first 32000 only; "
        "use read to continue",
        "zh": "原文共 {value} 字；摘录只在前 32000 字内选择，请用 read 继续读取",
    },
    "note.LEGACY_NO_CHUNKS": {
        "en": "(legacy memory: no source chunks yet, matched by summary only; "
        "revectorize to fill them in)",
        "zh": "（旧记忆：尚无原文分块，仅摘要命中；可重新向量化补齐）",
    },
    "note.ENTITY_NOT_FOUND": {
        "en": "entity not found: {value}",
        "zh": "未找到实体：{value}",
    },
    # ---- the compact evidence text (engine.retrieval.render) ----
    "render.new": {"en": "new", "zh": "新增"},
    "render.chain": {"en": "chain", "zh": "追查链"},
    "render.cursor_ttl": {"en": " (valid for {minutes} minutes)", "zh": "（{minutes} 分钟内有效）"},
    "render.written": {"en": "written", "zh": "写入"},
    "render.time": {"en": "time: ", "zh": "时间："},
    "render.summary": {"en": "summary: ", "zh": "摘要："},
    "render.quote": {
        "en": "source[{start},{end})/{total}: “{text}”",
        "zh": "原文[{start},{end})/{total}：「{text}」",
    },
    "render.same_as": {"en": "same as {id}[{start},{end})", "zh": "原文同 {id}[{start},{end})"},
    "render.concepts": {"en": "concepts: ", "zh": "概念："},
    "render.shared": {"en": "shared concepts: ", "zh": "共享概念："},
    "render.next": {"en": "next: ", "zh": "可继续："},
    "render.search_again": {
        "en": "search(cursor): the next page (new events)",
        "zh": "search(cursor) 取下一页（新的事件）",
    },
    "render.item_sep": {"en": "; ", "zh": "；"},
    "render.list_sep": {"en": ", ", "zh": ", "},
    "render.ids_open": {"en": " (", "zh": "（"},
    "render.ids_close": {"en": ")", "zh": "）"},
    "render.disclaimer": {
        "en": "note: ranking scores are retrieval heuristics, not confidence in facts; verify "
        "summaries against the source; shared concepts and neighbouring sources do not imply "
        "cause or order.",
        "zh": "注：分数为检索启发式，不代表事实置信度；摘要需以原文核实；"
        "共享概念与来源相邻不代表因果或先后。",
    },
    "render.empty": {
        "en": "No new events found. An empty result does not mean the memory does not exist "
        "({excluded} delivered events of this session were excluded; use reset_seen to search "
        "again).",
        "zh": "未找到新的事件。空结果不代表记忆不存在（本会话已排除 {excluded} 个已交付事件；"
        "可用 reset_seen 重新检索）。",
    },
    "render.read_head": {
        "en": "{id} source[{start},{end})/{total}:",
        "zh": "{id} 原文[{start},{end})/{total}：",
    },
    "render.name_match": {"en": " (name match)", "zh": " （名称匹配）"},
    "render.no_node": {"en": "No matching node.", "zh": "未找到匹配的节点。"},
    # ---- MCP tool texts (web.mcp.text, web.mcp.tools) ----
    "mcp.empty_tree": {
        "en": "(the topic tree is empty: memories saved with a topic_path build it)",
        "zh": "（话题树为空：带 topic_path 保存的记忆会建立它）",
    },
    "mcp.none": {"en": "No memories found.", "zh": "未找到记忆。"},
    "mcp.next": {"en": "next: memory_read(event_id)", "zh": "可继续：memory_read(event_id)"},
    "mcp.deleted": {"en": "deleted: ", "zh": "已删除："},
    "mcp.session": {
        "en": "session={session} (pass it as `session` to follow-up calls)",
        "zh": "session={session}（后续 search / expand / nearby 请传入此 session）",
    },
    "mcp.internal": {"en": "Internal server error", "zh": "服务器内部错误"},
    # ---- HTTP refusals of the GraphQL view (web.graphql_http.error_response): the English is
    # the reason as raised (strawberry's own where it raises it), found by that text ----
    "http.not_json": {
        "en": "Unable to parse request body as JSON",
        "zh": "无法把请求体解析为 JSON",
    },
    "http.not_object": {
        "en": "the request body must be a JSON object",
        "zh": "请求体必须是 JSON 对象",
    },
    "http.no_query": {
        "en": "no GraphQL query found in the request",
        "zh": "请求中没有 GraphQL 查询",
    },
    "http.strawberry_no_query": {
        "en": "No GraphQL query found in the request",
        "zh": "请求中没有 GraphQL 查询",
    },
    "http.operation_name": {
        "en": "operationName must be a string or null, if provided",
        "zh": "operationName 若提供，须为字符串或 null",
    },
    "http.mutation_post": {
        "en": "a mutation must be sent with POST",
        "zh": "mutation 必须用 POST 发送",
    },
    "http.content_type": {"en": "Unsupported content type", "zh": "不支持的内容类型"},
    "http.methods": {
        "en": "GraphQL only supports GET and POST requests.",
        "zh": "GraphQL 只接受 GET 和 POST 请求。",
    },
    "http.not_found": {"en": "Not Found", "zh": "未找到"},
    "http.batching": {"en": "Batching is not enabled", "zh": "不支持批量请求"},
    "http.other": {"en": "{detail}", "zh": "请求被拒绝：{detail}"},
    # ---- graphql-core's own request errors (schema.wording): its English as it words it, and
    # a Chinese lead sentence per code for the kinds without a key of their own ----
    "graphql.GRAPHQL_PARSE_FAILED": {"en": "{detail}", "zh": "GraphQL 文档无法解析：{detail}"},
    "graphql.GRAPHQL_VALIDATION_FAILED": {
        "en": "{detail}",
        "zh": "GraphQL 文档与 schema 不符：{detail}",
    },
    "graphql.BAD_USER_INPUT": {"en": "{detail}", "zh": "参数值与其类型不符：{detail}"},
    "graphql.BAD_REQUEST": {"en": "{detail}", "zh": "请求无效：{detail}"},
    "graphql.OPERATION_NOT_SUPPORTED": {"en": "{detail}", "zh": "不支持的操作：{detail}"},
    "graphql.syntax": {"en": "Syntax Error: {detail}", "zh": "GraphQL 语法错误：{detail}"},
    "graphql.unknown_field": {
        "en": "Cannot query field '{field}' on type '{type}'.{hint}",
        "zh": "类型 '{type}' 上没有字段 '{field}'。{hint}",
    },
    "graphql.unknown_argument": {
        "en": "Unknown argument '{argument}' on field '{field}'.{hint}",
        "zh": "字段 '{field}' 没有参数 '{argument}'。{hint}",
    },
    "graphql.missing_argument": {
        "en": "Field '{field}' argument '{argument}' of type '{type}' is required, "
        "but it was not provided.",
        "zh": "字段 '{field}' 缺少必填参数 '{argument}'（类型 '{type}'）。",
    },
    "graphql.missing_variable": {
        "en": "Variable '${name}' of required type '{type}' was not provided.",
        "zh": "未提供必填变量 '${name}'（类型 '{type}'）。",
    },
    "graphql.unknown_type": {
        "en": "Unknown type '{type}'.{hint}",
        "zh": "未知类型 '{type}'。{hint}",
    },
    "graphql.needs_selection": {
        "en": "Field '{field}' of type '{type}' must have a selection of subfields.{hint}",
        "zh": "字段 '{field}'（类型 '{type}'）须选择子字段。{hint}",
    },
    "graphql.did_you_mean": {"en": " Did you mean {options}?", "zh": "是否想用 {options}？"},
    # ---- the command line (web.cli) ----
    "cli.invalid_settings": {"en": "invalid settings", "zh": "设置无效"},
    "cli.interrupted": {"en": "interrupted", "zh": "已中断"},
    "cli.import_dump": {
        "en": "mnemoql import: {path} is a memory dump of `mnemoql export`, not lines to save; "
        "load it with `mnemoql restore {path}` (into an empty space)",
        "zh": "mnemoql import：{path} 是 `mnemoql export` 的记忆导出文件，不是待保存的行；"
        "请用 `mnemoql restore {path}` 载入（到空的空间）",
    },
    "cli.import_not_utf8": {
        "en": "mnemoql import: {path} is not UTF-8 text (byte {byte})",
        "zh": "mnemoql import：{path} 不是 UTF-8 文本（第 {byte} 字节）",
    },
    "cli.import_bad_line": {
        "en": "{path}:{line}: not a save input: {problems}",
        "zh": "{path}:{line}：不是可保存的输入：{problems}",
    },
    "cli.import_not_json": {
        "en": "not JSON at column {column} ({reason})",
        "zh": "第 {column} 列起不是有效的 JSON（{reason}）",
    },
    "cli.import_not_object": {"en": "not a JSON object", "zh": "不是 JSON 对象"},
    "cli.import_failed_line": {
        "en": "{path}:{line}: {code}: {failure}",
        "zh": "{path}:{line}：{code}：{failure}",
    },
    # a save input's field problems, by pydantic's error type (``input.other`` keeps pydantic's
    # English for the kinds without a key of their own)
    "input.problem": {"en": "{field}: {problem}", "zh": "{field}：{problem}"},
    "input.sep": {"en": "; ", "zh": "；"},
    "input.missing": {"en": "Field required", "zh": "缺少此字段"},
    "input.extra_forbidden": {
        "en": "not a field of a save input (fields: {fields})",
        "zh": "不是保存输入的字段（可用字段：{fields}）",
    },
    "input.string_type": {"en": "Input should be a valid string", "zh": "应为字符串"},
    "input.list_type": {"en": "Input should be a valid list", "zh": "应为列表"},
    "input.bool_type": {"en": "Input should be a valid boolean", "zh": "应为布尔值"},
    "input.bool_parsing": {
        "en": "Input should be a valid boolean, unable to interpret input",
        "zh": "应为布尔值（true / false）",
    },
    "input.dict_type": {"en": "Input should be a valid dictionary", "zh": "应为 JSON 对象"},
    "input.model_type": {
        "en": "Input should be a valid dictionary or instance of {class_name}",
        "zh": "应为 JSON 对象（{class_name}）",
    },
    "input.other": {"en": "{detail}", "zh": "值无效：{detail}"},
    # ---- an extraction a client sent (engine.extraction_input.parse_extraction):
    # EXTRACTION_INVALID; ``extraction.<name>`` words the model's checks (``prompts.extraction``,
    # error types ``extraction_<name>``), field type problems use the ``input.*`` keys above ----
    "extraction.invalid": {"en": "invalid extraction: {reason}", "zh": "提取结果无效：{reason}"},
    "extraction.unknown_fields": {
        "en": "unknown field(s) {fields}: events hold their relations (participants, "
        "locations, concepts) and attitudes link persons to persons or concepts",
        "zh": "未知字段 {fields}：关系写在事件之内（participants、locations、concepts），"
        "attitudes 把人物连到人物或概念",
    },
    "extraction.events_empty": {"en": "events must not be empty", "zh": "events 不能为空"},
    "extraction.empty_ref": {"en": "a {kind} has an empty ref", "zh": "有{kind}的 ref 为空"},
    "extraction.ref_twice": {"en": "ref {ref} is used twice", "zh": "ref {ref} 用了两次"},
    "extraction.empty_summary": {
        "en": "event {ref} has an empty summary",
        "zh": "事件 {ref} 的 summary 为空",
    },
    "extraction.unknown_ref": {
        "en": "{event} refers to unknown {kind} ref {ref}",
        "zh": "事件 {event} 引用了不存在的{kind} ref {ref}",
    },
    "extraction.attitude_unknown_ref": {
        "en": "attitude refers to unknown {kind} ref {ref}",
        "zh": "attitude 引用了不存在的{kind} ref {ref}",
    },
    "extraction.attitude_target": {
        "en": "attitude target {ref} is not a person or concept ref",
        "zh": "attitude 的 target {ref} 不是人物或概念的 ref",
    },
    "extraction.empty_name": {
        "en": "{kind} {ref} has an empty name",
        "zh": "{kind} {ref} 的 name 为空",
    },
    # a chat model's reply that is no extraction at all (engine.providers.openai)
    "extraction.reply_empty": {"en": "the model's reply is empty", "zh": "模型的回复为空"},
    "extraction.reply_no_text": {
        "en": "the model's reply has no text content",
        "zh": "模型的回复没有文本内容",
    },
    "extraction.reply_not_json": {
        "en": "the model's reply is not JSON ({detail} at line {line} column {column})",
        "zh": "模型的回复不是 JSON（第 {line} 行第 {column} 列：{detail}）",
    },
    "extraction.reply_not_object": {
        "en": "the model's reply is not a JSON object but {type}",
        "zh": "模型的回复不是 JSON 对象，而是 {type}",
    },
    "extraction.kind.event": {"en": "event", "zh": "事件"},
    "extraction.kind.person": {"en": "person", "zh": "人物"},
    "extraction.kind.concept": {"en": "concept", "zh": "概念"},
    "extraction.kind.location": {"en": "location", "zh": "地点"},
    "cli.import_nothing_saved": {
        "en": "mnemoql import: nothing was saved; fix the line(s) above and run it again",
        "zh": "mnemoql import：未保存任何内容；请修正上面的行后重新运行",
    },
    "cli.imported": {
        "en": "imported {path}: {saved} saved, {skipped} skipped{forgotten}, {failed} failed "
        "of {total} lines",
        "zh": "已导入 {path}：共 {total} 行，保存 {saved}，跳过 {skipped}{forgotten}，"
        "失败 {failed}",
    },
    "cli.imported_forgotten": {
        "en": " ({count} forgotten since, not saved again)",
        "zh": "（其中 {count} 行之后已被遗忘，未重新保存）",
    },
    "cli.exported": {
        "en": "exported space {space} ({store}{vectors}): {shown} -> {target}",
        "zh": "已导出空间 {space}（{store}{vectors}）：{shown} -> {target}",
    },
    "cli.with_vectors": {"en": ", with vectors", "zh": "，含向量"},
    "cli.nothing": {"en": "nothing", "zh": "无内容"},
    "cli.restored": {
        "en": "restored into space {space} ({store}): {shown}",
        "zh": "已恢复到空间 {space}（{store}）：{shown}",
    },
    "cli.restore_unreadable": {
        "en": "mnemoql restore: {source}: cannot read: {error}",
        "zh": "mnemoql restore：{source}：无法读取：{error}",
    },
    "cli.embedded": {
        "en": "{done} with {model}/{dimensions}: {events} events, {persons} persons, "
        "{concepts} concepts, {locations} locations, {chunks} chunks",
        "zh": "{done}（{model}/{dimensions}）：事件 {events}，人物 {persons}，概念 {concepts}，"
        "地点 {locations}，分块 {chunks}",
    },
    "cli.revectorized": {"en": "revectorized", "zh": "已重新向量化"},
    "cli.reembedded": {"en": "re-embedded", "zh": "已重新嵌入"},
    "cli.no_vectors": {
        "en": "the dump carried no vectors: run `mnemoql revectorize` before searching",
        "zh": "导出文件不含向量：检索前请运行 `mnemoql revectorize`",
    },
    # ---- a deadline (web.guards.deadlines; GraphQL and MCP alike) ----
    "timeout": {
        "en": "the request took longer than {seconds} s and was stopped "
        "(MNEMOQL_LIMITS__QUERY_TIMEOUT_S / __MUTATION_TIMEOUT_S); ask for less, or retry "
        "a save with the same idempotencyKey",
        "zh": "请求超过 {seconds} 秒，已停止（MNEMOQL_LIMITS__QUERY_TIMEOUT_S / "
        "__MUTATION_TIMEOUT_S）；请少取一些，或用同一 idempotencyKey 重试保存",
    },
}


def template(key: str, locale: Locale) -> str:
    """The raw template of ``key`` in ``locale`` (``KeyError`` for an unknown key)."""
    return CATALOGUE[key][locale]


def message(key: str, locale: Locale, /, **values: object) -> str:
    """The text of ``key`` in ``locale`` with ``values`` filled in."""
    return CATALOGUE[key][locale].format(**values)
