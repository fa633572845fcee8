"""Schema version and record format (SV-01..SV-08), migration fixtures and reopen.

Refusals are proved on a separate copy of the test database opened by a child
process, so the check "the file is byte-identical afterwards" covers everything the
opening process did, connection setup included.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from storage import (
    RECORD_FORMAT,
    SCHEMA_VERSION,
    ArtifactRef,
    Binding,
    Guard,
    RecordsNewer,
    Store,
    Tx,
    seconds,
)
from storage.run_records import DurableRunRecord, RunQuery

from ..support import (
    FakeClock,
    key,
    make_event,
    make_execution,
    make_scope,
    make_timer,
    make_wait,
    make_work,
    park,
    payload,
    tx,
)
from ..support.fixtures.sqlite_files import (
    copy_database,
    current_database,
    file_digest,
    load_fixture,
    read_meta,
    run_on,
    set_meta,
)

sqlite_db = pytest.mark.django_db(transaction=True, databases=["default", "view"])
# Tests on database files (copies, fixtures) opened by child processes.
sqlite_file = pytest.mark.sqlite_only

MIGRATE = """
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
executor = MigrationExecutor(connection)
executor.migrate(executor.loader.graph.leaf_nodes("storage"))
"""

OPEN = """
try:
    store = OrmStore()
except StorageError as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc),
                      "state_check": getattr(exc, "state_check", "")}))
else:
    print(json.dumps({"schema_version": store.schema_version}))
"""


def meta() -> dict[str, str]:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT key, value FROM conduit_meta")
        return dict(cursor.fetchall())


def put_meta(**values: str | None) -> None:
    with connections["default"].cursor() as cursor:
        for name, value in values.items():
            cursor.execute("DELETE FROM conduit_meta WHERE key = %s", [name])
            if value is not None:
                cursor.execute(
                    "INSERT INTO conduit_meta (key, value) VALUES (%s, %s)", [name, value]
                )


# SV-01 ---------------------------------------------------------------------------


@sqlite_file
@pytest.mark.multiprocess
def test_a_new_database_records_schema_version_1_and_opening_exposes_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "new.sqlite3"
    run_on(db, MIGRATE)
    assert read_meta(db) == {"schema_version": "1"}, "the migration records the schema"
    opened = json.loads(run_on(db, OPEN))
    assert opened == {"schema_version": SCHEMA_VERSION} == {"schema_version": 1}
    assert read_meta(db) == {
        "schema_version": "1",
        "record_format": str(RECORD_FORMAT),
        "clock": "0 0",
    }


@sqlite_db
def test_the_open_store_exposes_the_persisted_schema_version() -> None:
    from storage.orm import OrmStore

    store = OrmStore()
    assert store.schema_version == int(meta()["schema_version"]) == 1


# SV-02, SV-07: refusal before anything changes --------------------------------------


@sqlite_db
@sqlite_file
@pytest.mark.multiprocess
@pytest.mark.parametrize(
    ("newer", "error", "names"),
    [
        ({"schema_version": "2"}, "SchemaNewer", ("schema version 2", "version 1")),
        (
            {"record_format": str(RECORD_FORMAT + 1)},
            "RecordsNewer",
            (f"record format {RECORD_FORMAT + 1}", f"this code's {RECORD_FORMAT}"),
        ),
        # Both newer, and the format entry older than ours: still nothing is written.
        (
            {"schema_version": "2", "record_format": "1"},
            "SchemaNewer",
            ("schema version 2", "version 1"),
        ),
    ],
)
def test_a_newer_database_is_refused_and_left_byte_identical(
    tmp_path: Path, newer: dict[str, str], error: str, names: tuple[str, ...]
) -> None:
    from storage.orm import OrmStore

    OrmStore().transact(Guard(), lambda t: t.put_work(make_work("w1")))
    db = copy_database(current_database(), tmp_path / "copy.sqlite3")
    set_meta(db, **newer)
    before, meta_before = file_digest(db), read_meta(db)

    refused = json.loads(run_on(db, OPEN))

    assert refused["error"] == error
    for name in names:
        assert name in refused["message"], f"the error does not name {name!r}"
    if error == "RecordsNewer":
        assert refused["state_check"] == "records_newer"
    assert file_digest(db) == before, "opening a newer database modified its file"
    assert read_meta(db) == meta_before


@sqlite_db
def test_records_newer_raises_in_process_before_any_write() -> None:
    from storage.orm import OrmStore

    newer = str(RECORD_FORMAT + 1)
    put_meta(schema_version="1", record_format=newer, clock="123 7")
    with pytest.raises(RecordsNewer) as caught:
        OrmStore()
    assert caught.value.state_check == "records_newer"
    assert meta() == {"schema_version": "1", "record_format": newer, "clock": "123 7"}


# SV-05, SV-06 ---------------------------------------------------------------------


@sqlite_db
@pytest.mark.parametrize(
    ("stored", "after"),
    [(v, str(RECORD_FORMAT)) for v in (None, "1", "3", "4", str(RECORD_FORMAT))],
)
def test_an_older_or_equal_record_format_opens_and_is_raised_to_ours(
    stored: str | None, after: str
) -> None:
    from storage.orm import OrmStore

    put_meta(schema_version="1", record_format=stored)
    OrmStore()
    assert meta()["record_format"] == after == str(RECORD_FORMAT)


# SV-03: a database written by older code, then upgraded by opening -----------------

FIXTURE_CHECK = """
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from storage.ops.backfill import backfill_event_scopes, backfill_executors
from storage.run_records import RunQuery, DurableRunRecord
from dataclasses import replace
from django.core.management import call_command
from storage import Buckets, WorkQuery, select_facets
from storage.meaning import series_tally
def plan():
    executor = MigrationExecutor(connection)
    return executor.migration_plan(executor.loader.graph.leaf_nodes("storage"))
