"""The run-record codec (``storage.run_records.codec``): exact round trips of every field, and
the refusals the spec names (non-UTF-8 metadata before anything is written, format 1
with incremental fields, newer formats, corrupt bytes). Pure: no database."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage import Corrupt, Invalid, RecordsNewer
from storage.run_records import (
    MAX_REVISION,
    AttemptState,
    DurableRunRecord,
    ManagedRecord,
    MessageAttemptRecord,
    NodeAttemptRecord,
    NodeReason,
    NodeRecord,
    PendingMessage,
    ScopeRecord,
    StreamDescriptorRecord,
    StreamRecord,
    Terminal,
    ValueRecord,
    ValueState,
    decode,
    encode,
)

# Metadata text: any valid Unicode (surrogates excluded: those are the invalid case).
text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
uint = st.integers(min_value=0, max_value=MAX_REVISION)
small = st.integers(min_value=0, max_value=1000)
blob = st.binary(max_size=40)


def _maps[V](values: st.SearchStrategy[V]) -> st.SearchStrategy[dict[str, V]]:
    return st.dictionaries(text, values, max_size=3)


descriptors = st.builds(StreamDescriptorRecord, text, text, small, st.sampled_from(list(Terminal)))
values = st.builds(
    ValueRecord,
    text,
    text,
    text,
    st.sampled_from(list(ValueState)),
    text,
    blob,
    st.none() | descriptors,
)
plain_values = st.builds(
    ValueRecord, text, text, text, st.sampled_from(list(ValueState)), text, blob
)
attempts = st.builds(
    NodeAttemptRecord, text, text, text, small, small, st.sampled_from(list(AttemptState))
)


def scopes(value_strategy: st.SearchStrategy[ValueRecord]) -> st.SearchStrategy[ScopeRecord]:
    nodes = st.builds(
        NodeRecord,
        text,
        text,
        st.sampled_from(list(NodeReason)),
        st.lists(value_strategy, max_size=3).map(tuple),
    )
    return st.builds(ScopeRecord, text, text, text, _maps(nodes), st.booleans())


streams = st.builds(
    StreamRecord,
    text,
    text,
    text,
    text,
    uint,
    text,
    st.booleans(),
    uint,
    uint,
    st.lists(st.builds(PendingMessage, uint, st.booleans()), max_size=3).map(tuple),
    text,
)
messages = st.builds(
    MessageAttemptRecord,
    text,
    text,
    uint,
    text,
    text,
    text,
    small,
    small,
    st.sampled_from(list(AttemptState)),
)
managed = st.builds(
    ManagedRecord, text, text, text, blob, st.lists(plain_values, max_size=2).map(tuple)
)
format2 = st.builds(
    DurableRunRecord,
    text,
    uint,
    st.just(2),
    text,
    text,
    text,
    text,
    _maps(scopes(values)),
    _maps(attempts),
    _maps(streams),
    _maps(messages),
    _maps(managed),
)
format1 = st.builds(
    DurableRunRecord,
    text,
    uint,
    st.just(1),
    text,
    text,
    text,
    text,
    _maps(scopes(plain_values)),
    _maps(attempts),
)


@given(format2 | format1)
def test_every_field_round_trips_exactly(record: DurableRunRecord) -> None:
    assert decode(encode(record)) == record


@given(format2)
def test_encoding_is_deterministic(record: DurableRunRecord) -> None:
    # Equal records give equal bytes (the spec asks it of codecs; CAS compares records).
    assert encode(record) == encode(decode(encode(record)))


def test_uses_the_spec_field_names_and_base64_bytes() -> None:
    value = ValueRecord("out", "int", "1", ValueState.READY, "d" * 64, b"\xff\x00")
    record = DurableRunRecord(
        "r",
        revision=7,
        scopes={
            "s": ScopeRecord(
                "g", "/", "i", {"n": NodeRecord("n", "a", NodeReason.COMPLETED, (value,))}
            )
        },
    )
    document = json.loads(encode(record))
    assert (document["Format"], document["RunID"], document["Revision"]) == (2, "r", 7)
    output = document["Scopes"]["s"]["Nodes"]["n"]["Outputs"][0]
    assert (output["Data"], output["TypeID"]) == ("/wA=", "int")
    assert "Stream" not in output


def test_loaded_maps_are_read_only() -> None:
    record = decode(
        encode(
            DurableRunRecord(
                "r", attempts={"a": NodeAttemptRecord("s", "n", "", 1, 1, AttemptState.ACTIVE)}
            )
        )
    )
    with pytest.raises(TypeError):
        record.attempts["b"] = record.attempts["a"]  # type: ignore[index]


def test_data_bytes_are_exempt_from_the_utf8_rule() -> None:
    raw = bytes(range(256))
    record = DurableRunRecord("r", managed={"m": ManagedRecord("s", "p", "n", state=raw)})
    assert decode(encode(record)).managed["m"].state == raw


@pytest.mark.parametrize(
    "record",
    [
        DurableRunRecord("run-\udc80"),
        DurableRunRecord("r", version="v\ud800"),
        DurableRunRecord(
            "r", attempts={"\udfff": NodeAttemptRecord("s", "n", "", 1, 1, AttemptState.ACTIVE)}
        ),
        DurableRunRecord("r", streams={"s": StreamRecord("s", "n", "k", "g\ud834", 1, "src")}),
    ],
    ids=["run-id", "version", "map-key", "nested"],
)
def test_unpaired_surrogates_are_refused_before_encoding(record: DurableRunRecord) -> None:
    with pytest.raises(Invalid, match=r"\$.*not valid UTF-8"):
        encode(record)


@pytest.mark.parametrize(
    "stored",
    [
        b'{"Format":2,"RunID":"\\ud800"}',  # escaped unpaired surrogate
        b'{"Format":2,"RunID":"\\udc00x"}',
        b'{"Format":2,"RunID":"r","Attempts":{"\\ud800":{}}}',
        b'{"Format":2,"RunID":"\xc3("}',  # raw invalid UTF-8
        b'{"Format":2,"RunID":"\xed\xa0\x80"}',  # a surrogate encoded as raw UTF-8
        b"[]",
        b"{",
        b'{"Format":2,"RunID":"r","Extra":1}',  # unknown field
        b'{"Format":2,"RunID":7}',
        b'{"Format":2,"RunID":"r","Revision":-1}',
        b'{"Format":2,"RunID":"r","Revision":18446744073709551616}',
        b'{"Format":2,"RunID":"r","Revision":true}',
        b'{"Format":2,"RunID":"r","Attempts":{"a":{"State":"done"}}}',
        b'{"Format":2,"RunID":"r","Managed":{"m":{"State":"not base64!"}}}',
        b'{"Format":0,"RunID":"r"}',
        b'{"RunID":"r"}',
        b'{"Format":2,"RunID":"r","RunID":"s"}',  # a field twice
        b'{"Format":2,"RunID":"r","Attempts":{"a":{"State":"failed"},"a":{"State":"active"}}}',
        b'{"Format":2,"RunID":"r","Attempts":{"a":{"Parent":"s"}}}',  # State has no zero value
    ],
)
def test_corrupt_stored_bytes_are_refused(stored: bytes) -> None:
    with pytest.raises(Corrupt):
        decode(stored)


def test_paired_surrogate_escapes_are_valid_unicode() -> None:
    assert decode(b'{"Format":2,"RunID":"\\ud83d\\ude00"}').run_id == "\U0001f600"


def test_missing_fields_read_as_go_zero_values() -> None:
    stored = b'{"Format":2,"RunID":"r","Attempts":{"a":{"State":"failed"}}}'
    attempt = decode(stored).attempts["a"]
    assert (attempt.parent, attempt.index, attempt.state) == ("", 0, AttemptState.FAILED)


def test_a_newer_format_is_refused_as_records_newer() -> None:
    with pytest.raises(RecordsNewer):
        decode(b'{"Format":3,"RunID":"r","Future":{"x":1}}')


@pytest.mark.parametrize(
    "field",
    [
        '"Streams":{"s":{"Scope":"a"}}',
        '"Messages":{"m":{"Source":"a","State":"active"}}',
        '"Managed":{"m":{"Scope":"a"}}',
        '"Scopes":{"s":{"Nodes":{"n":{"Outputs":[{"Name":"o","State":"ready","Stream":{"SourceID":"x"}}],'
        '"Reason":"completed"}}}}',
    ],
)
def test_format1_with_incremental_fields_is_refused(field: str) -> None:
    with pytest.raises(Corrupt, match="format-1"):
        decode(('{"Format":1,"RunID":"r",' + field + "}").encode())
    record = replace(decode(('{"Format":2,"RunID":"r",' + field + "}").encode()), format=1)
    with pytest.raises(Invalid, match="format-1"):
        encode(record)


def test_format1_without_incremental_fields_loads() -> None:
    stored = b'{"Format":1,"RunID":"r","Revision":4,"Scopes":{},"Attempts":{}}'
    record = decode(stored)
    assert (record.format, record.revision, record.incremental) == (1, 4, False)
    assert decode(encode(replace(record, format=2))).format == 2


def test_empty_incremental_maps_are_not_written() -> None:
    # A format-2 record without streams has the shape a format-1 reader would accept.
    document = json.loads(encode(DurableRunRecord("r")))
    assert not {"Streams", "Messages", "Managed"} & set(document)
