"""``manage.py migrate_unsquashed [app] [migration]``: ``migrate`` through the migrations
a squash replaces (demo/unsquashed.py), so a copy of a database can be taken back to an
older schema, e.g. ``migrate_unsquashed storage 0020_timed_out_groups``, which plain
``migrate`` refuses once the squash is applied. For ``bench.migrate_time`` and the
upgrade tests; a deployment upgrades with ``migrate``."""

from __future__ import annotations

from typing import Any

from django.core.management.commands.migrate import Command as Migrate

from demo.unsquashed import unsquashed


class Command(Migrate):
    help = "migrate, through the migrations squashes replace (for rebuilding old schemas)"

    def handle(self, *args: Any, **options: Any) -> None:
        with unsquashed():
            super().handle(*args, **options)
