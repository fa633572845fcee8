"""Restoring stored values (storage/run_records/value_restore.py): a well-formed value restores;
each fixture below breaks exactly one thing and yields exactly that finding; nothing
ever raises."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.run_records import (
    RESTORE_CHECKS,
    Codecs,
    Outcome,
    StreamDescriptorRecord,
    ValueRecord,
    ValueState,
    new_codecs,
    restore_value,
)
from storage.run_records.value_restore import EMPTY_DIGEST

# Wall-clock deadlines measure the shared test machine, not the codec.
SLOW_OK = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Receipt:
    amount_cents: int
    memo: str


@dataclass(frozen=True)
class Refund:
    amount_cents: int
    memo: str


class Silent:
    """A custom type whose codec writes zero bytes."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Silent)

    __hash__ = object.__hash__


class SilentCodec:
    type = Silent
    id = "test.silent"
    version = "1"

    def encode(self, value: Any) -> bytes:
        return b""

    def decode(self, data: bytes) -> Any:
        if data:
            raise ValueError("a Silent value has no bytes")
        return Silent()


class Loud(Silent):
    pass


class Fake(Silent):
    pass


class Exploding(SilentCodec):
    type = Loud
    id = "test.exploding"

    def decode(self, data: bytes) -> Any:
        raise RuntimeError("boom")


class Liar(SilentCodec):
    """Decodes to something other than its declared type."""

    type = Fake
    id = "test.liar"

    def decode(self, data: bytes) -> Any:
        return 42


def codecs() -> Codecs:
    registry = new_codecs()
    registry.register_json(Receipt, id="test.receipt", version="2")
    registry.register(SilentCodec())
    return registry


def receipt() -> ValueRecord:
    return codecs().ready_value("receipt", Receipt(1250, "thanks"))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_well_formed_value_restores_as_its_declared_type() -> None:
    restored = restore_value(receipt(), codecs(), Receipt)

    assert restored.outcome is Outcome.RESTORED
    assert restored.ok
    assert restored.findings == ()
    assert restored.value == Receipt(1250, "thanks")
    assert restored.declared is Receipt
    assert restored.codec is not None
    assert restored.codec.id == "test.receipt"


def test_zero_bytes_restore_when_their_digest_is_the_empty_strings() -> None:
    value = codecs().ready_value("quiet", Silent())

    restored = restore_value(value, codecs(), Silent)

    assert value.data == b""
    assert value.digest == EMPTY_DIGEST == sha(b"")
    assert restored.outcome is Outcome.RESTORED
    assert restored.value == Silent()


def test_without_a_declared_type_the_codecs_own_type_is_checked() -> None:
    restored = restore_value(receipt(), codecs())

    assert restored.ok
    assert restored.declared is Receipt


def test_a_skipped_value_restores_as_skipped() -> None:
    value = ValueRecord("receipt", "test.receipt", "2", ValueState.SKIPPED)

    restored = restore_value(value, codecs(), Receipt)

    assert restored.outcome is Outcome.SKIPPED
    assert restored.ok
    assert not restored.decoded


def test_a_stream_value_checks_its_element_codec_and_decodes_nothing() -> None:
    stream = StreamDescriptorRecord("a" * 32, "b" * 32, 16)
    value = ValueRecord("events", "test.receipt", "2", ValueState.READY, stream=stream)

    assert restore_value(value, codecs()).outcome is Outcome.STREAM
    unknown = restore_value(replace(value, type_id="test.unknown"), codecs())
    assert unknown.checks == ("codec-unregistered",)


WRONG_FIELD = b'{"amount_cents":"x","memo":""}'

