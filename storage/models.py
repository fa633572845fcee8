"""Tables of the Django ORM backend, private to it (``storage.orm``; ``bench`` looks
at them for its admin timings): the console reads through ``storage.view`` and writes
through ``transact``. Table names are declared here once; ``storage.orm.schema`` is
the registry every hand-written statement takes them from.

Each record is stored whole as JSON in ``data`` (re-encoded on every write through the
current dataclasses) beside the indexed columns that every query, live read and scan
uses, so their cost follows what they select rather than retained history.
Times are integer UTC nanoseconds.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Func, Q

# The classes the migrations name live in a frozen module kept for them (issue 30).
from .migrations._frozen_v1 import BinaryCharField as BinaryCharField
from .migrations._frozen_v1 import JsonNanos as JsonNanos
from .records import Table
from .tables import live_values


def _live(table: Table) -> Q:
    """The condition of ``table``'s partial index of live rows (``storage.tables``):
    the SQL ``orm.schema`` writes for live reads repeats it exactly."""
    values = live_values(table)
    return Q(state=values[0]) if len(values) == 1 else Q(state__in=values)


# The rows of the triage indexes (``Work.exhausted``, ``Work.error_group``). The reads
# filter with these same Q objects, so each engine sees the index's own condition.
EXHAUSTED_ROWS = Q(exhausted=True)
GROUPED_ROWS = ~Q(error_group="")
# The running attempts' indexes (the reads write the same ``state = 'running'``).
RUNNING = Q(state="running")


class JsonText(Func):
    """A record's text field read from ``data``'s JSON (``Dialect.json_text``): the
    reads' spelling of an index that migration 0019 creates with the same SQL."""

    output_field = models.CharField()

    def __init__(self, name: str) -> None:
        super().__init__(F("data"))
        self.name = name

    def as_sql(  # type: ignore[override]
        self, compiler: Any, connection: BaseDatabaseWrapper, **extra: Any
    ) -> tuple[str, Any]:
        from .orm.dialect import dialect

        column, params = compiler.compile(self.source_expressions[0])
        return dialect(connection).json_text(column, self.name), params


class _Row(models.Model):
    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{type(self).__name__}({self.pk})"


class MetaRow(_Row):
    key = models.CharField(primary_key=True, max_length=64)
    value = models.TextField()

    class Meta:
        db_table = "conduit_meta"


class WorkRow(_Row):
    id = BinaryCharField(primary_key=True, max_length=255)
    kind = models.CharField(max_length=200)
    scope_id = models.CharField(max_length=255)
    parent_id = models.CharField(max_length=255)
    state = models.CharField(max_length=16)
    source = models.CharField(max_length=255)
    latest_executor = models.CharField(max_length=255)
    # The triage marks (``Work.exhausted``, ``Work.error_group``), kept at commit.
    exhausted = models.BooleanField(default=False)
    error_group = models.CharField(max_length=255, default="")
    created_ns = models.BigIntegerField()
    updated_ns = models.BigIntegerField()
    revision = models.BigIntegerField()
    data = models.TextField()

    class Meta:
        db_table = "conduit_work"
        # One index per (filter, order) pair the console uses; each ends in the sort
        # columns so a filtered first page is an index range scan with a LIMIT.
        indexes = [
            models.Index(fields=["created_ns", "id"], name="work_created"),
            models.Index(fields=["updated_ns", "id"], name="work_updated"),
            models.Index(fields=["state", "created_ns", "id"], name="work_state_created"),
            models.Index(fields=["state", "updated_ns", "id"], name="work_state_updated"),
            models.Index(fields=["scope_id", "created_ns", "id"], name="work_scope_created"),
            models.Index(fields=["scope_id", "updated_ns", "id"], name="work_scope_updated"),
            models.Index(fields=["kind", "created_ns", "id"], name="work_kind_created"),
            models.Index(fields=["source", "created_ns", "id"], name="work_source_created"),
            models.Index(fields=["parent_id", "created_ns", "id"], name="work_parent_created"),
            models.Index(
                fields=["latest_executor", "created_ns", "id"], name="work_executor_created"
            ),
            # Covers work_facets: one GROUP BY over the seven dimensions reads only this.
            models.Index(
                fields=[
                    "state",
                    "kind",
                    "source",
                    "scope_id",
                    "latest_executor",
                    "exhausted",
                    "error_group",
                ],
                name="work_facets_triage",
            ),
            # The triage selections hold few of the Work: partial indexes of just those
            # rows, in each list order, so their pages and counts cost what they select.
            models.Index(
                fields=["created_ns", "id"], name="work_exhausted_created", condition=EXHAUSTED_ROWS
            ),
            models.Index(
                fields=["updated_ns", "id"], name="work_exhausted_updated", condition=EXHAUSTED_ROWS
            ),
            models.Index(
                fields=["error_group", "created_ns", "id"],
                name="work_group_created",
                condition=GROUPED_ROWS,
            ),
            # Covers error_groups: the GROUP BY over grouped Work reads only this.
            models.Index(
                fields=["error_group", "kind", "state", "exhausted", "updated_ns"],
                name="work_error_groups",
                condition=GROUPED_ROWS,
            ),
            models.Index(fields=["id"], name="work_live", condition=_live("work")),
            # A Scope dashboard's series: per state, per Scope of the subtree, a range
            # of update times, read from the index alone. State first: SQLite, which
            # has no statistics here, then picks it for an IN list of Scopes too.
            models.Index(
                fields=["state", "scope_id", "updated_ns"], name="work_state_scope_updated"
            ),
        ]


