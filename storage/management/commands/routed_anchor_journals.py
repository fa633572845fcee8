"""``manage.py routed_anchor_journals [--state-dir DIR]``: anchor, once, the routed
control journals written before the tail anchor (record format 9), so they stay
readable after the upgrade (``storage.routed.anchoring``).

Run it in the upgrade procedure after the old runtime has stopped and before the new
one starts (docs/deploy.md). It records in the routed store that it ran; run again it
does nothing and says when it ran. A journal it cannot verify is left as it is and
named; that fails the command (exit 1), as ``routed_verify`` would.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from storage import StorageError
from storage.default import default_routed_store
from storage.routed.anchoring import anchor_old_journals


class Command(BaseCommand):
    help = "Anchor, once, the routed control journals written before the tail anchor."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--state-dir",
            type=Path,
            default=None,
            help="the routed-run state directory (default: the ROUTED_STATE_DIR setting)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        root = options["state_dir"] or Path(settings.ROUTED_STATE_DIR)
        try:
            report = anchor_old_journals(default_routed_store(), root)
        except StorageError as exc:
            raise CommandError(str(exc)) from exc
        if report.earlier is not None:
            when = datetime.fromtimestamp(report.earlier.anchored_at / 1e9, UTC)
            self.stdout.write(
                f"the journals were anchored at {when:%Y-%m-%d %H:%M:%S} UTC "
                f"({report.earlier.journals_anchored} anchored, "
                f"{report.earlier.journals_refused} refused); nothing to do: a journal "
                "without its tail now is invalid"
            )
            return
        for where, last in report.anchored:
            self.stdout.write(f"{where}: anchored at event {last}")
        for where, why in report.refused:
            self.stdout.write(f"{where}: REFUSED: {why}")
        summary = (
            f"under {root}: {len(report.anchored)} journals anchored, "
            f"{report.already_anchored} already anchored, {len(report.refused)} refused"
        )
        if report.refused:
            raise CommandError(summary)
        self.stdout.write(summary)