# Upgrades are explicit, ordered migrations: apply what this code adds, then reopen.
migrated = [m.name for m, _ in plan()]
call_command("migrate", "storage", verbosity=0)
pending = plan()
store = OrmStore(clock=lambda: 1_704_067_300_000_000_000)
def series_rows():
    with connection.cursor() as cursor:
        cursor.execute("SELECT series, scope_id, state, day, n FROM conduit_series_tally")
        return {(s, sc, st, int(d)): int(n) for s, sc, st, d, n in cursor.fetchall() if n}
def series_counted(tx):
    works = tx.works()
    scope_of = {w.id: w.scope_id for w in works}
    return series_tally.count(works, tx.events(), tx.executions(), scope_of)
def read(tx):
    x = tx.execution("x-legacy")
    return {
        "migrated": migrated,
        "pending": [m.name for m, _ in pending],
        "schema_version": store.schema_version,
        "works": [w.id for w in tx.works()],
        "marks": {w.id: [w.state.value, w.exhausted, w.error_group] for w in tx.works()},
        # 0009 backfilled the tally, 0015 its margins, 0026 its exhausted rows: its
        # facets are the Work's own (the rows read), by states alone (the margins), by
        # Scope (the rest) and of the exhausted Work.
        "tallied": all(
            tx.work_facets(q) == select_facets(q, tx.works())
            for q in (WorkQuery(), WorkQuery(scope_id="acme"), WorkQuery(exhausted=True))
        ),
        # 0014 backfilled the series tally: the count from scratch over the records.
        "series_tallied": bool(series_rows()) and series_rows() == series_counted(tx),
        "events": {e.id: [e.event.actor, e.scope_id] for e in tx.events()},
        "binding": [x.binding.executor, list(x.binding.pass_env)],
        "scope_bindings": [list(b.pass_env) for b in tx.scope("acme").bindings],
        "timer": tx.timer("t-legacy").template.actor,
        "kv": tx.kv_get("cursor", "github.acme").decode(),
        "scopes_filled": backfill_event_scopes(tx),
        "executors_filled": backfill_executors(tx),
        "latest_executor": tx.work("w-legacy").latest_executor,
        "run_records": tx.count_run_records(RunQuery()),
        # The dashboard's time indexes (0004) read times the format-1 JSON already has.
        "events_per_hour": tx.event_series(Buckets(1_704_067_200 * 10**9, 3600 * 10**9, 1)),
        "attempts_per_hour": tx.attempt_series(Buckets(1_704_067_200 * 10**9, 3600 * 10**9, 1)),
        # The series reads flushed the backfill's Event Scopes, moved by the rules.
        "series_after_backfill": series_rows() == series_counted(tx),
    }
out = store.transact(Guard(), read)
def rewrite(tx):
    tx.put_scope(replace(tx.scope("acme"), name="Acme Inc"))
    tx.put_run_record(DurableRunRecord(run_id="r-new"), 0)  # the table 0004 added takes records
