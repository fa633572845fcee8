"""Partial indexes of the running attempts in the dashboards' orders (longest running,
oldest expired lease), store-wide and per Scope, so the lists of ten and the expired
count cost the rows shown rather than every running attempt. Additive: the schema
version stays 1."""

from django.db import migrations, models

import storage.migrations._frozen_v1


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0012_routed_facet_covering"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="executionrow",
            index=models.Index(
                storage.migrations._frozen_v1.JsonNanos("started_at"),
                models.F("id"),
                condition=models.Q(("state", "running")),
                name="execution_running_started",
            ),
        ),
        migrations.AddIndex(
            model_name="executionrow",
            index=models.Index(
                condition=models.Q(("state", "running")),
                fields=["lease_expires_ns", "id"],
                name="execution_running_lease",
            ),
        ),
        migrations.AddIndex(
            model_name="executionrow",
            index=models.Index(
                models.F("scope_id"),
                storage.migrations._frozen_v1.JsonNanos("started_at"),
                models.F("id"),
                condition=models.Q(("state", "running")),
                name="execution_scope_run_started",
            ),
        ),
        migrations.AddIndex(
            model_name="executionrow",
            index=models.Index(
                condition=models.Q(("state", "running")),
                fields=["scope_id", "lease_expires_ns", "id"],
                name="execution_scope_run_lease",
            ),
        ),
    ]
