"""``manage.py backfill``: the startup backfills (event scopes, attempt executors).

Run it when the console or a runtime starts, before serving: it is idempotent, so
running it on every start costs one scan and changes nothing the second time.
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from storage import StorageError
from storage.ops.backfill import DEFAULT_BATCH, run_backfills
from storage.orm import OrmStore


class Command(BaseCommand):
    help = "Fill empty Event scopes and attempt executors from recorded state (idempotent)."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--batch",
            type=int,
            default=DEFAULT_BATCH,
            help=f"records per transaction (default {DEFAULT_BATCH})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch"] <= 0:
            raise CommandError("--batch must be a positive number of records")
        store = OrmStore()
        try:
            report = run_backfills(
                store,
                batch=options["batch"],
                progress=lambda line: self.stderr.write(line) if options["verbosity"] > 1 else None,
            )
        except StorageError as exc:
            raise CommandError(f"backfill failed: {exc}") from exc
        finally:
            store.close()
        self.stdout.write(
            f"event scopes filled: {report.event_scopes}; "
            f"attempt executors filled: {report.executors} "
            f"({report.transactions} transactions)"
        )
