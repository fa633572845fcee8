"""Operator actions on routed runs: named ``do_*`` functions shared by the console's
confirmation views, ``manage.py routed_action`` and the tests.

Each one checks the request (username, reason, the form's idempotency token), goes
through ``RoutedStore``'s public API only, records the actor as
``operator:<username>`` and writes a ``RoutedActionNote`` with the reason (the
routed-run records have no field for it). Resubmitting a form does not act twice:

- workflow control (pause, resume, cancel, restart, continue) uses the token as the
  ``ControlRequest``'s idempotency key, which the store replays;
- limit amendments use it as the ``LimitAmendment``'s key, which the store replays;
- deployment status and alias repoints have no key in the store, so the note (its
  token unique) is the ledger: a token already noted returns what it did.

Every form carries the generation it was rendered at; the store's compare-and-set
refuses a stale one and this module says so as ``StaleForm`` ("changed since you
loaded it"), which the views answer with the confirmation re-read (409).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from console.actions import REASON_MAX
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
from storage.routed.rules.base import check_text
from storage.routed.store import RoutedStore

_TOKEN = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
ACTOR_PREFIX = "operator:"

__all__ = [
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


_COMMANDS = {
    RoutedAction.PAUSE: ControlCommand.PAUSE,
    RoutedAction.RESUME: ControlCommand.RESUME,
    RoutedAction.CANCEL: ControlCommand.CANCEL,
    RoutedAction.RESTART: ControlCommand.RESTART,
    RoutedAction.CONTINUE: ControlCommand.CONTINUE,
}
WORKFLOW_ACTIONS = (*_COMMANDS, RoutedAction.AMEND_LIMITS)


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
        text = f"{self.action.verb} {self.target}: {self.detail}."
        if self.duplicate:
            text = f"This form was already submitted, nothing was done twice. {text}"
        return text


def actor_of(username: str) -> str:
    return f"{ACTOR_PREFIX}{username}"


def notes_for(target: str) -> list[RoutedActionNote]:
    """The notes (reason, actor, what happened) of one workflow, deployment or alias."""
    return list(RoutedActionNote.objects.filter(target=target))


# ---------------------------------------------------------------- workflow control


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
    command = action.command
    if command is None:
        raise Invalid(f"{action.value} is not a workflow control command")
    req = ControlRequest(
        control_request_id=ControlRequestID.new(),
        workflow_id=wf_id,
        command=command,
        expected_generation=generation,
        actor_identity=actor_of(username),
        authority_scope=action.authority,
        idempotency_key=token,
        target_deployment_ref=target_ref,
    )
    try:
        outcome = routed.request_control(req)
    except CASConflict as exc:
        raise StaleForm(f"workflow {wf_id} changed since you loaded it ({exc})") from exc
    res = outcome.result
    result = RoutedResult(
        action,
        wf_id,
        done=res.applied,
        detail=res.detail,
        duplicate=outcome.replay,
        new_workflow_id=res.new_workflow_id,
    )
    note(token, wf_id, username, reason, result)
    return result


# ---------------------------------------------------------------- limits


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
    before = _noted(token, wf_id)
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
    try:
        done = routed.append_limit_amendment(
            wf_id, authority_generation, amendment, AuthorityScope.AMEND_LIMITS
        )
    except CASConflict as exc:
        raise StaleForm(f"the limits of {wf_id} changed since you loaded them ({exc})") from exc
    detail = (
        f"active time {done.before_max_active_duration_ms} -> "
        f"{done.after_max_active_duration_ms} ms, attempt lease "
        f"{done.before_max_attempt_lease_ms} -> {done.after_max_attempt_lease_ms} ms, "
        f"LLM spend {done.before_max_llm_spend_decimal or '-'} -> "
        f"{done.after_max_llm_spend_decimal or '-'} (authority generation "
        f"{done.new_authority_generation})"
    )
    result = RoutedResult(RoutedAction.AMEND_LIMITS, wf_id, True, detail, duplicate=before)
    note(token, wf_id, username, reason, result)
    return result


# ---------------------------------------------------------------- deployments and aliases


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
    replay = _replay(token, dep_id, action)
    if replay is not None:
        return replay
    current = routed.get_deployment(dep_id)
    if current.generation != generation:
        raise StaleForm(
            f"deployment {dep_id} changed since you loaded it (generation "
            f"{current.generation}, not {generation})"
        )
    if current.record.status is status:
        raise Invalid(f"deployment {dep_id} is already {status.name.lower()}")
    try:
        routed.set_deployment_status(dep_id, status, generation)
    except CASConflict as exc:
        raise StaleForm(f"deployment {dep_id} changed since you loaded it ({exc})") from exc
    result = RoutedResult(action, dep_id, True, f"now {status.name.lower()}")
    note(token, dep_id, username, reason, result)
    return result


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
    """Point ``alias`` at another deployment, CAS on the alias's generation."""
    reason = check_request(username, reason, token)
    replay = _replay(token, alias, RoutedAction.REPOINT_ALIAS)
    if replay is not None:
        return replay
    stored = routed.resolve_alias(alias)
    current = stored.record
    if stored.generation != generation:
        raise StaleForm(
            f"alias {alias!r} changed since you loaded it (generation "
            f"{stored.generation}, not {generation})"
        )
    target = routed.get_deployment(DeploymentID.parse(deployment_id)).record
    if target.deployment_id == current.target_deployment_id:
        raise Invalid(f"alias {alias!r} already points at {target.deployment_id}")
    record = AliasRecord(
        alias=current.alias,
        target_deployment_id=target.deployment_id,
        target_version=target.package_version,
        updated_by=actor_of(username),
        generation=generation,
    )
    try:
        routed.compare_and_swap_alias(record)
    except CASConflict as exc:
        raise StaleForm(f"alias {alias!r} changed since you loaded it ({exc})") from exc
    detail = (
        f"{current.target_deployment_id} ({current.target_version}) -> "
        f"{target.deployment_id} ({target.package_version})"
    )
    result = RoutedResult(RoutedAction.REPOINT_ALIAS, alias, True, detail)
    note(token, alias, username, reason, result)
    return result


