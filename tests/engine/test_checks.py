"""The input checks, the where-size count at the edge, URL masking and the log filter."""

from __future__ import annotations

import logging

import pytest
from graphql import GraphQLError

from mnemoql.engine import checks
from mnemoql.engine.errors import InvalidText, LimitExceeded, NotFound
from mnemoql.engine.models import AllOf, AnyOf, Cond, Not
from mnemoql.engine.redact import check_url, mask_text, mask_url
from mnemoql.web.guards import may_hold_lone_surrogates, where_size
from mnemoql.web.logs import MAX_CHARS, Hygiene


def test_clip_bounds_echoed_input_and_shows_surrogates() -> None:
    assert checks.clip("short") == "short"
    long = checks.clip("x" * 100_000)
    assert len(long) < 120 and long.endswith("(100000 characters)")
    assert checks.clip("a\ud800") == "a\\ud800"
    "a\ud800".encode("utf-8", "surrogatepass")  # the input really is a lone surrogate
    checks.clip("a\ud800").encode("utf-8")  # the clipped form is encodable


def test_text_refuses_lone_surrogates_and_keeps_astral_characters() -> None:
    assert checks.text("😀 emoji and 中文", "content") == "😀 emoji and 中文"
    for bad in ("\ud800", "a\udfffb", "\ud83d"):
        with pytest.raises(InvalidText) as err:
            checks.text(bad, "content")
        assert err.value.code == "INVALID_TEXT" and err.value.details["argument"] == "content"


@pytest.mark.parametrize("value", ["\ufeff", "\u200b", " \n\t", "\u2060\u200d\u00ad", "\x00\x07"])
def test_visible_refuses_text_of_invisible_characters(value: str) -> None:
    with pytest.raises(InvalidText):
        checks.visible(value, "content")


@pytest.mark.parametrize("value", ["a", "\ufeffhello", "中", "\u200b😀", "·"])
def test_visible_accepts_anything_with_one_visible_character(value: str) -> None:
    checks.visible(value, "content")


def test_strings_walks_nested_json_with_paths() -> None:
    found = dict(checks.strings({"a": ["x", {"b": "y"}], "n": 3}, "$v"))
    assert found == {"$v key": "n", "$v.a[0]": "x", "$v.a[1] key": "b", "$v.a[1].b": "y"}


def test_where_conditions_count_comparisons_and_in_values() -> None:
    tree = AllOf((Cond("id", "in", ("a", "b", "c")), AnyOf((Cond("summary", "eq", "x"),
                  Not(Cond("time", "contains", "y"))))))  # fmt: skip
    assert checks.where_conditions(tree) == 5
    checks.where(tree, 5)
    with pytest.raises(LimitExceeded):
        checks.where(tree, 4)


def test_where_size_on_raw_json_counts_levels_without_recursion() -> None:
    assert where_size({"summary": {"eq": "a", "contains": "b"}}) == (2, 0)
    assert where_size({"OR": [{"id": {"in": ["a", "b"]}}, {"NOT": {"name": {"eq": "c"}}}]}) == (
        3,
        2,
    )
    deep: dict[str, object] = {"summary": {"eq": "x"}}
    for _ in range(50_000):  # far past the interpreter's recursion limit
        deep = {"AND": [deep]}
    assert where_size(deep) == (1, 50_000)


@pytest.mark.parametrize(
    ("body", "lone"),
    [
        (rb'"a\ud800b"', True),
        (rb'"\udc00"', True),
        (rb'"\ud83d\ude00 \uD83D\uDE01"', False),  # pairs, any case
        (rb'"\ud83d\ude00\ud83d"', True),
        (rb'"\ud83d x \ude00"', True),
        (rb'"\ud83d\ud83d\ude00"', True),
        (rb'"plain \u4e2d"', False),
        (rb'"\\ud800"', True),  # an escaped backslash: a false alarm, it only costs the walk
    ],
)
def test_the_raw_body_prefilter_never_misses_a_lone_surrogate(body: bytes, lone: bool) -> None:
    import json

    assert may_hold_lone_surrogates(body) is lone
    decoded = json.loads(body)
    if not lone:
        decoded.encode("utf-8")  # truly no lone surrogate


