"""Routed-run authority: the two permissions (on the console's own note model) and the
groups that grant them. "operators" (migration 0001) gets runs:control; the new
"limit-amenders" group gets runs:amend_limits, which raises a workflow's ceilings and
so is granted apart (see console/routed/authority.py)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

GRANTS = {"operators": "routed_control", "limit-amenders": "routed_amend_limits"}


def grant(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    db = schema_editor.connection.alias
    # Permissions are created after the last migration (post_migrate); this one needs
    # them now, so it creates this app's own the same way.
    config = apps.get_app_config("console")
    # create_permissions skips an app config without a models module; a state app has none.
    config.models_module = True  # type: ignore[assignment]
    create_permissions(config, apps=apps, verbosity=0, using=db)
    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    for name, codename in GRANTS.items():
        group, _ = group_model.objects.using(db).get_or_create(name=name)
        perm = permission_model.objects.using(db).get(
            content_type__app_label="console", codename=codename
        )
        group.permissions.add(perm)


def revoke(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    db = schema_editor.connection.alias
    apps.get_model("auth", "Group").objects.using(db).filter(name="limit-amenders").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0001_operators_group"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.CreateModel(
            name="RoutedActionNote",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("token", models.CharField(max_length=200, unique=True)),
                ("action", models.CharField(max_length=32)),
                ("target", models.CharField(db_index=True, max_length=200)),
                ("actor", models.CharField(max_length=200)),
                ("reason", models.TextField()),
                ("detail", models.TextField()),
                ("done", models.BooleanField()),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "ordering": ["created_at", "id"],
                "permissions": [
                    ("routed_control", "runs:control (pause, resume, cancel, restart, continue)"),
                    ("routed_amend_limits", "runs:amend_limits (raise a workflow's ceilings)"),
                ],
                "default_permissions": (),
            },
        ),
        migrations.RunPython(grant, revoke),
    ]
