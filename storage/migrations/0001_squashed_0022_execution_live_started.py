"""The storage schema as of 0022, in one step, for new databases (issue 30).

What 0001_initial to 0022_execution_live_started leave behind, without their history:
every table and index as the last of them has it (Django's optimiser folded each
AddField, AddIndex and RemoveIndex into the table's CreateModel), then the two steps
that write something on an empty database: the schema version row (0001) and the
Events-by-actor index, whose SQL is spelled per engine (0019, copied here, as frozen
as it is there). The ten backfills are left out: on a new database they have nothing
to fill.

A new database runs this and Django records it and the 22 it replaces as applied. A
database that has applied some of them runs the rest of them, one by one, and this
step is never run on it; one that has applied all of them is up to date. The 22 stay
in this folder for as long as a database in use may be behind them. A later
migration depends on this one's last replaced name (``0022_execution_live_started``),
which Django maps to this step or to that migration as the database needs.

``tests/storage/orm/test_squash.py`` checks, on SQLite and PostgreSQL, that a database
made by this step and one made by the 22 have the same tables, columns, indexes
(partial and expression ones included) and rows. Made by ``/tmp``'s one-off script,
not kept: Django's ``MigrationOptimizer`` over the 22 migrations' operations with
their ``RunPython`` steps taken out, written by ``MigrationWriter``, then these two
steps added by hand. Mixed by nature (schema and Python in one migration):
tests/test_migration_shape.py names it.
"""

from typing import Any

from django.db import migrations, models

import storage.migrations._frozen_v1

# From 0019_event_actor, as written there.
EVENT_ACTOR = {
    "sqlite": (
        """CREATE INDEX event_actor ON "conduit_event" (json_extract(data, '$.actor'), seq)"""
    ),
    "postgresql": ("CREATE INDEX event_actor ON conduit_event (((data)::jsonb ->> 'actor'), seq)"),
}


def record_schema(apps: Any, schema_editor: Any) -> None:
    # From 0001_initial: the coordination schema version, recorded on creation (spec:
    # "recorded durably in backend metadata on creation").
    meta = apps.get_model("storage", "MetaRow")
    meta.objects.using(schema_editor.connection.alias).get_or_create(
        key="schema_version", defaults={"value": "1"}
    )


def create_event_actor(apps: Any, schema_editor: Any) -> None:
    schema_editor.execute(EVENT_ACTOR[schema_editor.connection.vendor])


def drop_event_actor(apps: Any, schema_editor: Any) -> None:
    schema_editor.execute("DROP INDEX event_actor")