class WorkTallyRow(_Row):
    """The Work tally (``storage.meaning.tally``): how many Work of one (state, Scope,
    kind) have one value of one facet dimension, kept by the rules in the write
    transaction. A row whose Work all moved on stays at 0 (deleting it would cost a
    statement per commit; the rows number the combinations ever seen, not the Work)."""

    id = models.BigAutoField(primary_key=True)
    dimension = models.CharField(max_length=16)
    state = models.CharField(max_length=16)
    scope_id = models.CharField(max_length=255)
    kind = models.CharField(max_length=200)
    value = models.CharField(max_length=255)
    n = models.BigIntegerField()

    class Meta:
        db_table = "conduit_work_tally"
        # The upsert's conflict target, and the facets' read: dimension first, so the
        # Work rows (dimension "") and the other dimensions are two ranges.
        constraints = [
            models.UniqueConstraint(
                fields=["dimension", "state", "scope_id", "kind", "value"], name="work_tally_key"
            )
        ]


class SeriesTallyRow(_Row):
    """The series tally (``storage.meaning.series_tally``): how many Events, first
    claims or Work (per state) of one Scope (or store-wide) fall on one UTC day, kept
    by the rules in the write transaction. A row whose Work all moved on stays at 0."""

    id = models.BigAutoField(primary_key=True)
    series = models.CharField(max_length=16)
    scope_id = models.CharField(max_length=255)
    state = models.CharField(max_length=16)
    day = models.BigIntegerField()
    n = models.BigIntegerField()

    class Meta:
        db_table = "conduit_series_tally"
        # The upsert's conflict target, in the read's order: one (series, Scope,
        # state) run of days is one index range.
        constraints = [
            models.UniqueConstraint(
                fields=["series", "scope_id", "state", "day"], name="series_tally_key"
            )
        ]


class KeyRow(_Row):
    source = models.CharField(max_length=255)
    external_id = models.CharField(max_length=255)
    work_id = models.CharField(max_length=255, db_index=True)
    ordinal = models.IntegerField()

    class Meta:
        db_table = "conduit_key"
        constraints = [
            models.UniqueConstraint(fields=["source", "external_id"], name="key_one_owner")
        ]


class EventKeyRow(_Row):
    """One correlation key an Event carries, beside its sequence: the index of the
    Events by key (``find_events(key=...)``: everything about a key), written with the
    Event's row; the Event's JSON still holds its keys in order. Migration 0021
    backfills it."""

    seq = models.BigIntegerField()
    source = models.CharField(max_length=255)
    external_id = models.CharField(max_length=255)

    class Meta:
        db_table = "conduit_event_key"
        indexes = [models.Index(fields=["source", "external_id", "seq"], name="event_key")]


