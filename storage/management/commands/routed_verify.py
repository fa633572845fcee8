"""``manage.py routed_verify [RUN_ID ...] [--state-dir DIR]``: check routed runs' files
offline (``storage.routed.verify``): every accepted artifact's digest, size and caps,
every journal's HMACs and sequence against the stored progress, key and file modes.

Without RUN_IDs every run under the state directory (the setting ``ROUTED_STATE_DIR``)
is checked. Findings go to stdout, one a line; any error fails the command (exit 1).
``backup verify`` runs the journal half of the same check on a bundle's copy.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from storage import StorageError
from storage.default import default_routed_store
from storage.routed.ids import RunID
from storage.routed.verify import ERROR, runs_in, verify_run


class Command(BaseCommand):
    help = "Verify routed runs' artifact workspaces and control journals offline."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("run_ids", nargs="*", metavar="RUN_ID")
        parser.add_argument(
            "--state-dir",
            type=Path,
            default=None,
            help="the routed-run state directory (default: the ROUTED_STATE_DIR setting)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        root = options["state_dir"] or Path(settings.ROUTED_STATE_DIR)
        try:
            run_ids = [RunID.parse(r) for r in options["run_ids"]] or runs_in(root)
            store = default_routed_store()
            findings = [f for run_id in run_ids for f in verify_run(root, run_id, store)]
        except StorageError as exc:
            raise CommandError(str(exc)) from exc
        for finding in findings:
            self.stdout.write(str(finding))
        errors = sum(f.level == ERROR for f in findings)
        summary = f"{len(run_ids)} runs checked under {root}: {errors} errors"
        if errors:
            raise CommandError(summary)
        self.stdout.write(summary)
