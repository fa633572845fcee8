"""Operator actions on routed runs: named ``do_*`` functions shared by the console's
confirmation views, ``manage.py routed_action`` and the tests.

Each one checks the request (``console.actions.common``: username, reason, the form's
idempotency token) and then is ONE ``RoutedStore.transact``: it reads what it acts on,
acts through the rules, and writes its audit note (``RoutedActionNote``: the reason,
which the routed-run records have no field for, the actor ``operator:<username>`` and
what happened) inside that transaction, so an action and its note commit or roll back
together. The note is the console's own row on the store's database: the routed store
is an ``OrmStore``'s, and the callback runs inside its ``transaction.atomic`` on that
alias (``note_db``; a store without a database of its own is refused, since its
action could not carry its note). Resubmitting a form does not act twice:

- workflow control (pause, resume, cancel, restart, continue) uses the token as the
  ``ControlRequest``'s idempotency key, which the store replays;
- limit amendments use it as the ``LimitAmendment``'s key, which the store replays;
- deployment status and alias repoints look for the note first (its token is
  unique), in the same transaction: a token already noted returns what it did.

The bulk control of many workflows is ``console.actions.routed_bulk``.

Every form carries the generation it was rendered at; the store's compare-and-set
refuses a stale one and this module says so as ``StaleForm`` ("changed since you
loaded it"), which the views answer with the confirmation re-read (409).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from console.actions.common import check_request, said
from console.actions.observed import observed
from console.models import RoutedActionNote
from storage import Conflict, Invalid
from storage.routed.enums import AuthorityScope, ControlCommand, DeploymentStatus
from storage.routed.errors import CASConflict
from storage.routed.ids import (
    ControlRequestID,
    DeploymentID,
    LimitAmendmentID,
    WorkflowID,
)
from storage.routed.records import AliasRecord, ControlRequest, LimitAmendment
from storage.routed.rules import RoutedRules
from storage.routed.store import RoutedStore

ACTOR_PREFIX = "operator:"

__all__ = [
    "BULK_ACTIONS",
    "RoutedAction",
    "RoutedResult",
    "StaleForm",
    "actor_of",
    "do_activate_deployment",
    "do_amend_limits",
    "do_cancel_workflow",
    "do_continue_workflow",
    "do_deactivate_deployment",
    "do_pause_workflow",
    "do_repoint_alias",
    "do_restart_workflow",
    "do_resume_workflow",
    "notes_for",
]


class RoutedAction(Enum):
    PAUSE = "pause"
    RESUME = "resume"
    CANCEL = "cancel"
    RESTART = "restart"
    CONTINUE = "continue"
    AMEND_LIMITS = "amend-limits"
    REPOINT_ALIAS = "repoint-alias"
    DEACTIVATE = "deactivate"
    ACTIVATE = "activate"

    @property
    def verb(self) -> str:
        return {
            RoutedAction.AMEND_LIMITS: "Amend limits of",
            RoutedAction.REPOINT_ALIAS: "Repoint",
        }.get(self, self.value.capitalize())

    @property
    def authority(self) -> AuthorityScope:
        """The spec's scope for workflow commands (resolution 7); deployment status and
        alias targets change what future runs admit, so they need runs:control too."""
        if self is RoutedAction.AMEND_LIMITS:
            return AuthorityScope.AMEND_LIMITS
        return AuthorityScope.CONTROL

    @property
    def command(self) -> ControlCommand | None:
        return _COMMANDS.get(self)

    @property
    def url_name(self) -> str:
        """The action's one route (``console/routed/urls.py``): ``routed_<action>``."""
        return "routed_" + self.value.replace("-", "_")


_COMMANDS = {
    RoutedAction.PAUSE: ControlCommand.PAUSE,
    RoutedAction.RESUME: ControlCommand.RESUME,
    RoutedAction.CANCEL: ControlCommand.CANCEL,
    RoutedAction.RESTART: ControlCommand.RESTART,
    RoutedAction.CONTINUE: ControlCommand.CONTINUE,
}
WORKFLOW_ACTIONS = (*_COMMANDS, RoutedAction.AMEND_LIMITS)
BULK_ACTIONS = (RoutedAction.PAUSE, RoutedAction.RESUME, RoutedAction.CANCEL)