class EventRow(_Row):
    # The acceptance sequence. AUTOINCREMENT on SQLite: never reused, even after a
    # rollback or a deletion, so replay cursors stay valid.
    seq = models.BigAutoField(primary_key=True)
    id = models.CharField(max_length=255, unique=True)
    source = models.CharField(max_length=255)
    delivery_id = models.CharField(max_length=255)
    type = models.CharField(max_length=200)
    work_id = models.CharField(max_length=255)
    causation_id = models.CharField(max_length=255)
    scope_id = models.CharField(max_length=255)
    route_work_id = models.CharField(max_length=255)
    disposition = models.CharField(max_length=64)
    routed_ns = models.BigIntegerField()
    data = models.TextField()

    class Meta:
        db_table = "conduit_event"
        constraints = [
            models.UniqueConstraint(fields=["source", "delivery_id"], name="event_delivery")
        ]
        indexes = [
            models.Index(fields=["work_id", "seq"], name="event_work"),
            models.Index(fields=["route_work_id", "seq"], name="event_routed_work"),
            models.Index(fields=["scope_id", "seq"], name="event_scope"),
            models.Index(fields=["causation_id", "seq"], name="event_causation"),
            models.Index(fields=["type", "seq"], name="event_type"),
            models.Index(fields=["source", "seq"], name="event_source"),
            models.Index(fields=["seq"], name="event_unrouted", condition=Q(disposition="")),
            # Events accepted per time bucket, store-wide and per recorded Scope.
            models.Index(JsonNanos("received_at"), name="event_received"),
            models.Index(F("scope_id"), JsonNanos("received_at"), name="event_scope_received"),
            # Not declared here: event_actor, (JSON actor, seq), is created by migration
            # 0019 in SQL frozen inside it (an expression index declared here would
            # make the migration import this module's expression class).
        ]


class ExecutionRow(_Row):
    id = BinaryCharField(primary_key=True, max_length=255)
    work_id = models.CharField(max_length=255)
    # The attempt's Work's Scope (fixed at the Work's creation, so written once, at
    # the attempt's INSERT): the dashboards select a Scope's attempts by it rather
    # than looking each attempt's Work up. Not in the record's JSON.
    scope_id = models.CharField(max_length=255, db_default="")
    attempt = models.IntegerField()
    state = models.CharField(max_length=16)
    executor = models.CharField(max_length=255)
    lease_expires_ns = models.BigIntegerField()
    data = models.TextField()

    class Meta:
        db_table = "conduit_execution"
        constraints = [
            models.UniqueConstraint(fields=["work_id", "attempt"], name="execution_attempt")
        ]
        indexes = [
            models.Index(fields=["id"], name="execution_live", condition=_live("execution")),
            # Attempts started per time bucket, store-wide and per Scope.
            models.Index(JsonNanos("started_at"), name="execution_started"),
            models.Index(F("scope_id"), JsonNanos("started_at"), name="execution_scope_started"),
            # The live attempts in the Executions page's order (started_at, id; read
            # backward, newest first): its default page reads the rows it shows, where
            # the live index made it read and sort every live attempt (16,700 at a
            # realistic million).
            models.Index(
                JsonNanos("started_at"),
                F("id"),
                name="execution_live_started",
                condition=_live("execution"),
            ),
            # A Scope's live attempts (the dashboards' running and expired lists).
            models.Index(
                fields=["scope_id", "state"],
                name="execution_scope_live",
                condition=_live("execution"),
            ),
            # The running attempts in the dashboards' orders (longest running, oldest
            # expired lease first), store-wide and per Scope: a list of ten and the
            # expired count read ten rows or an index range, where the live index
            # made them sort every running attempt (as many as the history's live
            # share: 13,000 at a realistic million).
            models.Index(
                JsonNanos("started_at"),
                F("id"),
                name="execution_running_started",
                condition=RUNNING,
            ),
            models.Index(
                fields=["lease_expires_ns", "id"],
                name="execution_running_lease",
                condition=RUNNING,
            ),
            models.Index(
                F("scope_id"),
                JsonNanos("started_at"),
                F("id"),
                name="execution_scope_run_started",
                condition=RUNNING,
            ),
            models.Index(
                fields=["scope_id", "lease_expires_ns", "id"],
                name="execution_scope_run_lease",
                condition=RUNNING,
            ),
            # Attempts with no executor recorded: the startup backfill's candidates,
            # none once every attempt has one (every attempt written since format 5).
            models.Index(fields=["id"], name="execution_no_executor", condition=Q(executor="")),
        ]


class ScopeRow(_Row):
    id = BinaryCharField(primary_key=True, max_length=255)
    parent_id = models.CharField(max_length=255, db_index=True)
    data = models.TextField()

    class Meta:
        db_table = "conduit_scope"


