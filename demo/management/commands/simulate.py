"""``manage.py simulate``: a simulated runtime producing live activity for the console:
Work, Events, attempts, Waits, timers and artifacts, a few durable graph runs saved
through run Sessions (``demo.graphruns``), and routed runs driven by a simulated
supervisor (``demo.routed``; ``--no-routed`` leaves them out).

Runs ticks at ``--rate`` per second until ``--duration`` seconds have passed (0: until
stopped), or ``--once N`` ticks as fast as possible. SIGINT and SIGTERM finish the
current tick and exit 0. One log line per tick says what it did.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from demo.runtime import Simulator
from storage import StorageError
from storage.default import default_artifacts, default_routed_store, default_store
from storage.ops.backfill import run_backfills

log = logging.getLogger("demo.simulate")


class Command(BaseCommand):
    help = (
        "Drive the store as a runtime would: events, attempts, waits, timers, artifacts, "
        "and graph runs through run Sessions."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seed", type=int, default=1, help="deterministic seed (1)")
        parser.add_argument("--rate", type=float, default=2.0, help="ticks per second (2)")
        parser.add_argument(
            "--duration", type=float, default=0.0, help="seconds to run; 0 runs until stopped"
        )
        parser.add_argument(
            "--once", type=int, default=0, metavar="N", help="run N ticks at full speed, exit"
        )
        parser.add_argument(
            "--clock",
            choices=("wall", "fake"),
            default=None,
            help="wall (default) or fake: 1/rate simulated seconds per tick "
            "(the default with --once)",
        )
        parser.add_argument(
            "--burst", type=int, default=40, help="new objectives on the first tick (40)"
        )
        parser.add_argument(
            "--quiet", action="store_true", help="no per-tick line (a summary at the end)"
        )
        parser.add_argument(
            "--no-routed",
            action="store_true",
            help="no routed runs (by default a simulated supervisor drives them)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        rate: float = options["rate"]
        once: int = options["once"]
        if rate <= 0:
            raise CommandError("--rate must be positive")
        clock = options["clock"] or ("fake" if once else "wall")
        # DEBUG keeps and formats every SQL statement (connection.queries): about a
        # fifth of the cost of each storage operation, and nothing here reads them.
        settings.DEBUG = False
        stop = threading.Event()
        previous = _install_stop_handlers(stop)
        sim: Simulator | None = None
        try:
            # A runtime runs the startup backfills before it routes anything.
            run_backfills(default_store())
            sim = Simulator(
                default_store(),
                default_artifacts(),
                seed=options["seed"],
                fake_clock=clock == "fake",
                rate=rate,
                burst=options["burst"],
                routed_dir=None if options["no_routed"] else Path(settings.ROUTED_STATE_DIR),
                # On the host's clock the process's one routed store serves; a fake
                # clock needs its own, which stamps its writes on that clock.
                routed=default_routed_store() if clock == "wall" else None,
            )
            self._loop(sim, stop, once, rate, options["duration"], options["quiet"])
        except StorageError as exc:
            raise CommandError(f"simulate: {type(exc).__name__}: {exc}") from exc
        finally:
            if sim is not None:
                sim.close()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        totals = " ".join(f"{k}={v}" for k, v in sorted(sim.stats.items()))
        self.stdout.write(f"simulate: {sim.ticks} ticks as {sim.owner}: {totals}")

    def _loop(
        self,
        sim: Simulator,
        stop: threading.Event,
        once: int,
        rate: float,
        duration: float,
        quiet: bool,
    ) -> None:
        started = time.monotonic()
        period = 1.0 / rate
        next_tick = started
        while not stop.is_set():
            if once and sim.ticks >= once:
                return
            if duration and time.monotonic() - started >= duration:
                return
            done = sim.tick()
            if not quiet:
                log.info("%s", sim.summary(done))
            if once:
                continue
            next_tick += period
            # Behind schedule (a slow tick): start the next one now, without a burst.
            next_tick = max(next_tick, time.monotonic())
            stop.wait(next_tick - time.monotonic())


def _install_stop_handlers(stop: threading.Event) -> dict[int, Any]:
    """SIGINT/SIGTERM set ``stop``: the current tick finishes, then the loop exits."""

    def handler(signum: int, frame: FrameType | None) -> None:
        log.info("simulate: %s received, stopping after this tick", signal.Signals(signum).name)
        stop.set()

    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, handler)
    return previous
