"""The "operators" group: members may cancel and retry Work (see console/access.py)."""

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

GROUP = "operators"


def create_group(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    group_model = apps.get_model("auth", "Group")
    group_model.objects.using(schema_editor.connection.alias).get_or_create(name=GROUP)


def delete_group(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    group_model = apps.get_model("auth", "Group")
    group_model.objects.using(schema_editor.connection.alias).filter(name=GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [("auth", "0012_alter_user_first_name_max_length")]

    operations = [migrations.RunPython(create_group, delete_group)]