# One break per case: (what is broken, the change, the codecs, the declared type, the
# finding it must produce and nothing else).
Change = Callable[[ValueRecord], ValueRecord]
CASES: list[tuple[str, Change, Callable[[], Codecs], type | None, str]] = [
    (
        "unregistered codec ID",
        lambda v: replace(v, type_id="test.nobody"),
        codecs,
        Receipt,
        "codec-unregistered",
    ),
    (
        "another codec version",
        lambda v: replace(v, version="1"),
        codecs,
        Receipt,
        "codec-version",
    ),
    (
        "digest in upper case",
        lambda v: replace(v, digest=v.digest.upper()),
        codecs,
        Receipt,
        "digest-format",
    ),
    (
        "digest cut short",
        lambda v: replace(v, digest=v.digest[:63]),
        codecs,
        Receipt,
        "digest-format",
    ),
    ("digest missing", lambda v: replace(v, digest=""), codecs, Receipt, "digest-format"),
    (
        "bytes changed under their digest",
        lambda v: replace(v, data=v.data.replace(b"thanks", b"thinks")),
        codecs,
        Receipt,
        "digest-mismatch",
    ),
    (
        "bytes lost (empty) under their digest",
        lambda v: replace(v, data=b""),
        codecs,
        Receipt,
        "digest-mismatch",
    ),
    (
        "bytes that do not decode, with their own digest",
        lambda v: replace(
            v, data=b'{"amount_cents":"x","memo":""}', digest=sha(b'{"amount_cents":"x","memo":""}')
        ),
        codecs,
        Receipt,
        "decode-failed",
    ),
    (
        "a codec that raises",
        lambda v: replace(v, type_id="test.exploding", version="1", data=b"", digest=EMPTY_DIGEST),
        lambda: _with(Exploding()),
        None,
        "decode-failed",
    ),
    (
        "declared as another type",
        lambda v: v,
        codecs,
        Refund,
        "type-mismatch",
    ),
    (
        "a codec that breaks its own type",
        lambda v: replace(v, type_id="test.liar", version="1", data=b"", digest=EMPTY_DIGEST),
        lambda: _with(Liar()),
        None,
        "type-mismatch",
    ),
    (
        "a skipped value carrying bytes",
        lambda v: replace(v, state=ValueState.SKIPPED),
        codecs,
        Receipt,
        "value-state",
    ),
    (
        "a stream value carrying bytes",
        lambda v: replace(v, stream=StreamDescriptorRecord("a" * 32, "b" * 32)),
        codecs,
        Receipt,
        "value-state",
    ),
    (
        "a state that is neither ready nor skipped",
        lambda v: replace(v, state="pending"),  # type: ignore[arg-type]
        codecs,
        Receipt,
        "value-state",
    ),
    (
        "Data that is not bytes",
        lambda v: replace(v, data=v.data.decode()),  # type: ignore[arg-type]
        codecs,
        Receipt,
        "value-state",
    ),
]


def _with(codec: Any) -> Codecs:
    registry = codecs()
    registry.register(codec)
    return registry


@pytest.mark.parametrize(
    ("change", "registry", "declared", "check"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_each_broken_part_is_exactly_one_named_finding(
    change: Change, registry: Callable[[], Codecs], declared: type | None, check: str
) -> None:
    restored = restore_value(change(receipt()), registry(), declared)

    assert restored.checks == (check,), restored.findings
    assert restored.outcome is Outcome.FAILED
    assert not restored.ok


def test_every_check_has_a_case() -> None:
    assert {case[-1] for case in CASES} == set(RESTORE_CHECKS)


def test_broken_bytes_are_not_decoded() -> None:
    broken = replace(receipt(), data=b"not even json")

    restored = restore_value(broken, codecs(), Receipt)

    assert restored.checks == ("digest-mismatch",)
    assert not restored.decoded
    assert restored.value is None


def test_an_unregistered_codec_still_has_its_digest_checked() -> None:
    value = replace(receipt(), type_id="test.nobody", data=b"tampered")

    restored = restore_value(value, codecs(), Receipt)

    assert restored.checks == ("codec-unregistered", "digest-mismatch")


def test_a_declared_type_that_is_no_class_is_a_finding_not_an_error() -> None:
    restored = restore_value(receipt(), codecs(), "Receipt")  # type: ignore[arg-type]

    assert restored.checks == ("type-mismatch",)


@SLOW_OK
@given(
    type_id=st.text(max_size=12),
    version=st.text(max_size=3),
    state=st.sampled_from(["ready", "skipped", "", "pending"]),
    digest=st.text(max_size=70) | st.just(EMPTY_DIGEST),
    data=st.binary(max_size=40),
)
def test_restoring_never_raises(
    type_id: str, version: str, state: str, digest: str, data: bytes
) -> None:
    registry = codecs()
    value = ValueRecord("v", type_id, version, state, digest, data)  # type: ignore[arg-type]

    restored = restore_value(value, registry, Receipt)

    assert set(restored.checks) <= set(RESTORE_CHECKS)
    assert restored.ok == (restored.outcome in (Outcome.RESTORED, Outcome.SKIPPED, Outcome.STREAM))
