"""A bulk action whose console host dies mid-run is resumed, never redone (issue 30).

The host's death is a ``BaseException`` raised after the first batch was applied: the
request ends there, as a SIGKILL would end it, leaving the run's stored plan, its
progress record and 25 of 60 Work cancelled. The deploy suite does the same with a
real SIGKILL behind nginx (tests/deploy/test_host_kill.py).
"""

from __future__ import annotations

import json
import re
from html import unescape
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

import storage
from console.actions import work as actions
from storage import Guard
from storage.default import default_store
from storage.ops.manual import MANUAL_SOURCE
from tests.console import factories as f
from tests.console.conftest import DB
from tests.console.support.bulk import confirmed

pytestmark = DB
KIND = "bulk.kill"


class HostDied(BaseException):
    """What a SIGKILL does to a request: nothing after it runs."""


def read(fn):
    return storage.view(default_store(), None, fn)


def states() -> dict[str, int]:
    works = read(lambda tx: tx.works_of([f"k{n:02d}" for n in range(60)]))
    counts: dict[str, int] = {}
    for work in works:
        counts[work.state.value] = counts.get(work.state.value, 0) + 1
    return counts


def manual_events_by_work() -> dict[str, int]:
    per_work: dict[str, int] = {}
    for e in read(lambda tx: tx.events()):
        if e.event.source == MANUAL_SOURCE:
            per_work[e.event.work_id] = per_work.get(e.event.work_id, 0) + 1
    return per_work


@pytest.fixture
def interrupted(as_alice, monkeypatch):
    """Cancel-all over 60 Work, its host killed after the first batch was applied;
    returns the confirmation's form as the browser would send it again."""
    f.works_at_once(*(f"k{n:02d}" for n in range(60)), kind=KIND)
    html = as_alice.get("/actions/bulk", {"do": "cancel-all", "kind": KIND}).content.decode()
    form = confirmed(html) | {"reason": "clearing the backlog"}
    for name in ("promised", "seen"):  # what the confirmation promised, and when
        form[name] = unescape(re.search(rf'name="{name}" value="([^"]*)"', html).group(1))
    assert len(json.loads(form["promised"])) == 60
    real = actions._apply_batch
    calls = []

    def dies_after_one(*args, **kwargs):
        if calls:
            raise HostDied
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(actions, "_apply_batch", dies_after_one)
    with pytest.raises(HostDied):
        as_alice.post("/actions/bulk", form)
    monkeypatch.setattr(actions, "_apply_batch", real)
    assert states() == {"cancelled": 25, "ready": 35}
    return form


def test_the_same_form_sent_again_resumes_the_run_and_acts_once(as_alice, interrupted):
    # What nginx does with the POST when its host dies (deploy/nginx/conduit.conf).
    html = as_alice.post("/actions/bulk", interrupted).content.decode()

    assert "Cancel: 60 done, 0 skipped" in html
    assert "no longer matching" not in html  # what the dead run did is done, not gone
    # 25 applied by the dead run; 25 it recorded but did not apply, which the request's
    # recovery pass applied before the run resumed.
    assert html.count("already done by this form") == 50
    assert states() == {"cancelled": 60}
    assert manual_events_by_work() == {f"k{n:02d}": 1 for n in range(60)}
    token = interrupted["token"]
    assert read(lambda tx: actions.read_job(tx, token)) is None
    assert read(lambda tx: actions.read_progress(tx, token)) is None


def test_a_stalled_run_offers_resume_in_its_progress_and_resume_finishes_it(as_alice, interrupted):
    token = interrupted["token"]
    progress = read(lambda tx: actions.read_progress(tx, token))
    assert (progress.total, progress.processed, progress.done) == (60, 25, 25)
    region = as_alice.get("/actions/bulk/progress", {"token": token}).content.decode()
    assert "data-bulk-stalled" not in region  # its host wrote it a moment ago

    # Ten seconds and more without a word from the host that runs it.
    late = json.dumps([60, 25, 25, 0, progress.owner, progress.beat - 11 * 10**9]).encode()
    default_store().transact(Guard(), lambda tx: tx.kv_put(actions.PROGRESS_NAMESPACE, token, late))
    region = as_alice.get("/actions/bulk/progress", {"token": token}).content.decode()
    assert "data-bulk-stalled" in region
    assert 'action="/actions/bulk/resume"' in region

    html = as_alice.post("/actions/bulk/resume", {"token": token}).content.decode()
    assert "Cancel: 60 done, 0 skipped" in html
    assert states() == {"cancelled": 60}
    assert manual_events_by_work() == {f"k{n:02d}": 1 for n in range(60)}
    assert as_alice.post("/actions/bulk/resume", {"token": token}).status_code == 404


def test_resume_is_for_operators(bob, interrupted):
    viewer = Client()
    viewer.force_login(bob)
    response = viewer.post("/actions/bulk/resume", {"token": interrupted["token"]})
    assert response.status_code == 403
    assert states() == {"cancelled": 25, "ready": 35}


def test_a_plan_larger_than_one_kv_value_is_stored_in_chunks(alice):
    ids = tuple(f"{'w' * 200}-{n:05d}" for n in range(1000))  # about 210 KB of IDs
    job = actions.BulkJob(actions.Action.CANCEL, "alice", "why", ids)
    default_store().transact(Guard(), lambda tx: actions._claim_job("t" * 20, job, tx))
    assert read(lambda tx: actions.read_job(tx, "t" * 20)) == job
    default_store().transact(Guard(), lambda tx: actions._end_job("t" * 20, tx))
    assert read(lambda tx: tx.kv_list(actions.JOB_NAMESPACE)) == []


def test_resume_bulk_actions_carries_on_a_stalled_run_no_one_sent_again(interrupted):
    token = interrupted["token"]
    out = StringIO()
    call_command("resume_bulk_actions", stdout=out)
    assert "0 bulk action(s) resumed" in out.getvalue()  # its host wrote a moment ago
    assert states() == {"cancelled": 25, "ready": 35}

    progress = read(lambda tx: actions.read_progress(tx, token))
    late = json.dumps([60, 25, 25, 0, progress.owner, progress.beat - 11 * 10**9]).encode()
    default_store().transact(Guard(), lambda tx: tx.kv_put(actions.PROGRESS_NAMESPACE, token, late))
    out = StringIO()
    call_command("resume_bulk_actions", stdout=out)
    assert "cancel by alice: 60 done, 0 skipped of 60" in out.getvalue()
    assert states() == {"cancelled": 60}
    assert manual_events_by_work() == {f"k{n:02d}": 1 for n in range(60)}
    assert read(lambda tx: actions.read_job(tx, token)) is None
    out = StringIO()
    call_command("resume_bulk_actions", stdout=out)
    assert "0 bulk action(s) resumed" in out.getvalue()
