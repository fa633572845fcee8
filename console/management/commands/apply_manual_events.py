"""Apply operator actions (core.manual cancel/retry Events) left unrouted by a crash
between recording the Event and applying it. Safe to run at any time: each Event is
applied exactly once, however often this runs."""

from typing import Any

from django.core.management.base import BaseCommand

from console.actions.work import message
from storage.default import default_store
from storage.ops.manual import apply_manual_events


class Command(BaseCommand):
    help = "Apply unrouted console cancel/retry Events exactly once."

    def handle(self, *args: Any, **options: Any) -> None:
        results = apply_manual_events(default_store())
        for result in results:
            self.stdout.write(f"{result.event_id}: {message(result)}")
        applied = sum(1 for r in results if r.applied_now)
        self.stdout.write(self.style.SUCCESS(f"{applied} manual Event(s) applied."))
