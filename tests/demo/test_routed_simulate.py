"""``manage.py simulate`` drives routed runs beside the contract's records: through
the process's routed store, its state under ``ROUTED_STATE_DIR``."""

import io
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from demo.routed import catalog
from demo.routed.supervisor import standalone
from storage.default import default_routed_store
from storage.routed.enums import ControlCommand, WorkflowStatus
from storage.routed.verify import verify_run
from tests.demo.routed_support import admit, control, request_for

db = pytest.mark.django_db(transaction=True, databases=["default", "view"])


@db
def test_simulate_runs_routed_workflows_next_to_the_work_it_makes():
    out = io.StringIO()
    call_command("simulate", once=12, seed=5, burst=4, quiet=True, stdout=out)

    line = out.getvalue().strip().splitlines()[-1]
    totals = {k: int(v) for k, v in (kv.split("=") for kv in line.rsplit(": ", 1)[1].split())}
    assert totals["routed_admitted"] >= 3
    routed = default_routed_store()
    workflows = routed.view(lambda r: r.list_workflows())
    # A few within the first seconds, and replayed or conflicting requests made none.
    assert len(workflows) == totals["routed_admitted"]
    assert {d.record.deployment_id for d in routed.view(lambda r: r.list_deployments())} == set(
        catalog.BY_ID
    )
    claimed = [
        a
        for w in workflows
        for r in routed.view(lambda r, w=w: r.list_runs(w.record.workflow_id))
        for a in routed.view(lambda rules, r=r: rules.list_attempts(r.record.run_id))
    ]
    assert claimed, "no attempt was claimed"
    # What the workers left on disk verifies against the store.
    root = Path(settings.ROUTED_STATE_DIR)
    for attempt in claimed:
        findings = verify_run(root, attempt.record.run_id, routed)
        assert [f for f in findings if f.level == "error"] == []


@db
def test_simulate_without_routed_runs_leaves_them_out():
    call_command(
        "simulate", once=2, seed=5, burst=2, quiet=True, no_routed=True, stdout=io.StringIO()
    )
    assert default_routed_store().view(lambda r: r.list_workflows()) == []


@db
def test_a_standalone_supervisor_moves_one_workflow_to_a_pause_on_the_database():
    # What a browser journey does: admit, advance to a step, pause, advance to Paused.
    sup = standalone()
    wf_id = admit(sup, request_for("succeed", ref="ingest"))
    assert sup.advance(wf_id) == "claimed"
    assert sup.advance(wf_id) == "step"
    control(sup.routed, wf_id, ControlCommand.PAUSE)
    assert sup.advance(wf_id) == "paused"
    assert (
        default_routed_store().view(lambda r: r.get_workflow(wf_id)).record.status
        is WorkflowStatus.PAUSED
    )
    control(sup.routed, wf_id, ControlCommand.CANCEL)
    assert sup.advance(wf_id) == "ended"
