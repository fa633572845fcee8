"""``manage.py prune_versions``: cut the record-version log (``storage.versions``) to
its retention.

Deletes the log's rows committed before now minus ``--older-than`` (default: the
``STORAGE_VERSION_RETENTION_DAYS`` setting), ``PRUNE_BATCH`` rows per transaction,
oldest first, so writers wait for one short transaction at a time; each raises the
log's horizon, before which the console can no longer show a past state. Safe to run
on a timer while the runtime writes (``deploy/systemd/conduit-prune-versions.timer``),
and to interrupt: what it deleted is committed, the rest waits for the next run.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from storage import Guard, Tx, seconds, view, wall_clock
from storage.orm import OrmStore

from .artifacts_gc import parse_age


class Command(BaseCommand):
    help = "Delete record-version log rows older than the retention (default: the setting)."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--older-than",
            type=parse_age,
            default=None,
            help="keep this much history (e.g. 30d, 12h); default the "
            "STORAGE_VERSION_RETENTION_DAYS setting",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        keep = options["older_than"]
        if keep is None:
            keep = seconds(settings.STORAGE_VERSION_RETENTION_DAYS * 86_400)
        before = wall_clock() - keep
        store = OrmStore()
        total = 0
        while deleted := store.transact(Guard(), lambda t: t.prune_versions(before)):
            total += deleted

        def horizon(t: Tx) -> int:
            return t.version_horizon()

        self.stdout.write(
            f"{total} version log rows deleted; states are known from store version "
            f"{view(store, None, horizon)} on"
        )
