"""The run-record codec (storage/run_records/codec.py): whatever ``encode`` writes, ``decode``
reads back equal. A record built in memory that a stored record cannot hold is refused
with ``Invalid`` before anything is written, never stored to fail every later load."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings

from storage.errors import Invalid
from storage.run_records import AttemptState, DurableRunRecord, decode, encode

from ..support.run_records import RECORDS, valid_record


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=RECORDS)
def test_what_encode_writes_decode_reads_back(record: DurableRunRecord) -> None:
    try:
        data = encode(record)
    except Invalid:
        return
    assert decode(data) == record


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"index": -1}, "Index"),
        ({"limit": 2**64}, "Limit"),
        ({"state": "paused"}, "State"),
    ],
)
def test_it_refuses_a_scalar_decode_would_refuse(change: dict[str, object], field: str) -> None:
    record = valid_record()
    key, attempt = next(iter(record.attempts.items()))
    broken = replace(record, attempts={**record.attempts, key: replace(attempt, **change)})
    with pytest.raises(Invalid, match=rf"^\$\.Attempts\.{key}\.{field}: "):
        encode(broken)


def test_enum_members_and_their_strings_encode_alike() -> None:
    record = valid_record()
    key, attempt = next(iter(record.attempts.items()))
    plain = replace(record, attempts={**record.attempts, key: replace(attempt, state="failed")})
    failed = replace(
        record, attempts={**record.attempts, key: replace(attempt, state=AttemptState.FAILED)}
    )
    assert encode(plain) == encode(failed)
