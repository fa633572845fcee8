"""TestRecordFieldsArePinned (SV-08, SV-09) and re-encoding on write (SV-04).

``PINNED`` lists, per record format, every stored field (name and annotation) of every
stored record class and every stored enum value. The current classes must match the
entry for ``RECORD_FORMAT`` exactly, so adding, removing, renaming or retyping a stored
field fails here until ``storage.records.RECORD_FORMAT`` is bumped and a new entry is
added (a new format is never an edit of an old one: old entries are history, and
``OrmStore`` refuses to open a database written by a newer format, SV-07).

Formats 1-3 are the spec's history (2 added ``Event.actor``, 3 ``Binding.pass_env``, 4
the Event scope recorded beside the envelope). This project started writing at format
4; the older entries say what a database written by an older binary lacks, which
decoding fills with defaults.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import typing
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest
from django.db import connections

from storage import RECORD_FORMAT, Binding, Event, Execution, Guard, Work, codec, records
from storage.orm import OrmStore

Fields = Mapping[str, str]


def _values(*values: str) -> Fields:
    """An enum's stored values, pinned like field names."""
    return dict.fromkeys(values, "value")


_FORMAT_1: dict[str, Fields] = {
    "Work": {
        "id": "str",
        "kind": "str",
        "scope_id": "str",
        "parent_id": "str",
        "state": "WorkState",
        "keys": "tuple[CorrelationKey, ...]",
        "context": "Payload | None",
        "latest_executor": "str",
        "revision": "int",
        "created_at": "Nanos",
        "updated_at": "Nanos",
    },
    "Event": {
        "id": "str",
        "source": "str",
        "delivery_id": "str",
        "type": "str",
        "work_id": "str",
        "keys": "tuple[CorrelationKey, ...]",
        "causation_id": "str",
        "payload": "Payload | None",
        "occurred_at": "Nanos",
        "received_at": "Nanos",
    },
    # Storage metadata kept beside the envelope (columns, not the envelope's JSON).
    "StoredEvent": {"event": "Event", "sequence": "int", "route": "Route | None"},
    "Route": {"work_id": "str", "disposition": "str", "routed_at": "Nanos"},
    "Execution": {
        "id": "str",
        "work_id": "str",
        "attempt": "int",
        "state": "ExecutionState",
        "executor": "str",
        "binding": "Binding | None",
        "trace_id": "str",
        "outcome": "Outcome | None",
        "artifacts": "tuple[ArtifactRef, ...]",
        "owner": "str",
        "epoch": "int",
        "lease_expires_at": "Nanos",
        "started_at": "Nanos",
        "finished_at": "Nanos",
        "revision": "int",
        "created_at": "Nanos",
        "updated_at": "Nanos",
    },
    "Binding": {"name": "str", "executor": "str"},
    "Outcome": {"kind": "OutcomeKind", "message": "str", "detail": "Payload | None"},
    "ArtifactRef": {"id": "str", "size": "int", "media_type": "str", "sha256": "str"},
    "Timer": {
        "id": "str",
        "fire_at": "Nanos",
        "template": "Event",
        "work_id": "str",
        "purpose": "str",
        "revision": "int",
        "created_at": "Nanos",
        "updated_at": "Nanos",
    },
    "Wait": {
        "id": "str",
        "work_id": "str",
        "execution_id": "str",
        "keys": "tuple[CorrelationKey, ...]",
        "types": "tuple[str, ...]",
        "after_sequence": "int",
        "timeout_timer_id": "str",
        "description": "str",
        "owner": "str",
        "progress": "str",
        "state": "WaitState",
        "woken_by": "str",
        "revision": "int",
        "created_at": "Nanos",
        "updated_at": "Nanos",
    },
    "Scope": {
        "id": "str",
        "parent_id": "str",
        "name": "str",
        "routes": "tuple[JSON, ...]",
        "bindings": "tuple[Binding, ...]",
        "config": "Mapping[str, JSON]",
        "secret_refs": "tuple[str, ...]",
        "revision": "int",
        "created_at": "Nanos",
        "updated_at": "Nanos",
    },
    "CorrelationKey": {"source": "str", "external_id": "str"},
    "Payload": {"schema": "str", "data": "bytes"},
    # Stored enum values: a renamed or new value is unreadable by an older binary.
    "WorkState": _values("ready", "running", "waiting", "completed", "failed", "cancelled"),
    "ExecutionState": _values(
        "pending", "running", "parked", "completed", "failed", "waiting", "handoff", "cancelled"
    ),
    "OutcomeKind": _values("completed", "failed", "waiting", "handoff"),
    "WaitState": _values("active", "woken", "cancelled"),
}