# ---------------------------------------------------------------- shared checks and notes


def check_request(username: str, reason: str, token: str) -> str:
    if not username:
        raise Invalid("an operator action needs the operator's username")
    reason = reason.strip()
    if not reason:
        raise Invalid("give a reason for the action")
    if len(reason) > REASON_MAX:
        raise Invalid(f"the reason is {len(reason)} characters; at most {REASON_MAX}")
    # Storable on every backend (no NUL, no lone surrogate): the note keeps it as is.
    check_text("reason", reason, limit=4 * REASON_MAX)
    if not _TOKEN.match(token):
        raise Invalid("the form's idempotency token is malformed; reload the page")
    return reason


def note_token(token: str, target: str) -> str:
    # One form token may act on many workflows (bulk): one note per target.
    return f"{token}/{target}"


def _noted(token: str, target: str) -> bool:
    return RoutedActionNote.objects.filter(token=note_token(token, target)).exists()


def _replay(token: str, target: str, action: RoutedAction) -> RoutedResult | None:
    found = RoutedActionNote.objects.filter(token=note_token(token, target)).first()
    if found is None:
        return None
    if found.action != action.value:
        raise Invalid(f"this form's token was used for {found.action}; reload the page")
    return RoutedResult(action, target, found.done, found.detail, duplicate=True)


def note(token: str, target: str, username: str, reason: str, result: RoutedResult) -> None:
    """Keep the reason. A resubmission (the store replayed it) finds the note there;
    two racing submissions of one form both reach here (``get_or_create`` takes the
    unique token's IntegrityError as "found")."""
    RoutedActionNote.objects.get_or_create(
        token=note_token(token, target),
        defaults={
            "action": result.action.value,
            "target": target,
            "actor": actor_of(username),
            "reason": reason,
            "detail": result.detail,
            "done": result.done,
        },
    )