class Migration(migrations.Migration):
    replaces = [
        ("storage", "0001_initial"),
        ("storage", "0002_event_source_index"),
        ("storage", "0003_work_facets_index"),
        ("storage", "0004_run_records"),
        ("storage", "0005_dashboard_indexes"),
        ("storage", "0006_routed_runs"),
        ("storage", "0007_routed_artifacts_progress"),
        ("storage", "0008_triage_marks"),
        ("storage", "0009_work_tally"),
        ("storage", "0010_routed_workflow_facets"),
        ("storage", "0011_execution_scope"),
        ("storage", "0012_routed_facet_covering"),
        ("storage", "0013_execution_running"),
        ("storage", "0014_series_tally"),
        ("storage", "0015_work_tally_margins"),
        ("storage", "0016_routed_workflow_tally"),
        ("storage", "0017_wait_active_created"),
        ("storage", "0018_execution_no_executor"),
        ("storage", "0019_event_actor"),
        ("storage", "0020_timed_out_groups"),
        ("storage", "0021_event_keys"),
        ("storage", "0022_execution_live_started"),
    ]

    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="MetaRow",
            fields=[
                ("key", models.CharField(max_length=64, primary_key=True, serialize=False)),
                ("value", models.TextField()),
            ],
            options={
                "db_table": "conduit_meta",
            },
        ),
        migrations.CreateModel(
            name="ScopeRow",
            fields=[
                (
                    "id",
                    storage.migrations._frozen_v1.BinaryCharField(
                        max_length=255, primary_key=True, serialize=False
                    ),
                ),
                ("parent_id", models.CharField(db_index=True, max_length=255)),
                ("data", models.TextField()),
            ],
            options={
                "db_table": "conduit_scope",
            },
        ),
        migrations.CreateModel(
            name="KeyRow",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("source", models.CharField(max_length=255)),
                ("external_id", models.CharField(max_length=255)),
                ("work_id", models.CharField(db_index=True, max_length=255)),
                ("ordinal", models.IntegerField()),
            ],
            options={
                "db_table": "conduit_key",
                "constraints": [
                    models.UniqueConstraint(fields=("source", "external_id"), name="key_one_owner")
                ],
            },
        ),
        migrations.CreateModel(
            name="KVRow",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("namespace", models.CharField(max_length=255)),
                ("key", storage.migrations._frozen_v1.BinaryCharField(max_length=1024)),
                ("value", models.BinaryField()),
            ],
            options={
                "db_table": "conduit_kv",
                "constraints": [
                    models.UniqueConstraint(fields=("namespace", "key"), name="kv_key")
                ],
            },
        ),
        migrations.CreateModel(
            name="TimerRow",
            fields=[
                (
                    "id",
                    storage.migrations._frozen_v1.BinaryCharField(
                        max_length=255, primary_key=True, serialize=False
                    ),
                ),
                ("live", models.BooleanField()),
                ("revision", models.BigIntegerField()),
                ("fire_ns", models.BigIntegerField()),
                ("work_id", models.CharField(max_length=255)),
                ("data", models.TextField()),
            ],
            options={
                "db_table": "conduit_timer",
                "indexes": [
                    models.Index(
                        condition=models.Q(("live", True)),
                        fields=["fire_ns", "id"],
                        name="timer_due",
                    ),
                    models.Index(
                        condition=models.Q(("live", True)),
                        fields=["work_id", "id"],
                        name="timer_work",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="RunRecordRow",
            fields=[
                (
                    "run_id",
                    storage.migrations._frozen_v1.BinaryCharField(
                        max_length=255, primary_key=True, serialize=False
                    ),
                ),
                ("format", models.IntegerField()),
                ("revision", models.CharField(max_length=20)),
                ("created_ns", models.BigIntegerField()),
                ("updated_ns", models.BigIntegerField()),
                ("data", models.BinaryField()),
            ],
            options={
                "db_table": "conduit_run_record",
                "indexes": [
                    models.Index(fields=["updated_ns", "run_id"], name="run_updated"),
                    models.Index(
                        fields=["format", "updated_ns", "run_id"], name="run_format_updated"
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="EventRow",
            fields=[
                ("seq", models.BigAutoField(primary_key=True, serialize=False)),
                ("id", models.CharField(max_length=255, unique=True)),
                ("source", models.CharField(max_length=255)),
                ("delivery_id", models.CharField(max_length=255)),
                ("type", models.CharField(max_length=200)),
                ("work_id", models.CharField(max_length=255)),
                ("causation_id", models.CharField(max_length=255)),
                ("scope_id", models.CharField(max_length=255)),
                ("route_work_id", models.CharField(max_length=255)),
                ("disposition", models.CharField(max_length=64)),
                ("routed_ns", models.BigIntegerField()),
                ("data", models.TextField()),
            ],
            options={
                "db_table": "conduit_event",
                "indexes": [
                    models.Index(fields=["work_id", "seq"], name="event_work"),
                    models.Index(fields=["route_work_id", "seq"], name="event_routed_work"),
                    models.Index(fields=["scope_id", "seq"], name="event_scope"),
                    models.Index(fields=["causation_id", "seq"], name="event_causation"),
                    models.Index(fields=["type", "seq"], name="event_type"),
                    models.Index(
                        condition=models.Q(("disposition", "")),
                        fields=["seq"],
                        name="event_unrouted",
                    ),
                    models.Index(fields=["source", "seq"], name="event_source"),
                    models.Index(
                        storage.migrations._frozen_v1.JsonNanos("received_at"),
                        name="event_received",
                    ),
                    models.Index(
                        models.F("scope_id"),
                        storage.migrations._frozen_v1.JsonNanos("received_at"),
                        name="event_scope_received",
                    ),
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("source", "delivery_id"), name="event_delivery")
                ],
            },
        ),
        migrations.CreateModel(
            name="RoutedAliasRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_alias",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_alias_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedAmendmentRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_amendment",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_amendment_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedCheckpointRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_checkpoint",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_checkpoint_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedChildBatchRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_child_batch",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_child_batch_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedChildResultRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_child_result",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_child_result_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedControlResultRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_control_result",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_control_result_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedControlRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_control",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_control_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedDeploymentRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_deployment",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_deployment_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedDesiredStateRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_desired_state",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_desired_state_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedEnvelopeRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_envelope",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_envelope_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedHandoffRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_handoff",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_handoff_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedIdempotencyRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_idempotency",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_idempotency_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedInvocationRequestRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_invocation_request",
                "abstract": False,
                "indexes": [
                    models.Index(fields=["parent", "status"], name="rt_invocation_request_p")
                ],
            },
        ),
        migrations.CreateModel(
            name="RoutedInvocationRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_invocation",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_invocation_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedMetaRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_meta",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_meta_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedNodeRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_node",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_node_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedNodeTransitionRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_node_transition",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_node_transition_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedRestartRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_restart",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_restart_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedRunLedgerRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_run_ledger",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_run_ledger_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedRunRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_run",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_run_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedServiceRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_service",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_service_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedTimeLedgerRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_time_ledger",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_time_ledger_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedTransitionRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_transition",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_transition_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedArtifactRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_artifact",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_artifact_p")],
            },
        ),
        migrations.CreateModel(
            name="RoutedProgressRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_progress",
                "abstract": False,
                "indexes": [models.Index(fields=["parent", "status"], name="rt_progress_p")],
            },
        ),
        migrations.CreateModel(
            name="WorkRow",
            fields=[
                (
                    "id",
                    storage.migrations._frozen_v1.BinaryCharField(
                        max_length=255, primary_key=True, serialize=False
                    ),
                ),
                ("kind", models.CharField(max_length=200)),
                ("scope_id", models.CharField(max_length=255)),
                ("parent_id", models.CharField(max_length=255)),
                ("state", models.CharField(max_length=16)),
                ("source", models.CharField(max_length=255)),
                ("latest_executor", models.CharField(max_length=255)),
                ("created_ns", models.BigIntegerField()),
                ("updated_ns", models.BigIntegerField()),
                ("revision", models.BigIntegerField()),
                ("data", models.TextField()),
                ("error_group", models.CharField(default="", max_length=255)),
                ("exhausted", models.BooleanField(default=False)),
            ],
            options={
                "db_table": "conduit_work",
                "indexes": [
                    models.Index(fields=["created_ns", "id"], name="work_created"),
                    models.Index(fields=["updated_ns", "id"], name="work_updated"),
                    models.Index(fields=["state", "created_ns", "id"], name="work_state_created"),
                    models.Index(fields=["state", "updated_ns", "id"], name="work_state_updated"),
                    models.Index(
                        fields=["scope_id", "created_ns", "id"], name="work_scope_created"
                    ),
                    models.Index(
                        fields=["scope_id", "updated_ns", "id"], name="work_scope_updated"
                    ),
                    models.Index(fields=["kind", "created_ns", "id"], name="work_kind_created"),
                    models.Index(fields=["source", "created_ns", "id"], name="work_source_created"),
                    models.Index(
                        fields=["parent_id", "created_ns", "id"], name="work_parent_created"
                    ),
                    models.Index(
                        fields=["latest_executor", "created_ns", "id"], name="work_executor_created"
                    ),
                    models.Index(
                        condition=models.Q(("state__in", ("ready", "running", "waiting"))),
                        fields=["id"],
                        name="work_live",
                    ),
                    models.Index(
                        fields=["state", "scope_id", "updated_ns"], name="work_state_scope_updated"
                    ),
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
                    models.Index(
                        condition=models.Q(("exhausted", True)),
                        fields=["created_ns", "id"],
                        name="work_exhausted_created",
                    ),
                    models.Index(
                        condition=models.Q(("exhausted", True)),
                        fields=["updated_ns", "id"],
                        name="work_exhausted_updated",
                    ),
                    models.Index(
                        condition=models.Q(("error_group", ""), _negated=True),
                        fields=["error_group", "created_ns", "id"],
                        name="work_group_created",
                    ),
                    models.Index(
                        condition=models.Q(("error_group", ""), _negated=True),
                        fields=["error_group", "kind", "state", "exhausted", "updated_ns"],
                        name="work_error_groups",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="WorkTallyRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("dimension", models.CharField(max_length=16)),
                ("state", models.CharField(max_length=16)),
                ("scope_id", models.CharField(max_length=255)),
                ("kind", models.CharField(max_length=200)),
                ("value", models.CharField(max_length=255)),
                ("n", models.BigIntegerField()),
            ],
            options={
                "db_table": "conduit_work_tally",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("dimension", "state", "scope_id", "kind", "value"),
                        name="work_tally_key",
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="RoutedAttemptRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
            ],
            options={
                "db_table": "conduit_routed_attempt",
                "abstract": False,
                "indexes": [
                    models.Index(fields=["parent", "status"], name="rt_attempt_p"),
                    models.Index(fields=["status"], name="rt_attempt_status"),
                ],
            },
        ),
        migrations.CreateModel(
            name="RoutedWorkflowRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("key", models.CharField(max_length=255, unique=True)),
                ("body", models.TextField()),
                ("generation", models.BigIntegerField()),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
                ("kind", models.CharField(default="", max_length=64)),
                ("reason", models.CharField(default="", max_length=64)),
            ],
            options={
                "db_table": "conduit_routed_workflow",
                "abstract": False,
                "indexes": [
                    models.Index(fields=["parent", "status"], name="rt_workflow_p"),
                    models.Index(fields=["status", "id"], name="rt_workflow_status"),
                    models.Index(fields=["kind", "id"], name="rt_workflow_kind"),
                    models.Index(fields=["reason", "id"], name="rt_workflow_reason"),
                    models.Index(fields=["parent", "id"], name="rt_workflow_dep"),
                    models.Index(
                        fields=["status", "reason", "kind", "parent"], name="rt_workflow_sfacets"
                    ),
                    models.Index(
                        fields=["reason", "status", "kind", "parent"], name="rt_workflow_rfacets"
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="SeriesTallyRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("series", models.CharField(max_length=16)),
                ("scope_id", models.CharField(max_length=255)),
                ("state", models.CharField(max_length=16)),
                ("day", models.BigIntegerField()),
                ("n", models.BigIntegerField()),
            ],
            options={
                "db_table": "conduit_series_tally",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("series", "scope_id", "state", "day"), name="series_tally_key"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="RoutedWorkflowTallyRow",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("parent", models.CharField(max_length=255)),
                ("status", models.CharField(max_length=32)),
                ("kind", models.CharField(max_length=64)),
                ("reason", models.CharField(max_length=64)),
                ("n", models.BigIntegerField()),
            ],
            options={
                "db_table": "conduit_routed_workflow_tally",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("parent", "status", "kind", "reason"), name="rt_workflow_tally_key"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="WaitRow",
            fields=[
                (
                    "id",
                    storage.migrations._frozen_v1.BinaryCharField(
                        max_length=255, primary_key=True, serialize=False
                    ),
                ),
                ("work_id", models.CharField(max_length=255)),
                ("execution_id", models.CharField(max_length=255)),
                ("state", models.CharField(max_length=16)),
                ("data", models.TextField()),
            ],
            options={
                "db_table": "conduit_wait",
                "indexes": [
                    models.Index(fields=["work_id", "id"], name="wait_work"),
                    models.Index(
                        condition=models.Q(("state", "active")), fields=["id"], name="wait_active"
                    ),
                    models.Index(
                        storage.migrations._frozen_v1.JsonNanos("created_at"),
                        models.F("id"),
                        condition=models.Q(("state", "active")),
                        name="wait_active_created",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="EventKeyRow",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("seq", models.BigIntegerField()),
                ("source", models.CharField(max_length=255)),
                ("external_id", models.CharField(max_length=255)),
            ],
            options={
                "db_table": "conduit_event_key",
                "indexes": [
                    models.Index(fields=["source", "external_id", "seq"], name="event_key")
                ],
            },
        ),
        migrations.CreateModel(
            name="ExecutionRow",
            fields=[
                (
                    "id",
                    storage.migrations._frozen_v1.BinaryCharField(
                        max_length=255, primary_key=True, serialize=False
                    ),
                ),
                ("work_id", models.CharField(max_length=255)),
                ("attempt", models.IntegerField()),
                ("state", models.CharField(max_length=16)),
                ("executor", models.CharField(max_length=255)),
                ("lease_expires_ns", models.BigIntegerField()),
                ("data", models.TextField()),
                ("scope_id", models.CharField(db_default="", max_length=255)),
            ],
            options={
                "db_table": "conduit_execution",
                "indexes": [
                    models.Index(
                        condition=models.Q(("state__in", ("pending", "running", "parked"))),
                        fields=["id"],
                        name="execution_live",
                    ),
                    models.Index(
                        storage.migrations._frozen_v1.JsonNanos("started_at"),
                        name="execution_started",
                    ),
                    models.Index(
                        models.F("scope_id"),
                        storage.migrations._frozen_v1.JsonNanos("started_at"),
                        name="execution_scope_started",
                    ),
                    models.Index(
                        condition=models.Q(("state__in", ("pending", "running", "parked"))),
                        fields=["scope_id", "state"],
                        name="execution_scope_live",
                    ),
                    models.Index(
                        storage.migrations._frozen_v1.JsonNanos("started_at"),
                        models.F("id"),
                        condition=models.Q(("state", "running")),
                        name="execution_running_started",
                    ),
                    models.Index(
                        condition=models.Q(("state", "running")),
                        fields=["lease_expires_ns", "id"],
                        name="execution_running_lease",
                    ),
                    models.Index(
                        models.F("scope_id"),
                        storage.migrations._frozen_v1.JsonNanos("started_at"),
                        models.F("id"),
                        condition=models.Q(("state", "running")),
                        name="execution_scope_run_started",
                    ),
                    models.Index(
                        condition=models.Q(("state", "running")),
                        fields=["scope_id", "lease_expires_ns", "id"],
                        name="execution_scope_run_lease",
                    ),
                    models.Index(
                        condition=models.Q(("executor", "")),
                        fields=["id"],
                        name="execution_no_executor",
                    ),
                    models.Index(
                        storage.migrations._frozen_v1.JsonNanos("started_at"),
                        models.F("id"),
                        condition=models.Q(("state__in", ("pending", "running", "parked"))),
                        name="execution_live_started",
                    ),
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("work_id", "attempt"), name="execution_attempt")
                ],
            },
        ),
        migrations.RunPython(record_schema, migrations.RunPython.noop),
        migrations.RunPython(create_event_actor, drop_event_actor),
    ]