def _adding(previous: dict[str, Fields], cls: str, **fields: str) -> dict[str, Fields]:
    return {**previous, cls: {**previous[cls], **fields}}


# What each format changed, as the spec's format history states it (SV-08).
CHANGES: dict[int, tuple[tuple[str, str, str], ...]] = {
    2: (("Event", "actor", "str"),),
    3: (("Binding", "pass_env", "tuple[str, ...]"),),
    4: (("StoredEvent", "scope_id", "str"),),
    # The triage marks storage keeps on each Work (both in one format: one change).
    5: (("Work", "exhausted", "bool"), ("Work", "error_group", "str")),
    # No record field: the Work tally (migration 0009) and the attempt's Scope column
    # (0011) are kept by every write, so a format-5 writer must be stopped (RecordsNewer).
    6: (),
    # No record field: the series tally (migration 0014) is kept by every write, so a
    # format-6 writer must be stopped (RecordsNewer).
    7: (),
    # No record field: Work.error_group also holds the group of a timed-out Wait
    # (migration 0020), so a format-7 writer must be stopped (RecordsNewer).
    8: (),
    # No record field of these: the routed AttemptLease's monotonic bounds and the
    # routed monotonic mark (storage.routed.clock), so a format-8 writer must be
    # stopped (RecordsNewer).
    9: (),
    # No record field: the Event key rows (migration 0021) are kept by every Event
    # write, so a format-9 writer must be stopped (RecordsNewer).
    10: (),
    # No record field: the exhausted Work's own Work tally rows (migration 0026) are
    # kept by every Work write, so a format-10 writer must be stopped (RecordsNewer).
    11: (),
}

PINNED: dict[int, dict[str, Fields]] = {1: _FORMAT_1}
for _format, _added in sorted(CHANGES.items()):
    PINNED[_format] = PINNED[_format - 1]
    for _cls, _field, _type in _added:
        PINNED[_format] = _adding(PINNED[_format], _cls, **{_field: _type})

# The records a store persists; everything they contain is found from here.
ROOTS: tuple[type[Any], ...] = (
    records.Work,
    records.StoredEvent,
    records.Execution,
    records.Scope,
    records.Timer,
    records.Wait,
)


def stored_types() -> dict[str, type[Any]]:
    """Every dataclass and enum reachable from the stored records' annotations."""
    found: dict[str, type[Any]] = {}
    todo: list[Any] = list(ROOTS)
    while todo:
        tp = todo.pop()
        if isinstance(tp, type) and (dataclasses.is_dataclass(tp) or issubclass(tp, enum.Enum)):
            if tp.__name__ in found:
                continue
            found[tp.__name__] = tp
            if dataclasses.is_dataclass(tp):
                todo.extend(typing.get_type_hints(tp, vars(records)).values())
        else:
            todo.extend(typing.get_args(tp))
    return found


def current_fields(tp: type[Any]) -> dict[str, str]:
    if issubclass(tp, enum.Enum):
        return {member.value: "value" for member in tp}
    return {f.name: str(f.type) for f in dataclasses.fields(tp)}


