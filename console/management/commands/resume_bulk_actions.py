"""Carry on every bulk action whose console host stopped mid-run and that no one has
sent again (console/README.md, "Bulk"): each stored plan whose progress no host has
rewritten for 10 s is run from its start, each Work acted on exactly once. Safe to run
at any time, from a timer on one machine (docs/deploy.md); a run still moving is left
to its host."""

from functools import partial
from typing import Any

from django.core.management.base import BaseCommand

from console.actions.work import BulkJob, do_bulk, read_job, stalled_jobs
from storage import Tx, view
from storage.default import default_store


def _job(token: str, tx: Tx) -> BulkJob | None:
    return read_job(tx, token)


class Command(BaseCommand):
    help = "Resume the bulk actions whose host stopped mid-run."

    def handle(self, *args: Any, **options: Any) -> None:
        store = default_store()
        resumed = 0
        for token in view(store, None, stalled_jobs):
            job = view(store, None, partial(_job, token))
            if job is None:  # finished meanwhile
                continue
            summary = do_bulk(
                store,
                username=job.username,
                action=job.action,
                work_ids=job.work_ids,
                reason=job.reason,
                token=token,
                progress=True,
            )
            resumed += 1
            self.stdout.write(
                f"{job.action.value} by {job.username}: {len(summary.done)} done, "
                f"{len(summary.skipped)} skipped of {len(job.work_ids)}"
            )
        self.stdout.write(self.style.SUCCESS(f"{resumed} bulk action(s) resumed."))
