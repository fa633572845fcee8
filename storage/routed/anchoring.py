"""Anchoring, once, the control journals written before the tail anchor existed.

A journal's end is anchored by its ``tail`` file (``journal.py``) since record format 9.
A journal an older writer wrote has more than one event and no tail, which the reader
takes for a journal whose tail was removed (``JournalInvalid``): after an upgrade every
such journal would be unreadable. ``anchor_old_journals`` anchors them, once per
deployment, and records that it did in the routed store (the ``meta`` row
``journal_anchoring``). From then on nothing trusts a missing tail again.

When it runs: after the old runtime (the only journal writer) has stopped and before
the new one first writes, so every journal without a tail is an old writer's. The
upgrade procedure runs ``manage.py routed_anchor_journals`` there (docs/deploy.md), and
the demo's runtime runs it itself as it starts (``demo.routed.supervisor``): the first
format-9 writer's opening. Run later, it does nothing (the record is there): a journal
written after whose tail went missing stays invalid.

What it checks before it anchors a journal: its events are exactly 1..N, each verifies
under the run's key (``ControlJournal.anchor_unanchored``), and N is not below what the
store's progress ingested from it (its end was not cut before anchoring). A journal that
fails is left as it is (invalid, as ``routed_verify`` reports it) and counted refused.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import StorageError
from .errors import AlreadyExists
from .journal import journal_attempts, open_control_journal
from .records import JournalAnchoring
from .store import RoutedStore
from .verify import last_ingested, runs_in


@dataclass
class AnchoringReport:
    """What one call did: ``earlier`` is set when anchoring had run before (nothing
    was done); otherwise the journals anchored (path, last sequence), those refused
    (path, why), and how many already had a tail."""

    earlier: JournalAnchoring | None = None
    anchored: list[tuple[str, int]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    already_anchored: int = 0


def anchor_old_journals(store: RoutedStore, state_root: Path) -> AnchoringReport:
    """Anchor every journal under ``state_root`` that has no tail, unless this was done
    before (the module docstring); record that it was done, whatever it found."""
    report = AnchoringReport(earlier=store.view(lambda r: r.journal_anchoring()))
    if report.earlier is not None:
        return report
    root = Path(state_root)
    for run_id in runs_in(root):
        for attempt_id in journal_attempts(root, run_id):
            where = f"runs/{run_id}/control/{attempt_id}"
            try:
                ingested = store.view(functools.partial(last_ingested, attempt_id=attempt_id))
                with open_control_journal(root, run_id, attempt_id, create=False) as journal:
                    last = journal.anchor_unanchored(ingested)
            except StorageError as exc:
                report.refused.append((where, str(exc)))
                continue
            if last is None:
                report.already_anchored += 1
            else:
                report.anchored.append((where, last))
    # Another opener meanwhile (AlreadyExists) anchored the same files the same way.
    with contextlib.suppress(AlreadyExists):
        store.transact(
            lambda r: r.record_journal_anchoring(len(report.anchored), len(report.refused))
        )
    return report