class StaleForm(Conflict):
    """The record moved on since the form was rendered (its generation differs)."""


@dataclass(frozen=True, slots=True)
class RoutedResult:
    action: RoutedAction
    target: str
    done: bool
    detail: str
    duplicate: bool = False
    new_workflow_id: str | None = None

    @property
    def message(self) -> str:
        """What the result says to the operator (flash message, command output)."""
        return said(f"{self.action.verb} {self.target}: {self.detail}.", duplicate=self.duplicate)


def actor_of(username: str) -> str:
    return f"{ACTOR_PREFIX}{username}"


def notes_for(target: str) -> list[RoutedActionNote]:
    """The notes (reason, actor, what happened) of one workflow, deployment or alias."""
    return list(RoutedActionNote.objects.filter(target=target))


# ---------------------------------------------------------------- workflow control


@observed("pause_workflow")
def do_pause_workflow(
    routed: RoutedStore,
    *,
    username: str,
    workflow_id: str,
    generation: int,
    reason: str,
    token: str,
) -> RoutedResult:
    """RUNNING -> PAUSE_REQUESTED; the store pauses at once when nothing runs."""
    return _control(routed, RoutedAction.PAUSE, username, workflow_id, generation, reason, token)


@observed("resume_workflow")
def do_resume_workflow(
    routed: RoutedStore,
    *,
    username: str,
    workflow_id: str,
    generation: int,
    reason: str,
    token: str,
) -> RoutedResult:
    return _control(routed, RoutedAction.RESUME, username, workflow_id, generation, reason, token)


@observed("cancel_workflow")
def do_cancel_workflow(
    routed: RoutedStore,
    *,
    username: str,
    workflow_id: str,
    generation: int,
    reason: str,
    token: str,
) -> RoutedResult:
    """Cancelled with everything under it; live attempts lose their leases (fenced)."""
    return _control(routed, RoutedAction.CANCEL, username, workflow_id, generation, reason, token)


@observed("restart_workflow")
def do_restart_workflow(
    routed: RoutedStore,
    *,
    username: str,
    workflow_id: str,
    generation: int,
    reason: str,
    token: str,
    target_ref: str = "",
) -> RoutedResult:
    """A new workflow from the source receipt: its exact deployment (``target_ref``
    empty) or the deployment ``target_ref`` (an alias) resolves to now."""
    return _control(
        routed,
        RoutedAction.RESTART,
        username,
        workflow_id,
        generation,
        reason,
        token,
        target_ref=target_ref.strip() or None,
    )


@observed("continue_workflow")
def do_continue_workflow(
    routed: RoutedStore,
    *,
    username: str,
    workflow_id: str,
    generation: int,
    reason: str,
    token: str,
) -> RoutedResult:
    """A new attempt of the top-level run, from its latest valid checkpoint if any."""
    return _control(routed, RoutedAction.CONTINUE, username, workflow_id, generation, reason, token)


def _control(
    routed: RoutedStore,
    action: RoutedAction,
    username: str,
    workflow_id: str,
    generation: int,
    reason: str,
    token: str,
    target_ref: str | None = None,
) -> RoutedResult:
    reason = check_request(username, reason, token)
    wf_id = WorkflowID.parse(workflow_id)
    req = control_request(action, username, wf_id, generation, token, target_ref)

    def act(r: RoutedRules) -> RoutedResult:
        outcome = r.request_control(req)
        res = outcome.result
        result = RoutedResult(
            action,
            wf_id,
            done=res.applied,
            detail=res.detail,
            duplicate=outcome.replay,
            new_workflow_id=res.new_workflow_id,
        )
        write_note(routed, token, wf_id, username, reason, result)
        return result

    return _transact(routed, act, f"workflow {wf_id} changed since you loaded it")


def control_request(
    action: RoutedAction,
    username: str,
    wf_id: WorkflowID,
    generation: int,
    token: str,
    target_ref: str | None = None,
) -> ControlRequest:
    command = action.command
    if command is None:
        raise Invalid(f"{action.value} is not a workflow control command")
    return ControlRequest(
        control_request_id=ControlRequestID.new(),
        workflow_id=wf_id,
        command=command,
        expected_generation=generation,
        actor_identity=actor_of(username),
        authority_scope=action.authority,
        idempotency_key=token,
        target_deployment_ref=target_ref,
    )


