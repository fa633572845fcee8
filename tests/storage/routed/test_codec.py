"""Canonical JSON, strict decoding, schema versions and the migration registry."""

from __future__ import annotations

import json

import pytest
from hypothesis import given

from storage.routed import codec
from storage.routed.codec import marshal_canonical, unmarshal_strict
from storage.routed.enums import RunStatus
from storage.routed.errors import InvalidArgument, MigrationError, UnknownSchemaVersion
from storage.routed.ids import RunID, WorkflowID
from storage.routed.migrate import Migration, MigrationRegistry
from storage.routed.records import RunRecord

from .strategies import any_record


def run(**changes: object) -> RunRecord:
    base = RunRecord(
        run_id=RunID("run-1"),
        workflow_id=WorkflowID("wf-1"),
        run_kind="standalone",
        policy_digest="p",
        max_active_duration_ms=10,
        max_attempt_lease_ms=5,
        max_llm_spend_decimal="1.50",
    )
    return base if not changes else RunRecord(**{**base.__dict__, **changes})  # type: ignore[arg-type]


@given(any_record)
def test_every_record_round_trips_through_canonical_json(record: object) -> None:
    text = marshal_canonical(record)
    back = unmarshal_strict(type(record), text)
    assert back == record
    assert marshal_canonical(back) == text  # canonical: one spelling per value


@given(any_record)
def test_canonical_json_is_sorted_and_compact(record: object) -> None:
    text = marshal_canonical(record).decode()
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert data["schema_version"] == codec.SCHEMA_VERSION


def test_statuses_are_written_by_name_and_optional_fields_left_out() -> None:
    data = json.loads(marshal_canonical(run()))
    assert data["status"] == "PENDING"
    assert "terminated_at" not in data
    assert "node_id" not in data


def test_go_numbers_are_read_back_as_their_names() -> None:
    data = json.loads(marshal_canonical(run()))
    data["status"] = 9
    assert unmarshal_strict(RunRecord, json.dumps(data)).status is RunStatus.EXPIRED


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"surprise": 1}, "unknown fields"),
        ({"status": "PAUSE"}, "unknown value"),
        ({"status": 10}, "unknown value"),
        ({"status": True}, "unknown value"),
        ({"max_active_duration_ms": 1.5}, "expected int"),
        ({"max_active_duration_ms": True}, "expected int"),
        ({"max_active_duration_ms": 2**63}, "outside int64"),
        ({"max_active_duration_ms": "10"}, "expected int"),
        ({"run_id": "wf-1"}, "RunID"),
        ({"node_id": "run-1"}, "NodeID"),
        ({"run_kind": None}, "expected str"),
    ],
)
def test_strict_decoding_refuses_what_the_record_does_not_declare(
    change: dict[str, object], message: str
) -> None:
    data = {**json.loads(marshal_canonical(run())), **change}
    with pytest.raises(InvalidArgument, match=message):
        unmarshal_strict(RunRecord, json.dumps(data))


def test_strict_decoding_refuses_missing_fields_and_non_json() -> None:
    data = json.loads(marshal_canonical(run()))
    del data["policy_digest"]
    with pytest.raises(InvalidArgument, match="missing field"):
        unmarshal_strict(RunRecord, json.dumps(data))
    for bad in (b"", b"[]", b"{", b'{"a": NaN}', b"\xff"):
        with pytest.raises(InvalidArgument):
            unmarshal_strict(RunRecord, bad)


@pytest.mark.parametrize("version", ["0.4.0", "1.0.0", "0.2.9", "", None, 3])
def test_an_unknown_or_newer_schema_version_is_refused_before_the_fields(version: object) -> None:
    data = json.loads(marshal_canonical(run()))
    data["schema_version"] = version
    data["a_field_from_the_future"] = 1
    with pytest.raises(UnknownSchemaVersion):
        unmarshal_strict(RunRecord, json.dumps(data))


def test_check_record_refuses_wrong_prefixes_types_and_versions() -> None:
    codec.check_record(run())
    with pytest.raises(InvalidArgument, match="RunID"):
        codec.check_record(run(run_id="wf-x"))
    with pytest.raises(InvalidArgument, match="RunStatus"):
        codec.check_record(run(status="RUNNING"))
    with pytest.raises(InvalidArgument, match="int"):
        codec.check_record(run(max_attempt_lease_ms=True))
    with pytest.raises(InvalidArgument, match="Unicode"):
        codec.check_record(run(run_kind="\ud800"))
    with pytest.raises(UnknownSchemaVersion):
        codec.check_record(run(schema_version="0.4.0"))


def _step(a: str, b: str) -> Migration:
    def apply(state: bytes) -> bytes:
        data = json.loads(state)
        if data["schema_version"] == a:
            data["schema_version"] = b
            data.setdefault("steps", []).append(f"{a}->{b}")
        return json.dumps(data).encode()

    return Migration(a, b, apply)


def test_the_registry_migrates_along_one_forward_chain() -> None:
    registry = MigrationRegistry(
        "0.3.0", [_step("0.2.0", "0.2.5"), _step("0.1.0", "0.2.0"), _step("0.2.5", "0.3.0")]
    )
    version, out = registry.migrate("0.1.0", b'{"schema_version":"0.1.0"}')
    assert version == "0.3.0"
    assert json.loads(out)["steps"] == ["0.1.0->0.2.0", "0.2.0->0.2.5", "0.2.5->0.3.0"]
    assert registry.needs_migration("0.2.0")
    assert not registry.needs_migration("0.3.0")
    assert registry.migrate("0.3.0", b"x") == ("0.3.0", b"x")


@pytest.mark.parametrize(
    "steps",
    [
        [_step("0.1.0", "0.2.0")],  # ends short of current
        [_step("0.1.0", "0.2.0"), _step("0.2.5", "0.3.0")],  # a gap
        [_step("0.1.0", "0.3.0"), _step("0.2.0", "0.3.0")],  # two steps reach one version
        [_step("0.3.0", "0.2.0")],  # backwards
        [_step("0.1.0", "0.2.0"), _step("0.1.0", "0.3.0")],  # a fork
    ],
)
def test_the_registry_refuses_gaps_forks_cycles_and_backward_steps(steps: list[Migration]) -> None:
    with pytest.raises(MigrationError):
        MigrationRegistry("0.3.0", steps)


def test_a_cycle_cannot_be_built_because_every_step_goes_forward() -> None:
    with pytest.raises(MigrationError):
        MigrationRegistry("0.3.0", [_step("0.2.0", "0.3.0"), _step("0.3.0", "0.2.0")])


def test_unknown_versions_fail_closed_without_calling_a_step() -> None:
    called: list[bytes] = []

    def apply(state: bytes) -> bytes:
        called.append(state)
        return state

    registry = MigrationRegistry("0.3.0", [Migration("0.2.0", "0.3.0", apply)])
    for version in ("0.4.0", "0.1.0", "garbage"):
        with pytest.raises(UnknownSchemaVersion):
            registry.migrate(version, b'{"schema_version":"x"}')
    assert called == []


def test_a_step_that_is_not_idempotent_is_refused() -> None:
    def apply(state: bytes) -> bytes:
        data = json.loads(state)
        data["schema_version"] = "0.3.0"
        data["n"] = data.get("n", 0) + 1
        return json.dumps(data).encode()

    registry = MigrationRegistry("0.3.0", [Migration("0.2.0", "0.3.0", apply)])
    with pytest.raises(MigrationError, match="idempotent"):
        registry.migrate("0.2.0", b'{"schema_version":"0.2.0"}')