store.transact(Guard(), rewrite)
print(json.dumps(out))
"""


@sqlite_file
@pytest.mark.multiprocess
def test_the_schema_1_format_1_fixture_opens_upgrades_and_reads(tmp_path: Path) -> None:
    db = load_fixture("schema1_format1", tmp_path / "format1.sqlite3")
    assert "record_format" not in read_meta(db), "the fixture is format 1 (no entry)"

    out = json.loads(run_on(db, FIXTURE_CHECK))

    assert out["migrated"] == [
        "0002_event_source_index",
        "0003_work_facets_index",
        "0004_run_records",
        "0005_dashboard_indexes",
        "0006_routed_runs",
        "0007_routed_artifacts_progress",
        "0008_triage_marks",
        "0009_work_tally",
        "0010_routed_workflow_facets",
        "0011_execution_scope",
        "0012_routed_facet_covering",
        "0013_execution_running",
        "0014_series_tally",
        "0015_work_tally_margins",
        "0016_routed_workflow_tally",
        "0017_wait_active_created",
        "0018_execution_no_executor",
        "0019_event_actor",
        "0020_timed_out_groups",
        "0021_event_keys",
        "0022_execution_live_started",
        "0023_record_version",
        "0024_version_horizon",
        "0025_kv_namespace_binary",
        "0026_work_tally_exhausted",
    ]
    assert out["pending"] == [], "migrate left a storage migration unapplied"
    assert out["tallied"], "the tally's facets differ from the Work's after 0009 and 0015"
    assert out["series_tallied"], "the series tally differs from its count after 0014"
    assert out["series_after_backfill"], "backfill_event_scopes left the series tally behind"
    assert out["schema_version"] == 1
    assert out["works"] == ["w-legacy", "w-plain"]
    # Nothing there is exhausted or failed: the backfill leaves the marks unset.
    assert out["marks"] == {"w-legacy": ["running", False, ""], "w-plain": ["ready", False, ""]}
    # Fields added after format 1 read as their defaults; scopes come from backfill.
    assert out["events"] == {
        "e-named": ["", ""],
        "e-keyed": ["", ""],
        "e-manual": ["", ""],
    }
    assert out["binding"] == ["runner.legacy", []]
    assert out["scope_bindings"] == [[]]
    assert out["timer"] == ""
    assert out["kv"] == "42"
    assert out["scopes_filled"] == 2, "e-named and e-keyed resolve to w-legacy in acme"
    assert out["executors_filled"] == 1
    assert out["latest_executor"] == "runner.legacy"
    assert out["run_records"] == 0
    assert out["events_per_hour"] == [3]
    assert out["attempts_per_hour"] == [1]
    assert read_meta(db)["record_format"] == str(RECORD_FORMAT)
    # Rewritten records carry the current format's fields.
    with closing(sqlite3.connect(db)) as conn:
        (data,) = conn.execute("SELECT data FROM conduit_scope WHERE id = 'acme'").fetchone()
    assert json.loads(data)["bindings"][0]["pass_env"] == []
    with closing(sqlite3.connect(db)) as conn:
        runs = conn.execute("SELECT run_id, revision FROM conduit_run_record").fetchall()
    assert runs == [("r-new", "1")]


# Reopen: everything committed is there after the store is closed and opened again --


def everything(t: Tx) -> dict[str, Any]:
    return {
        "scopes": t.scopes(),
        "works": t.works(),
        "executions": t.executions(),
        "events": t.events(),
        "timers": t.timers(),
        "waits": t.waits(),
        "kv": t.kv_list("cursor"),
        "sequence": t.latest_sequence(),
        "version": t.store_version(),
        "runs": t.run_records(RunQuery(limit=0)),
    }


def seed_everything(t: Tx) -> None:
    t.put_scope(make_scope("s1"))
    t.put_work(make_work("w1", scope_id="s1", keys=[key("k1")], context=payload()))
    t.put_execution(make_execution("x1", "w1", binding=Binding("b", "runner.a", ("HOME",))))
    x = t.claim("x1", "host-a", t.now + seconds(30))
    t.put_execution(replace(x, artifacts=(ArtifactRef("a" * 32, 3, "text/plain", "f" * 64),)))
    t.accept_event(make_event("e1", work_id="w1", payload=payload()))
    t.set_event_scope("e1", "s1")
    t.mark_routed("e1", "w1", "routed")
    t.put_timer(make_timer("t1", t.now + seconds(60), work_id="w1"))
    park(t, "x1", make_wait("wt1", "w1", "x1", keys=[key("k1")]))
    t.kv_put("cursor", "github", b"\x00\x01cursor")
    t.put_run_record(DurableRunRecord(run_id="r1", version="v1"), 0)


def test_reopen_keeps_every_committed_record(store: Store, reopen: Any, clock: FakeClock) -> None:
    tx(store, seed_everything)
    before = tx(store, everything)
    again = reopen()
    assert again.schema_version == 1
    assert tx(again, everything) == before
    # And the reopened store goes on from there.
    clock.advance(1)
    tx(again, lambda t: t.put_work(make_work("w2")))
    assert [w.id for w in tx(again, lambda t: t.works())] == ["w1", "w2"]