# ---------------------------------------------------------------- limits


@observed("amend_limits")
def do_amend_limits(
    routed: RoutedStore,
    *,
    username: str,
    workflow_id: str,
    authority_generation: int,
    reason: str,
    token: str,
    max_active_duration_ms: int = 0,
    attempt_lease_ms: int = 0,
    max_llm_spend: str = "",
) -> RoutedResult:
    """Raise ceilings (absolute values; 0 or "" leaves one as it is), CAS on the
    workflow's authority generation; the store refuses a lower value."""
    reason = check_request(username, reason, token)
    wf_id = WorkflowID.parse(workflow_id)
    amendment = LimitAmendment(
        amendment_id=LimitAmendmentID.new(),
        workflow_id=wf_id,
        expected_authority_generation=authority_generation,
        reason=reason,
        actor_identity=actor_of(username),
        idempotency_key=token,
        new_max_active_duration_ms=max_active_duration_ms,
        new_current_attempt_lease_ms=attempt_lease_ms,
        new_max_llm_spend_decimal=max_llm_spend.strip(),
    )

    def act(r: RoutedRules) -> RoutedResult:
        before = found_note(routed, token, wf_id) is not None
        done = r.append_limit_amendment(
            wf_id, authority_generation, amendment, AuthorityScope.AMEND_LIMITS
        )
        detail = (
            f"active time {done.before_max_active_duration_ms} -> "
            f"{done.after_max_active_duration_ms} ms, attempt lease "
            f"{done.before_max_attempt_lease_ms} -> {done.after_max_attempt_lease_ms} ms, "
            f"LLM spend {done.before_max_llm_spend_decimal or '-'} -> "
            f"{done.after_max_llm_spend_decimal or '-'} (authority generation "
            f"{done.new_authority_generation})"
        )
        result = RoutedResult(RoutedAction.AMEND_LIMITS, wf_id, True, detail, duplicate=before)
        write_note(routed, token, wf_id, username, reason, result)
        return result

    return _transact(routed, act, f"the limits of {wf_id} changed since you loaded them")


# ---------------------------------------------------------------- deployments and aliases


@observed("deactivate_deployment")
def do_deactivate_deployment(
    routed: RoutedStore,
    *,
    username: str,
    deployment_id: str,
    generation: int,
    reason: str,
    token: str,
) -> RoutedResult:
    """Inactive: admission refuses new invocations; live runs go on."""
    return _deployment(
        routed, DeploymentStatus.INACTIVE, username, deployment_id, generation, reason, token
    )


@observed("activate_deployment")
def do_activate_deployment(
    routed: RoutedStore,
    *,
    username: str,
    deployment_id: str,
    generation: int,
    reason: str,
    token: str,
) -> RoutedResult:
    return _deployment(
        routed, DeploymentStatus.ACTIVE, username, deployment_id, generation, reason, token
    )


def _deployment(
    routed: RoutedStore,
    status: DeploymentStatus,
    username: str,
    deployment_id: str,
    generation: int,
    reason: str,
    token: str,
) -> RoutedResult:
    reason = check_request(username, reason, token)
    dep_id = DeploymentID.parse(deployment_id)
    action = RoutedAction.ACTIVATE if status is DeploymentStatus.ACTIVE else RoutedAction.DEACTIVATE
    stale = f"deployment {dep_id} changed since you loaded it"

    def act(r: RoutedRules) -> RoutedResult:
        replay = _replay(routed, token, dep_id, action)
        if replay is not None:
            return replay
        current = r.get_deployment(dep_id)
        if current.generation != generation:
            raise StaleForm(f"{stale} (generation {current.generation}, not {generation})")
        if current.record.status is status:
            raise Invalid(f"deployment {dep_id} is already {status.name.lower()}")
        r.set_deployment_status(dep_id, status, generation)
        result = RoutedResult(action, dep_id, True, f"now {status.name.lower()}")
        write_note(routed, token, dep_id, username, reason, result)
        return result

    return _transact(routed, act, stale)