class TestRecordFieldsArePinned:
    def test_the_pinned_table_ends_at_the_current_format(self) -> None:
        assert max(PINNED) == RECORD_FORMAT, (
            f"RECORD_FORMAT is {RECORD_FORMAT} but the pinned table ends at {max(PINNED)}: "
            "add the new format's entry to PINNED (and CHANGES) in this file"
        )
        assert RECORD_FORMAT >= 4, "SV-08: the current format is at least 4"

    def test_every_stored_record_class_is_pinned(self) -> None:
        assert sorted(stored_types()) == sorted(PINNED[RECORD_FORMAT]), (
            "a stored record class or enum was added or removed: bump RECORD_FORMAT "
            "and add an entry to PINNED"
        )

    @pytest.mark.parametrize("name", sorted(PINNED[RECORD_FORMAT]))
    def test_stored_fields_match_the_current_format(self, name: str) -> None:
        current = current_fields(stored_types()[name])
        pinned = dict(PINNED[RECORD_FORMAT][name])
        assert current == pinned, (
            f"{name}'s stored fields changed (added {sorted(current.keys() - pinned.keys())}, "
            f"removed {sorted(pinned.keys() - current.keys())}, retyped "
            f"{sorted(k for k in current.keys() & pinned.keys() if current[k] != pinned[k])}): "
            f"bump RECORD_FORMAT (now {RECORD_FORMAT}) and pin the new format"
        )

    def test_each_format_changes_what_its_history_says(self) -> None:
        for fmt in range(2, RECORD_FORMAT + 1):
            before, after = PINNED[fmt - 1], PINNED[fmt]
            diff = {
                (cls, name)
                for cls in after
                for name in after[cls]
                if name not in before.get(cls, {})
            }
            assert diff == {c[:2] for c in CHANGES[fmt]}, f"format {fmt} changed {diff}"


# SV-04: every write re-encodes through the current classes ------------------------


def test_decoding_drops_an_unknown_field_and_encoding_never_writes_it() -> None:
    text = codec.encode(Work(id="w1", kind="test.kind"))
    newer = json.dumps({**json.loads(text), "added_by_a_newer_binary": 7})
    work = codec.decode(Work, newer)
    assert work == Work(id="w1", kind="test.kind")
    assert "added_by_a_newer_binary" not in codec.encode(work)


def test_a_missing_field_takes_its_default() -> None:
    older = json.loads(codec.encode(Event(id="e1", source="a.b", delivery_id="d", type="x.y")))
    del older["actor"]  # an envelope written before format 2
    assert codec.decode(Event, json.dumps(older)).actor == ""


def _stored_json(table: str, record_id: str) -> dict[str, Any]:
    with connections["default"].cursor() as cursor:
        cursor.execute(f"SELECT data FROM {table} WHERE id = %s", [record_id])  # noqa: S608
        data: dict[str, Any] = json.loads(cursor.fetchone()[0])
    return data


def _store_json(table: str, record_id: str, data: dict[str, Any]) -> None:
    with connections["default"].cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET data = %s WHERE id = %s",  # noqa: S608
            [json.dumps(data), record_id],
        )


@pytest.mark.django_db(transaction=True, databases=["default", "view"])
def test_a_rewrite_drops_fields_this_code_does_not_know() -> None:
    store = OrmStore()

    def seed(tx: Any) -> None:
        tx.put_work(Work(id="w1", kind="test.kind"))
        tx.put_execution(
            Execution(id="x1", work_id="w1", attempt=1, binding=Binding("b", "runner.a"))
        )

    store.transact(Guard(), seed)
    work = _stored_json("conduit_work", "w1")
    _store_json("conduit_work", "w1", {**work, "future": {"nested": True}})
    execution = _stored_json("conduit_execution", "x1")
    execution["binding"]["future_binding_field"] = ["x"]
    _store_json("conduit_execution", "x1", execution)

    def rewrite(tx: Any) -> None:
        w = tx.work("w1")
        assert w == codec.decode(Work, json.dumps(work)), "an unknown field changed the read"
        tx.put_work(replace(w, state="running"))
        x = tx.execution("x1")
        tx.put_execution(replace(x, trace_id="t-1"))

    store.transact(Guard(), rewrite)
    assert "future" not in _stored_json("conduit_work", "w1")
    rewritten = _stored_json("conduit_execution", "x1")
    assert rewritten["binding"] == {"name": "b", "executor": "runner.a", "pass_env": []}
    assert rewritten["trace_id"] == "t-1"
