"""The dump format (``engine.dump``) without a store: lines, vectors and the checks that make
a bad dump fail with the line it is on."""

from __future__ import annotations

import base64
import json
from collections import Counter

import numpy as np
import pytest

from mnemoql.engine import dump
from mnemoql.engine.errors import DumpDamaged, InvalidInput
from mnemoql.engine.text import content_hash, text_hash

META = '{"dimensions":2,"kind":"meta","model":"m","schema_version":1,"updated_at":"t"}'
EVENT = (
    '{"content":"hello world","content_hash":"' + content_hash("hello world") + '",'
    '"create_date":"2026-03-01",'
    '"create_time":"2026-03-01T10:00:00+08:00","id":"event_1","kind":"node","label":"Event",'
    '"summary":"s","time":null}'
)
CONCEPT = (
    '{"aliases":[],"create_time":"t","description":null,"id":"concept_1","kind":"node",'
    '"label":"Concept","name":"c"}'
)


def lines(*body: str, vectors: bool = False) -> list[str]:
    """A complete dump around ``body`` (the end line counts what is there)."""
    counts = Counter(json.loads(b)["kind"] for b in body)
    return [dump.header_line(vectors), *body, dump.end_line(counts)]


def records(all_lines: list[str]) -> list[dict[str, object]]:
    return list(dump.DumpReader(all_lines).records())


def test_lines_are_sorted_compact_and_unicode() -> None:
    line = dump.encode({"kind": "topic", "path": "生活", "name": "生活", "parent": None})
    assert line == '{"kind":"topic","name":"生活","parent":null,"path":"生活"}'
    assert dump.header_line(False) == (
        '{"format":"mnemoql-memory","kind":"header","vectors":false,"version":2}'
    )


def test_a_valid_dump_reads_back_with_counts() -> None:
    rel = '{"kind":"relation","props":{},"source":"event_1","target":"concept_1","type":"MENTIONS"}'
    reader = dump.DumpReader(lines(META, EVENT, CONCEPT, rel))
    got = list(reader.records())
    assert [r["kind"] for r in got] == ["meta", "node", "node", "relation"]
    assert dict(reader.counts) == {"meta": 1, "node": 2, "relation": 1}
    assert reader.header == dump.Header(2, False)


def test_unit_vectors_keep_their_bits_and_others_are_scaled() -> None:
    v = np.array([0.6, 0.8], np.float32)
    v = v / np.linalg.norm(v)
    assert dump.decode_vector(dump.encode_vector(v), "x").tobytes() == v.tobytes()
    scaled = dump.decode_vector(dump.encode_vector(np.array([3, 4], np.float32)), "x")
    assert np.allclose(scaled, [0.6, 0.8])
    zero = dump.decode_vector(dump.encode_vector(np.zeros(2, np.float32)), "x")
    assert not zero.any()
    for bad in ("not base64!", base64.b64encode(b"abc").decode(), 7):
        with pytest.raises(InvalidInput):
            dump.decode_vector(bad, "x")
    nan = base64.b64encode(np.array([np.nan, 1], "<f4").tobytes()).decode()
    with pytest.raises(InvalidInput, match="not finite"):
        dump.decode_vector(nan, "x")