@observed("repoint_alias")
def do_repoint_alias(
    routed: RoutedStore,
    *,
    username: str,
    alias: str,
    generation: int,
    deployment_id: str,
    reason: str,
    token: str,
) -> RoutedResult:
    """Point ``alias`` at another deployment, CAS on the alias's generation: the alias,
    the target and the swap are read and written in one transaction."""
    reason = check_request(username, reason, token)
    target_id = DeploymentID.parse(deployment_id)
    stale = f"alias {alias!r} changed since you loaded it"

    def act(r: RoutedRules) -> RoutedResult:
        replay = _replay(routed, token, alias, RoutedAction.REPOINT_ALIAS)
        if replay is not None:
            return replay
        stored = r.resolve_alias(alias)
        current = stored.record
        if stored.generation != generation:
            raise StaleForm(f"{stale} (generation {stored.generation}, not {generation})")
        target = r.get_deployment(target_id).record
        if target.deployment_id == current.target_deployment_id:
            raise Invalid(f"alias {alias!r} already points at {target.deployment_id}")
        r.compare_and_swap_alias(
            AliasRecord(
                alias=current.alias,
                target_deployment_id=target.deployment_id,
                target_version=target.package_version,
                updated_by=actor_of(username),
                generation=generation,
            )
        )
        detail = (
            f"{current.target_deployment_id} ({current.target_version}) -> "
            f"{target.deployment_id} ({target.package_version})"
        )
        result = RoutedResult(RoutedAction.REPOINT_ALIAS, alias, True, detail)
        write_note(routed, token, alias, username, reason, result)
        return result

    return _transact(routed, act, stale)


# ---------------------------------------------------------------- the transaction and its note


def _transact[T](routed: RoutedStore, act: Callable[[RoutedRules], T], stale: str) -> T:
    """``act`` in one routed transaction; a generation conflict is a ``StaleForm``."""
    note_db(routed)  # refused before anything is written
    try:
        return routed.transact(act)
    except CASConflict as exc:
        raise StaleForm(f"{stale} ({exc})") from exc


def note_db(routed: RoutedStore) -> str:
    """The database alias the routed store's transactions run on, where the note is
    written inside them. A store without one (the in-memory double) cannot carry an
    action's note in its transaction, so it is refused rather than noted apart."""
    using = getattr(routed.store, "using", None)
    if not isinstance(using, str):
        raise Invalid(
            "routed actions write their note in the store's transaction: they need "
            f"the database store, not {type(routed.store).__name__}"
        )
    return using


def note_token(token: str, target: str) -> str:
    # One form token may act on many workflows (bulk): one note per target.
    return f"{token}/{target}"


def found_note(routed: RoutedStore, token: str, target: str) -> RoutedActionNote | None:
    notes = RoutedActionNote.objects.using(note_db(routed))
    found: RoutedActionNote | None = notes.filter(token=note_token(token, target)).first()
    return found


def _replay(
    routed: RoutedStore, token: str, target: str, action: RoutedAction
) -> RoutedResult | None:
    found = found_note(routed, token, target)
    if found is None:
        return None
    if found.action != action.value:
        raise Invalid(f"this form's token was used for {found.action}; reload the page")
    return RoutedResult(action, target, found.done, found.detail, duplicate=True)


def write_note(
    routed: RoutedStore,
    token: str,
    target: str,
    username: str,
    reason: str,
    result: RoutedResult,
) -> None:
    """Keep the reason, inside the action's transaction (the routed store's writers
    are serialised, so no second submission of the form is between the look and the
    insert). A replay the store answered finds its note there already.

    A form's token is one action's: noted for another action (on any target) it is
    ``Invalid`` and the action, which ran in this transaction, is rolled back (a
    restart's token cannot cancel another workflow). A bulk form's one token acts on
    many workflows, all with its one action."""
    notes = RoutedActionNote.objects.using(note_db(routed))
    other = (
        notes.filter(token__startswith=f"{token}/")
        .exclude(action=result.action.value)
        .values_list("action", flat=True)
        .first()
    )
    if other is not None:
        raise Invalid(f"this form's token was used for {other}; reload the page")
    if found_note(routed, token, target) is not None:
        return
    notes.create(
        token=note_token(token, target),
        action=result.action.value,
        target=target,
        actor=actor_of(username),
        reason=reason,
        detail=result.detail,
        done=result.done,
    )