class TimerRow(_Row):
    id = BinaryCharField(primary_key=True, max_length=255)
    # A deleted timer keeps its row (live=False) as the revision tombstone, so a
    # recreated timer continues above it and an old fire command cannot match.
    live = models.BooleanField()
    revision = models.BigIntegerField()
    fire_ns = models.BigIntegerField()
    work_id = models.CharField(max_length=255)
    data = models.TextField()

    class Meta:
        db_table = "conduit_timer"
        indexes = [
            models.Index(fields=["fire_ns", "id"], name="timer_due", condition=Q(live=True)),
            models.Index(fields=["work_id", "id"], name="timer_work", condition=Q(live=True)),
        ]


class WaitRow(_Row):
    id = BinaryCharField(primary_key=True, max_length=255)
    work_id = models.CharField(max_length=255)
    execution_id = models.CharField(max_length=255)
    state = models.CharField(max_length=16)
    data = models.TextField()

    class Meta:
        db_table = "conduit_wait"
        indexes = [
            models.Index(fields=["work_id", "id"], name="wait_work"),
            models.Index(fields=["id"], name="wait_active", condition=_live("wait")),
            # The Waits page's order: active Waits oldest first, ties by ID, so a page
            # (and the ``older`` bound) is one range of this index and a LIMIT.
            models.Index(
                JsonNanos("created_at"),
                F("id"),
                name="wait_active_created",
                condition=_live("wait"),
            ),
        ]


class KVRow(_Row):
    # Binary order (migration 0025): ``kv_namespaces`` pages namespaces by seeks
    # over the ``kv_key`` index, which must hold them in the order the contract gives.
    namespace = BinaryCharField(max_length=255)
    key = BinaryCharField(max_length=1024)
    value = models.BinaryField()

    class Meta:
        db_table = "conduit_kv"
        constraints = [models.UniqueConstraint(fields=["namespace", "key"], name="kv_key")]


class VersionRow(_Row):
    """The record-version log (``storage.versions``): one record's state before one
    transaction changed it. ``position`` is the key and the log's order: the
    transaction's store version shifted left 24 bits, plus the row's index within it
    (``storage.tx.versions``), so a range of versions is a range of positions. A
    record's state before is its JSON text (``data``), a KV entry's its bytes
    (``value``); both NULL: the transaction created it."""

    position = models.BigIntegerField(primary_key=True)
    at_ns = models.BigIntegerField()
    kind = models.CharField(max_length=16)
    record_id = BinaryCharField(max_length=255)
    key = BinaryCharField(max_length=1024)
    event_seq = models.BigIntegerField()
    execution_id = models.CharField(max_length=255)
    # The Work the record is of (``RecordVersion.work_id``); "" for Scopes and KV.
    work_id = BinaryCharField(max_length=255)
    # NULL, not "": "" is a KV entry's possible state (an empty value); NULL is none.
    data = models.TextField(null=True)  # noqa: DJ001
    value = models.BinaryField(null=True)

    class Meta:
        db_table = "conduit_record_version"
        indexes = [
            # One record's rows in order: its history, and its first change after a
            # version (the state as of then).
            models.Index(fields=["kind", "record_id", "key", "position"], name="version_record"),
            # The first row after a time (the version as of then), and pruning by age.
            models.Index(fields=["at_ns", "position"], name="version_at"),
            # A Work's records' rows in order: its changes between two moments, and
            # what it was as of one. Scopes and KV have none ("").
            models.Index(
                fields=["work_id", "position"], name="version_work", condition=~Q(work_id="")
            ),
        ]


class RunRecordRow(_Row):
    """A durable run record (``storage.run_records``): the JSON exactly as stored, beside the
    columns the CAS and the console's list read without decoding it."""

    run_id = BinaryCharField(primary_key=True, max_length=255)
    format = models.IntegerField()
    # A uint64 (up to 2^64-1, past bigint's 2^63-1): its decimal text, without leading
    # zeros, compared for equality only (the CAS); nothing orders by it.
    revision = models.CharField(max_length=20)
    created_ns = models.BigIntegerField()
    updated_ns = models.BigIntegerField()
    # Bytes, not text: a record written elsewhere may hold invalid UTF-8, which must
    # reach the decoder (Corrupt) rather than fail in the driver.
    data = models.BinaryField()

    class Meta:
        db_table = "conduit_run_record"
        # The list order (updated_ns desc, run_id desc), unfiltered and by format.
        indexes = [
            models.Index(fields=["updated_ns", "run_id"], name="run_updated"),
            models.Index(fields=["format", "updated_ns", "run_id"], name="run_format_updated"),
        ]


# The routed-run tables (conduit_routed_*) are declared beside their rules; importing
# them here registers them in this app, so they share its migrations.
from .routed import models as _routed_models  # noqa: E402, F401