def test_where_size_stops_counting_past_the_caps() -> None:
    wide = {"OR": [{"summary": {"eq": str(i)}} for i in range(65_000)]}
    conditions, _ = where_size(wide, (100, 8))
    assert conditions > 100


def test_positions_must_look_like_the_sort_they_page() -> None:
    checks.position("create_time", ("2026-03-01T10:00:00+08:00", "event_1"))
    checks.position("create_date", ("2026-03-01", "book_ch3_e12"))
    checks.position("id", ("event_3", "event_3"))
    checks.position("name", ("anything", "person_2"))
    for sort, after in [("create_time", ("a", "b")), ("create_date", ("2026-13-01", "event_1")),
                        ("id", ("event_1", "event_2")), ("name", ("x", "not an id!"))]:  # fmt: skip
        with pytest.raises(Exception) as err:
            checks.position(sort, after)
        assert getattr(err.value, "code", None) == "BAD_USER_INPUT"


def test_urls_lose_their_credentials() -> None:
    assert mask_url("http://user:KEY@host:8080/v1") == "http://user:***@host:8080/v1"
    assert mask_url("https://KEY@host/v1") == "https://***@host/v1"
    assert mask_url("KEY@host") == "***@host"
    assert mask_url("https://api.deepseek.com") == "https://api.deepseek.com"
    text = "POST http://a:S3CRET@x/v1 failed; retry https://b:T0KEN@y"
    assert "S3CRET" not in mask_text(text) and "T0KEN" not in mask_text(text)


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("http://u:KEY@127.0.0.1:99999/v1", "port is not a number from 1 to 65535"),
        ("ftp://host", "must be a http, https URL"),
        ("http:///v1", "no host name"),
        ("http://host:0/v1", "port 0"),
    ],
)
def test_check_url_names_the_setting_and_hides_the_key(url: str, fragment: str) -> None:
    with pytest.raises(ValueError) as err:
        check_url(url, "embedding.base_url (MNEMOQL_EMBEDDING__BASE_URL)", frozenset({"http",
                                                                                     "https"}))
    assert fragment in str(err.value) and "MNEMOQL_EMBEDDING__BASE_URL" in str(err.value)
    assert "KEY" not in str(err.value)


def _record(msg: object, exc: BaseException | None = None) -> logging.LogRecord:
    info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord("strawberry.execution", logging.ERROR, __file__, 1, msg, None, info)


def test_the_log_filter_turns_client_errors_into_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    mistake = NotFound("no event with id 'event_9'")
    record = _record(GraphQLError("x", original_error=mistake, path=["read"]), mistake)
    caplog.set_level(logging.WARNING, logger="")
    assert not Hygiene().filter(record)  # an INFO line, and the service logs warnings only
    caplog.set_level(logging.INFO, logger="")
    assert Hygiene().filter(record)
    assert record.levelno == logging.INFO and record.exc_info is None
    assert record.getMessage() == "client error NOT_FOUND at read: x"


def test_the_log_filter_keeps_internal_tracebacks_and_bounds_every_line() -> None:
    try:
        raise RuntimeError("boom at http://u:PASSWORD@host")
    except RuntimeError as exc:
        record = _record(GraphQLError("y", original_error=exc), exc)
    assert Hygiene().filter(record)
    assert record.levelno == logging.ERROR and record.exc_text is not None
    assert "Traceback" in record.exc_text and "PASSWORD" not in record.exc_text
    huge = _record("input: " + "z" * 100_000)
    Hygiene().filter(huge)
    assert len(huge.getMessage()) < MAX_CHARS + 40