@pytest.mark.parametrize(
    ("first", "message"),
    [
        ('{"kind":"node"}', "not a mnemoql memory dump"),
        ('{"format":"mnemoql-memory","kind":"header","vectors":false,"version":3}', "version 3"),
        ('{"format":"mnemoql-memory","kind":"header","vectors":false,"version":true}', "version"),
        ("[1, 2]", "not a JSON object"),
        ("{oops", "not JSON"),
    ],
)
def test_a_bad_header_is_refused(first: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        dump.DumpReader([first])
    with pytest.raises(InvalidInput, match="empty"):
        dump.DumpReader(["", "  "])


EVENT_VEC = EVENT[:-1] + ',"embedding":"' + dump.encode_vector(np.array([1, 0], np.float32)) + '"}'
BAD_CASES = {
    "kinds out of order": ([EVENT, META], "after node records"),
    "second meta": ([META, META], "second meta"),
    "duplicate node": ([META, EVENT, EVENT], "appears twice"),
    "allocator id of another label": (
        [CONCEPT.replace("concept_1", "person_1")], "not a valid Concept id"),
    "entity with a caller id": ([CONCEPT.replace("concept_1", "my-concept")], "concept_N"),
    "chunk of an unknown event": (
        ['{"chunk_index":0,"end":5,"event_id":"event_9","kind":"chunk","start":0,"text":"hello",'
         '"text_hash":"x"}'], "no event of the dump"),
    "chunk past the content": (
        [EVENT, '{"chunk_index":0,"end":12,"event_id":"event_1","kind":"chunk","start":0,'
         '"text":"hello world!","text_hash":"x"}'], "does not fit"),
    "relation between wrong labels": (
        [EVENT, CONCEPT, '{"kind":"relation","props":{},"source":"concept_1",'
         '"target":"event_1","type":"MENTIONS"}'], "cannot connect a Concept to a Event"),
    "relation to nowhere": (
        [EVENT, '{"kind":"relation","props":{},"source":"event_1","target":"concept_7",'
         '"type":"MENTIONS"}'], "no node of the dump"),
    "topic before its parent": (
        ['{"kind":"topic","name":"b","parent":"a","path":"a->b"}'], "before its parent"),
    "binding weight out of range": (
        [EVENT, '{"kind":"topic","name":"a","parent":null,"path":"a"}',
         '{"activation":1.5,"context_independence":0.5,"diffusion":0.5,"event_id":"event_1",'
         '"kind":"binding","path":"a","related":[],"timestamp":1}'], "in \\[0, 1\\]"),
    "save record without a result": (
        ['{"created_at":"t","key":"k","kind":"save_record","result":{}}'], "event_ids"),
    "unknown kind": (['{"kind":"vertex"}'], "unknown record kind"),
    "embedding without vectors": ([META, EVENT_VEC], "made without vectors"),
    "ids mark below a node": (
        [EVENT, '{"concept":0,"event":0,"kind":"ids","location":0,"person":0}'], "event_1"),
    "ids record without a prefix": (['{"concept":0,"event":0,"kind":"ids","person":0}'],
                                    "'location' must be an integer"),
    "ids record with another field": (
        ['{"concept":0,"event":0,"kind":"ids","location":0,"person":0,"topic":1}'], "unknown"),
    "ids before save records": (
        ['{"concept":0,"event":0,"kind":"ids","location":0,"person":0}',
         '{"created_at":"t","key":"k","kind":"save_record","result":{}}'], "after ids records"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_records_name_their_line(case: str) -> None:
    body, message = BAD_CASES[case]
    with pytest.raises(InvalidInput, match=message) as err:
        records(lines(*body))
    assert err.value.message.startswith("line ")


def test_vectors_must_match_the_meta_width() -> None:
    assert records(lines(META, EVENT_VEC, vectors=True))[1]["embedding"] is not None
    wide = META.replace('"dimensions":2', '"dimensions":3')
    with pytest.raises(InvalidInput, match="2-dimensional embedding"):
        records(lines(wide, EVENT_VEC, vectors=True))


def test_truncated_and_miscounted_dumps_are_refused() -> None:
    full = lines(META, EVENT)
    with pytest.raises(InvalidInput, match="truncated"):
        records(full[:-1])
    with pytest.raises(InvalidInput, match="damaged"):
        records([*full[:-1], dump.end_line(Counter({"node": 1}))])
    with pytest.raises(InvalidInput, match="nothing may follow"):
        records([*full, META])


def test_text_that_does_not_match_its_hash_is_refused_naming_the_line() -> None:
    flipped = EVENT.replace("hello world", "hello worle", 1)  # the content, not the hash
    with pytest.raises(DumpDamaged, match=r"^line 3: event_1's 'content' does not match") as e:
        records(lines(META, flipped))
    assert e.value.code == "DUMP_DAMAGED" and e.value.details["line"] == 3
    chunk = ('{"chunk_index":0,"end":5,"event_id":"event_1","kind":"chunk","start":0,'
             '"text":"hello","text_hash":"' + text_hash("hellO") + '"}')  # fmt: skip
    with pytest.raises(DumpDamaged, match=r"^line 4: event_1's 'text' does not match"):
        records(lines(META, EVENT, chunk))
    assert records(lines(META, EVENT, chunk.replace(text_hash("hellO"), text_hash("hello"))))
