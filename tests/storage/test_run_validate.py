"""The run-record validator (storage/runs/validate.py): a realistic valid record reports
nothing; each single change to it reports exactly the violation it makes."""

from __future__ import annotations

from pathlib import Path

from storage.runs import RunRecord, decode
from storage.runs.validate import RULES, validate_run

FIXTURES = Path(__file__).parent / "fixtures" / "runs"

# What the valid record's nodes Provide (the graph definition's side of node-outputs).
PROVIDES = {
    "fetch": {"orders", "cursor"},
    "notify": {"receipt"},
    "events": {"feed", "dead-letters"},
    "enrich": {"enriched"},
    "lookup": {"customer"},
    "audit": {"summary", "alerts"},
}


def valid_record() -> RunRecord:
    return decode((FIXTURES / "valid.json").read_bytes())


def test_the_valid_record_reports_nothing() -> None:
    assert validate_run(valid_record()) == []
    assert validate_run(valid_record(), PROVIDES) == []


def test_rule_names_are_unique() -> None:
    assert len(set(RULES)) == len(RULES)
