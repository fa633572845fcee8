"""``manage.py artifacts_gc``: remove orphaned artifact content by age.

An orphan is content that was published but never attached to an Execution (the
attaching transaction rolled back or its process died). The referenced set is read from
one View of the coordination store; content younger than ``--older-than`` is kept, so a
publish whose attachment is still on its way is never taken (spec: "eligible for
age-based garbage collection"). Open writers are skipped by the store itself.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from storage import Tx, seconds, view, wall_clock
from storage.artifacts import FileArtifactStore
from storage.orm import OrmStore

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_age(text: str) -> int:
    """'90s', '15m', '24h', '7d' -> nanoseconds."""
    match = _DURATION.match(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 90s, 15m, 24h or 7d")
    return seconds(int(match.group(1)) * _UNIT[match.group(2)])


def referenced_artifacts(tx: Tx) -> set[str]:
    return {ref.id for x in tx.executions() for ref in x.artifacts}


class Command(BaseCommand):
    help = "Delete artifact content that no Execution references and that is older than an age."

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--older-than",
            type=parse_age,
            default=parse_age("24h"),
            help="minimum age of content to delete (default 24h; e.g. 90s, 15m, 7d)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        artifacts = FileArtifactStore(settings.ARTIFACT_DIR)
        referenced = view(OrmStore(), None, referenced_artifacts)
        try:
            report = artifacts.collect_garbage(referenced, options["older_than"], wall_clock())
        except Exception as exc:
            raise CommandError(str(exc)) from exc
        for artifact_id in report.deleted:
            self.stdout.write(f"deleted {artifact_id}")
        self.stdout.write(
            f"{len(report.deleted)} orphaned artifacts and {len(report.deleted_temp)} "
            f"abandoned uploads deleted; kept {report.skipped_referenced} referenced, "
            f"{report.skipped_young} young, {report.skipped_writer_open} still being written"
        )
