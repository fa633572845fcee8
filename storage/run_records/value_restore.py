"""Restoring one stored value: the spec's "Restoring ready values checks Codec
ID/version, digest format, the actual byte checksum, and whether the decoded value is
assignable to the declared type".

``restore_value(value, codecs, declared_type)`` never raises: every failure is a
``RestoreFinding`` with one of the stable check names of ``RESTORE_CHECKS``, so a page
can show it and a runtime can refuse the record by name. A check that depends on a
failed one is skipped rather than reported again: bytes are decoded only when the
codec ID and version are registered, the digest is 64 lowercase hex digits and it is
the SHA-256 of the bytes (the checksum is what "detects missing or corrupt bytes";
decoding them anyway would show a value that was never written).

- ``value-state``: the state is ready or skipped; a skipped value carries no Data,
  Digest or Stream; a stream value no Data or Digest; Data is bytes.
- ``codec-unregistered``: no codec has the value's TypeID.
- ``codec-version``: the codec with that ID has another version.
- ``digest-format``: the Digest is not 64 lowercase hex digits.
- ``digest-mismatch``: the Digest is not the SHA-256 of the Data, zero bytes included
  (``EMPTY_DIGEST``).
- ``decode-failed``: the codec refused the bytes (or raised anything else).
- ``type-mismatch``: the decoded value is not an instance of the declared type (the
  codec's own type when the caller declares none).

Skipped values restore as skipped (``Outcome.SKIPPED``); a stream value is not decoded
here (its endpoints are rebuilt by the runtime's factory, never passed to a codec), only
its element codec is checked (``Outcome.STREAM``).
"""

from __future__ import annotations

import builtins
import enum
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from .records import ValueRecord, ValueState
from .value_codecs import Codec, Codecs

RESTORE_CHECKS = (
    "value-state",
    "codec-unregistered",
    "codec-version",
    "digest-format",
    "digest-mismatch",
    "decode-failed",
    "type-mismatch",
)
# SHA-256 of zero bytes: the digest a ready value with empty Data must carry.
EMPTY_DIGEST = hashlib.sha256(b"").hexdigest()
_DIGEST = re.compile(r"[0-9a-f]{64}")


class Outcome(enum.StrEnum):
    RESTORED = "restored"  # decoded, every check passed
    SKIPPED = "skipped"
    STREAM = "stream"  # a stream descriptor: nothing to decode
    FAILED = "failed"  # at least one finding on a ready value


@dataclass(frozen=True, slots=True)
class RestoreFinding:
    check: str  # one of RESTORE_CHECKS
    message: str


@dataclass(frozen=True, slots=True)
class Restored:
    outcome: Outcome
    findings: tuple[RestoreFinding, ...] = ()
    codec: Codec | None = None  # the codec with the value's TypeID, when registered
    declared: type | None = None  # the type the decoded value was checked against
    decoded: bool = False  # whether ``value`` holds a decoded value
    value: Any = None

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def checks(self) -> tuple[str, ...]:
        return tuple(f.check for f in self.findings)


def restore_value(
    value: ValueRecord, codecs: Codecs, declared_type: builtins.type | None = None
) -> Restored:
    """Restore ``value`` with ``codecs`` (module docstring); never raises."""
    try:
        return _restore(value, codecs, declared_type)
    except Exception as exc:  # a record built in memory with fields of the wrong type
        finding = RestoreFinding("value-state", f"the value cannot be read: {exc!r}")
        return Restored(Outcome.FAILED, (finding,))


def _restore(value: ValueRecord, codecs: Codecs, declared: builtins.type | None) -> Restored:
    findings: list[RestoreFinding] = []

    def find(check: str, message: str) -> None:
        findings.append(RestoreFinding(check, message))

    # Read as plain objects: a record built in memory may hold anything in these fields.
    state: object = value.state
    data: object = value.data
    digest: object = value.digest
    if state == ValueState.SKIPPED:
        if value.data or value.digest or value.stream is not None:
            find("value-state", "a skipped value carries Data, a Digest or a Stream")
        outcome = Outcome.FAILED if findings else Outcome.SKIPPED
        return Restored(outcome, tuple(findings))
    if state != ValueState.READY:
        find("value-state", f"state {state!r} is neither ready nor skipped")
        return Restored(Outcome.FAILED, tuple(findings))
    codec = codecs.for_id(value.type_id)
    if codec is None:
        find("codec-unregistered", f"no codec with ID {value.type_id!r} is registered")
    elif codec.version != value.version:
        find(
            "codec-version",
            f"codec {value.type_id!r} is registered at version {codec.version!r}, "
            f"the value was written by version {value.version!r}",
        )
    if value.stream is not None:
        if value.data or value.digest:
            find("value-state", "a stream value carries Data or a Digest")
        return Restored(Outcome.FAILED if findings else Outcome.STREAM, tuple(findings), codec)
    if not isinstance(data, bytes):
        find("value-state", f"Data is {type(data).__name__}, not bytes")
        return Restored(Outcome.FAILED, tuple(findings), codec)
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        find("digest-format", f"Digest {digest!r} is not 64 lowercase hex digits")
    else:
        computed = hashlib.sha256(data).hexdigest()
        if computed != digest:
            find("digest-mismatch", f"the SHA-256 of the {len(data)} bytes is {computed}")
    if findings or codec is None:
        return Restored(Outcome.FAILED, tuple(findings), codec)
    try:
        decoded = codec.decode(data)
    except Exception as exc:  # custom codecs may raise anything; Corrupt from ours
        find("decode-failed", f"codec {codec.id!r} refused the bytes: {exc}")
        return Restored(Outcome.FAILED, tuple(findings), codec)
    expected = declared if declared is not None else codec.type
    try:
        assignable = isinstance(decoded, expected)
    except TypeError:
        assignable = False
    if not assignable:
        find(
            "type-mismatch",
            f"decoded a {type(decoded).__qualname__}, the declared type is "
            f"{getattr(expected, '__qualname__', repr(expected))}",
        )
    outcome = Outcome.FAILED if findings else Outcome.RESTORED
    return Restored(outcome, tuple(findings), codec, expected, True, decoded)
