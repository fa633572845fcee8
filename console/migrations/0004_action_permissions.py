"""Every operator action on Django permissions (issue 33): Work actions get their own
permission, ``console.work_control``, which the "operators" group is given (it was the
group's name that let its members act on Work; ``console/access.py`` now asks the
permission alone). The routed ones stay as migration 0002 granted them; this grants
them again, so a group whose grants an administrator removed before the upgrade is
brought back to what the console documents ("operators": Work and runs:control;
"limit-amenders": runs:amend_limits). Members keep every action they had.

Frozen: a migration never imports live code, so the group table is copied here."""

from django.contrib.auth.management import create_permissions
from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

GROUP_PERMISSIONS = {
    "operators": ("work_control", "routed_control"),
    "limit-amenders": ("routed_amend_limits",),
}


def grant(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    db = schema_editor.connection.alias
    # Permissions are created after the last migration (post_migrate); this one needs
    # work_control now, so it creates this app's the same way (as 0002 does).
    config = apps.get_app_config("console")
    config.models_module = True  # type: ignore[assignment]
    create_permissions(config, apps=apps, verbosity=0, using=db)
    group_model = apps.get_model("auth", "Group")
    permission_model = apps.get_model("auth", "Permission")
    for name, codenames in GROUP_PERMISSIONS.items():
        group, _ = group_model.objects.using(db).get_or_create(name=name)
        perms = permission_model.objects.using(db).filter(
            content_type__app_label="console", codename__in=codenames
        )
        group.permissions.add(*perms)


def revoke(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Back to 0003: only work_control goes (0002's grants are 0002's to undo)."""
    db = schema_editor.connection.alias
    apps.get_model("auth", "Permission").objects.using(db).filter(
        content_type__app_label="console", codename="work_control"
    ).delete()


class Migration(migrations.Migration):
    dependencies = [("console", "0003_saved_views_preferences")]

    operations = [
        migrations.AlterModelOptions(
            name="routedactionnote",
            options={
                "default_permissions": (),
                "ordering": ["created_at", "id"],
                "permissions": [
                    ("work_control", "Work actions: cancel and retry (one Work or in bulk)"),
                    ("routed_control", "runs:control (pause, resume, cancel, restart, continue)"),
                    ("routed_amend_limits", "runs:amend_limits (raise a workflow's ceilings)"),
                ],
            },
        ),
        migrations.RunPython(grant, revoke),
    ]
