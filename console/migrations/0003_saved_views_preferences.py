"""Saved views (personal and team, with console.manage_team_views) and per-user
preferences (the Work list's hidden columns): console/saved/models.py."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0002_routed_authority"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Preference",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("hidden_work_columns", models.JSONField(blank=True, default=list)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="console_preference",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="SavedView",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("team", models.BooleanField(default=False)),
                ("name", models.CharField(max_length=80)),
                ("query", models.CharField(blank=True, max_length=2000)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="saved_views",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ("name", "id"),
                "permissions": [
                    ("manage_team_views", "Can save, rename and delete the team's saved views")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("team", False)),
                        fields=("owner", "name"),
                        name="saved_view_personal_name",
                    ),
                    models.UniqueConstraint(
                        condition=models.Q(("team", True)),
                        fields=("name",),
                        name="saved_view_team_name",
                    ),
                ],
            },
        ),
    ]
