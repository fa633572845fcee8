"""The run-record validator (storage/run_records/validate.py): a realistic valid record reports
nothing; each single change to it reports exactly the violation it makes."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.errors import Invalid, StorageError
from storage.run_records import (
    AttemptState,
    DurableRunRecord,
    NodeAttemptRecord,
    decode,
    encode,
)
from storage.run_records.validate import RULES, Finding, path_key, validate_run

from ..support.run_records import FIXTURES, RECORDS, valid_record
from ..support.run_records import PROVIDES as ANY_PROVIDES

# What the valid record's nodes Provide (the graph definition's side of node-outputs).
PROVIDES = {
    "fetch": {"orders", "cursor"},
    "notify": {"receipt"},
    "events": {"feed", "dead-letters"},
    "enrich": {"enriched"},
    "lookup": {"customer"},
    "audit": {"summary", "alerts"},
}


def test_the_valid_record_reports_nothing() -> None:
    assert validate_run(valid_record()) == []
    assert validate_run(valid_record(), PROVIDES) == []


def test_rule_names_are_unique() -> None:
    assert len(set(RULES)) == len(RULES)


CASES = json.loads((FIXTURES / "invalid.json").read_text())


def changed(document: Any, change: dict[str, Any]) -> Any:
    """``document`` with one change applied: ``replace`` or ``add`` the value at the
    ``at`` steps (map keys and list indexes), or ``remove`` it."""
    result = copy.deepcopy(document)
    *steps, last = change["at"]
    parent = result
    for step in steps:
        parent = parent[step]
    if change["op"] == "remove":
        del parent[last]
    elif change["op"] == "add":
        assert last not in parent, f"add over an existing {last!r}"
        parent[last] = change["value"]
    else:
        assert change["op"] == "replace"
        assert parent[last] != change["value"], "a replace must change something"
        parent[last] = change["value"]
    return result


@pytest.mark.parametrize("case", CASES, ids=[case["case"] for case in CASES])
def test_a_single_change_reports_exactly_its_violation(case: dict[str, Any]) -> None:
    document = json.loads((FIXTURES / "valid.json").read_text())
    record = decode(json.dumps(changed(document, case["change"])).encode())
    provides = PROVIDES if case.get("provides", True) else None
    found = sorted((f.rule, f.path) for f in validate_run(record, provides))
    assert found == sorted((f["rule"], f["path"]) for f in case["findings"])


# Rules a JSON fixture cannot show, because decode refuses the record: tested in code.
IN_CODE = {"format", "attempt-state"}


def test_every_rule_has_a_fixture() -> None:
    covered = {finding["rule"] for case in CASES for finding in case["findings"]}
    assert covered | IN_CODE == set(RULES)
    assert covered.isdisjoint(IN_CODE)


def test_it_reports_incremental_fields_in_a_format_1_record() -> None:
    (finding,) = validate_run(replace(valid_record(), format=1))
    assert (finding.rule, finding.path) == ("format", "$.Format")
    assert "$.Streams, $.Messages, $.Managed" in finding.message
    assert '.Nodes["events"].Outputs[0].Stream' in finding.message


def test_an_ordinary_format_1_record_reports_nothing() -> None:
    document = json.loads((FIXTURES / "valid.json").read_text())
    document["Format"] = 1
    for name in ("Streams", "Messages", "Managed"):
        del document[name]
    events = document["Scopes"][document["RootScope"]]["Nodes"].pop("events")
    del document["Attempts"][events["Attempt"]]
    record = decode(json.dumps(document).encode())
    assert validate_run(record) == []
    assert validate_run(record, PROVIDES) == []


def test_it_reports_an_unknown_format() -> None:
    found = validate_run(replace(valid_record(), format=3))
    assert [(f.rule, f.path) for f in found] == [("format", "$.Format")]


def attempt_id(record: DurableRunRecord, node_id: str, index: int, *, retry: bool) -> str:
    (found,) = [
        key
        for key, attempt in record.attempts.items()
        if attempt.node_id == node_id and attempt.index == index and bool(attempt.boundary) == retry
    ]
    return found


def with_attempts(record: DurableRunRecord, **changes: NodeAttemptRecord) -> DurableRunRecord:
    return replace(record, attempts={**record.attempts, **changes})


def test_it_reports_an_unknown_attempt_state() -> None:
    record = valid_record()
    last = attempt_id(record, "enrich", 3, retry=True)
    # Built in memory: decode refuses the state, a caller's dataclass does not.
    paused = replace(record.attempts[last], state=cast(AttemptState, "paused"))
    found = validate_run(with_attempts(record, **{last: paused}))
    assert [(f.rule, f.path) for f in found] == [("attempt-state", f'$.Attempts["{last}"].State')]


def test_it_reports_an_index_past_a_shared_limit() -> None:
    record = valid_record()
    retries = {
        key: replace(attempt, limit=2)
        for key, attempt in record.attempts.items()
        if attempt.boundary == "retry@0"
    }
    last = attempt_id(record, "enrich", 3, retry=True)
    found = validate_run(with_attempts(record, **retries))
    assert [(f.rule, f.path) for f in found] == [("attempt-limit", f'$.Attempts["{last}"].Index')]


def test_it_reports_acked_through_past_last_sequence() -> None:
    record = valid_record()
    ((key, stream),) = record.streams.items()
    moved = replace(stream, acked_through=stream.last_sequence + 1, pending=())
    found = validate_run(replace(record, streams={key: moved}))
    assert [(f.rule, f.path) for f in found] == [
        ("stream-frontier", f'$.Streams["{key}"].AckedThrough')
    ]


def test_a_missing_root_scope_is_reported_once() -> None:
    record = DurableRunRecord(run_id="r", definition="d", inputs="i", root_scope="ab" * 16)
    found = validate_run(record)
    assert [(f.rule, f.path) for f in found] == [("parent-chain", "$.RootScope")]


def test_paths_quote_keys_as_json() -> None:
    assert path_key('a"b') == '["a\\"b"]'
    assert path_key("café") == '["café"]'
    # Not valid UTF-8: escaped, so the path can be written to a page or a log.
    assert path_key("\ud800") == '["\\ud800"]'


def reversed_maps(record: DurableRunRecord) -> DurableRunRecord:
    """The same record with every map in the opposite key order."""

    def flip(items: Mapping[str, Any]) -> dict[str, Any]:
        return dict(reversed(items.items()))

    scopes = {k: replace(s, nodes=flip(s.nodes)) for k, s in flip(record.scopes).items()}
    return replace(
        record,
        scopes=scopes,
        attempts=flip(record.attempts),
        streams=flip(record.streams),
        messages=flip(record.messages),
        managed=flip(record.managed),
    )


def assert_well_formed(findings: list[Finding]) -> None:
    assert all(isinstance(f, Finding) for f in findings)
    assert all(f.rule in RULES and f.path.startswith("$") and f.message for f in findings)
    assert len(set(findings)) == len(findings)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=RECORDS, provides=ANY_PROVIDES)
def test_it_never_raises_and_is_deterministic(
    record: DurableRunRecord, provides: Mapping[str, frozenset[str]] | None
) -> None:
    findings = validate_run(record, provides)
    assert_well_formed(findings)
    assert validate_run(record, provides) == findings
    assert validate_run(reversed_maps(record), provides) == findings
    try:
        data = encode(record)
    except Invalid:
        return  # a record no store may hold (negative integers, bad states, surrogates)
    assert validate_run(decode(data), provides) == findings


def _leaves(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, (*at, k))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, (*at, i))]
    return [(at, value)]


_VALID = json.loads((FIXTURES / "valid.json").read_text())
_LEAVES = _leaves(_VALID)
_STRINGS = sorted({v for _, v in _LEAVES if isinstance(v, str)} | {"", "x"})


@st.composite
def _mutations(draw: st.DrawFn) -> dict[str, Any]:
    """The valid document with one to three leaves replaced by values of their type,
    drawn from the document's own strings so references move between real IDs."""
    document = copy.deepcopy(_VALID)
    for at, old in draw(st.lists(st.sampled_from(_LEAVES), min_size=1, max_size=3)):
        if isinstance(old, bool):
            new: Any = draw(st.booleans())
        elif isinstance(old, int):
            new = draw(st.integers(0, 12))
        else:
            new = draw(st.sampled_from(_STRINGS))
        parent = document
        for step in at[:-1]:
            parent = parent[step]
        parent[at[-1]] = new
    return document


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_mutations(), provides=st.sampled_from([None, PROVIDES]))
def test_mutations_of_the_valid_record_are_checked_deterministically(
    document: dict[str, Any], provides: Mapping[str, set[str]] | None
) -> None:
    try:
        record = decode(json.dumps(document).encode())
    except StorageError:
        return  # a mutation decode refuses (an enum, a format-1 record with streams)
    findings = validate_run(record, provides)
    assert_well_formed(findings)
    assert validate_run(reversed_maps(record), provides) == findings
    if document == _VALID:
        assert findings == []
