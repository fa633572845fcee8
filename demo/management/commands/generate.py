"""``manage.py generate --works N``: write a realistic history in large transactions.

Progress goes to stderr as one carriage-return line; the final line (stdout) gives the
Work written, the Events and the throughput in Work per second.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from demo.generator import Generator
from storage import StorageError
from storage.default import default_artifacts, default_store


class Command(BaseCommand):
    help = "Write N Work of realistic history (all states) through the storage API."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--works", type=int, required=True, help="how many Work to write")
        parser.add_argument("--seed", type=int, default=1, help="deterministic seed (1)")
        parser.add_argument("--batch", type=int, default=2000, help="Work per transaction (2000)")
        parser.add_argument(
            "--days", type=float, default=21.0, help="history spans the past DAYS (21)"
        )
        parser.add_argument(
            "--realistic",
            action="store_true",
            help="about 1%% live, 3 attempts and 6 Events per Work (the benchmarks' seed)",
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress line")

    def handle(self, *args: Any, **options: Any) -> None:
        works: int = options["works"]
        if works <= 0 or options["batch"] <= 0 or options["days"] <= 0:
            raise CommandError("--works, --batch and --days must be positive")
        show = not options["no_progress"]
        # DEBUG keeps and formats every SQL statement (connection.queries): about a
        # fifth of the cost of each storage operation, and nothing here reads them.
        settings.DEBUG = False
        generator = Generator(
            default_store(),
            works,
            seed=options["seed"],
            batch=options["batch"],
            days=options["days"],
            realistic=options["realistic"],
            artifacts=default_artifacts(),
            progress=_progress if show else None,
        )
        try:
            with _rare_collections():
                result = generator.run()
        except StorageError as exc:
            raise CommandError(f"generate: {type(exc).__name__}: {exc}") from exc
        finally:
            if show:
                sys.stderr.write("\n")
        states = " ".join(f"{k}={v}" for k, v in sorted(result.states.items()))
        self.stdout.write(
            f"generate: {result.works} Work, {result.events} Events in {result.seconds:.1f}s "
            f"({result.rate:.0f} Work/s); states: {states}"
        )


@contextmanager
def _rare_collections() -> Iterator[None]:
    """Each transaction holds tens of thousands of records until it commits, and the
    collector's full passes over every live object then cost about a twentieth of
    the run, though records form no reference cycles: leave what startup built out
    of those passes and collect rarely, until the run ends."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def _progress(done: int, total: int, elapsed: float) -> None:
    rate = done / elapsed if elapsed else 0.0
    eta = (total - done) / rate if rate else 0.0
    width = 30
    filled = width * done // total if total else width
    bar = "#" * filled + "-" * (width - filled)
    sys.stderr.write(
        f"\rgenerate [{bar}] {done}/{total} Work {rate:,.0f} Work/s ETA {eta:,.0f}s   "
    )
    sys.stderr.flush()
