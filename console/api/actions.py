"""The API's operator actions: cancel and retry a Work, bulk by filter, pause, resume
and cancel a workflow, each through the ``do_*`` function its page uses.

Every action is two requests (docs/api.md):

1. **Dry run**: ``{"dry_run": true}`` (bulk: with ``action`` and ``filter``) reads
   what the action would do, changes nothing in the store, and answers it with a
   ``plan`` (a random key, the user's own, good for ``PLAN_TTL``). The plan keeps
   what the apply acts on: a bulk run's Work IDs, a workflow's generation (so an
   apply after the workflow moved on is a 409, as a stale form is).
2. **Apply**: ``{"plan": ..., "reason": ...}`` with an ``Idempotency-Key`` header.
   The first apply under a key does the action and keeps its answer (``ApiReplay``);
   the same key with the same request answers that again (``Idempotent-Replayed:
   true``) and does nothing; the same key with another request is a 422. A plan is
   used once: a second apply with another key is a 409. The ``do_*`` token is derived
   from the user and the key, so even an answer lost before it was kept is not acted
   on twice: the action's own idempotency finds the first run.

Authorisation is ``api_view``'s (a read-write token, the permission, not
``CONSOLE_READ_ONLY``); the audit is the ``do_*`` function's (the manual Event with
actor ``operator:<user>``, or the routed note), with the token's prefix on the replay.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, QueryDict
from django.utils import timezone

from console.access import ROUTED_CONTROL, WORK_CONTROL
from console.actions import routed as r
from console.actions.common import check_request
from console.actions.work import do_bulk, do_cancel_work, do_retry_work, message
from console.api import serialise
from console.api.http import ApiError, api_user, api_view, ok
from console.api.models import ApiPlan, ApiReplay
from console.api.views import read
from console.operate.sweep import read_sweep
from console.routed.previews import read_preview
from console.works.filters import parse_work_filter
from console.works.reads import read_work_detail
from storage.default import default_routed_store, default_store
from storage.ops.manual import Action, ActionResult

PLAN_TTL = timedelta(minutes=10)
IDEMPOTENCY_KEY = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
BODY_MAX = 16 * 1024
FILTER_MAX = 2000
# Work IDs a bulk dry run lists by name; the rest are counted (all are in the plan).
LISTED = 500

type Outcome = tuple[int, dict[str, Any]]
type Run = Callable[[ApiPlan, str, str], Outcome]


# ---------------------------------------------------------------- endpoints


@api_view("POST", act=WORK_CONTROL)
def cancel_work(request: HttpRequest, work_id: str) -> HttpResponse:
    return _work_action(request, Action.CANCEL, work_id)


@api_view("POST", act=WORK_CONTROL)
def retry_work(request: HttpRequest, work_id: str) -> HttpResponse:
    return _work_action(request, Action.RETRY, work_id)


@api_view("POST", act=WORK_CONTROL)
def bulk(request: HttpRequest) -> HttpResponse:
    """Cancel or retry everything a Work list filter selects (up to BULK_CAP)."""
    body = _body(request)
    if body.get("dry_run") is True:
        action = _choice(body, "action", [a.value for a in Action])
        raw = body.get("filter", "")
        if not isinstance(raw, str) or len(raw) > FILTER_MAX:
            raise ApiError(
                400,
                f"filter is the Work list's query string, {FILTER_MAX} characters at most.",
                {"filter": "bad"},
            )
        f = parse_work_filter(QueryDict(raw.lstrip("?")))
        sweep = read_sweep(Action(action), f, None, tries=False)
        ids = [w.id for w in sweep.eligible]
        would = {
            "action": action,
            "filter": f.querystring().lstrip("?"),
            "count": len(ids),
            "work_ids": ids[:LISTED],
            "matching": sweep.matching,
            "excluded": [{"work_id": i, "reason": why} for i, _, why in sweep.excluded[:LISTED]],
            "left": sweep.left,
            "over_cap": sweep.over_cap,
        }
        return _dry_run(request, f"bulk-{action}", "", {"work_ids": ids}, would)

    def run(plan: ApiPlan, reason: str, token: str) -> Outcome:
        summary = do_bulk(
            default_store(),
            username=request.user.get_username(),
            action=plan.action.removeprefix("bulk-"),
            work_ids=plan.detail["work_ids"],
            reason=reason,
            token=token,
        )
        return 200, {
            "action": summary.action.value,
            "message": f"{len(summary.done)} done, {len(summary.skipped)} skipped.",
            "requested": summary.requested,
            "done": [_work_result(x) for x in summary.done],
            "skipped": [{"work_id": s.work_id, "reason": s.reason} for s in summary.skipped],
        }

    return _apply(request, body, ("bulk-cancel", "bulk-retry"), "", run)


@api_view("POST", act=ROUTED_CONTROL)
def pause_workflow(request: HttpRequest, workflow_id: str) -> HttpResponse:
    return _workflow_action(request, r.RoutedAction.PAUSE, workflow_id)


@api_view("POST", act=ROUTED_CONTROL)
def resume_workflow(request: HttpRequest, workflow_id: str) -> HttpResponse:
    return _workflow_action(request, r.RoutedAction.RESUME, workflow_id)


@api_view("POST", act=ROUTED_CONTROL)
def cancel_workflow(request: HttpRequest, workflow_id: str) -> HttpResponse:
    return _workflow_action(request, r.RoutedAction.CANCEL, workflow_id)


# ---------------------------------------------------------------- Work and workflows


def _work_action(request: HttpRequest, action: Action, work_id: str) -> HttpResponse:
    body = _body(request)
    if body.get("dry_run") is True:
        detail = read(read_work_detail(work_id))
        refusal = detail.cancel_refusal if action is Action.CANCEL else detail.retry_refusal
        would = {"applies": not refusal, "refusal": refusal, "work": serialise.work(detail.work)}
        return _dry_run(request, action.value, work_id, {"revision": detail.work.revision}, would)
    do = do_cancel_work if action is Action.CANCEL else do_retry_work

    def run(plan: ApiPlan, reason: str, token: str) -> Outcome:
        username = request.user.get_username()
        result = do(default_store(), username=username, work_id=work_id, reason=reason, token=token)
        return 200, _work_result(result)

    return _apply(request, body, (action.value,), work_id, run)


def _work_result(result: ActionResult) -> dict[str, Any]:
    return {
        "work_id": result.work_id,
        "action": result.action.value,
        "done": result.done,
        "refusal": result.reason,
        "event_id": result.event_id,
        "attempt_id": result.attempt_id,
        "duplicate": result.duplicate,
        "message": message(result),
    }


_WORKFLOW_DO = {
    r.RoutedAction.PAUSE: r.do_pause_workflow,
    r.RoutedAction.RESUME: r.do_resume_workflow,
    r.RoutedAction.CANCEL: r.do_cancel_workflow,
}


def _workflow_action(
    request: HttpRequest, action: r.RoutedAction, workflow_id: str
) -> HttpResponse:
    body = _body(request)
    name = f"{action.value}-workflow"
    if body.get("dry_run") is True:
        preview = read_preview(default_routed_store(), action, workflow_id)
        would = {
            "applies": not preview.refusal,
            "refusal": preview.refusal,
            "transition": preview.transition,
            "workflow": serialise.plain(preview.workflow),
            "touches": serialise.plain(preview.touches),
        }
        detail = {"generation": preview.workflow.generation}
        return _dry_run(request, name, workflow_id, detail, would)
    do = _WORKFLOW_DO[action]

    def run(plan: ApiPlan, reason: str, token: str) -> Outcome:
        result = do(
            default_routed_store(),
            username=request.user.get_username(),
            workflow_id=workflow_id,
            generation=plan.detail["generation"],
            reason=reason,
            token=token,
        )
        return 200, {
            "workflow_id": str(result.target),
            "action": result.action.value,
            "done": result.done,
            "detail": result.detail,
            "duplicate": result.duplicate,
            "message": result.message,
        }

    return _apply(request, body, (name,), workflow_id, run)


# ---------------------------------------------------------------- dry run and apply


def _body(request: HttpRequest) -> dict[str, Any]:
    if len(request.body) > BODY_MAX:
        raise ApiError(400, f"The body is over {BODY_MAX} bytes.")
    try:
        body = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "The body is not JSON.") from None
    if not isinstance(body, dict):
        raise ApiError(400, "The body is a JSON object.")
    if "dry_run" not in body and "plan" not in body:
        raise ApiError(400, 'Send {"dry_run": true} first, then {"plan": ..., "reason": ...}.')
    return body


def _choice(body: dict[str, Any], name: str, choices: list[str]) -> str:
    value = body.get(name)
    if value not in choices:
        raise ApiError(400, f"{name} is one of {', '.join(choices)}.", {name: "bad"})
    return str(value)


def _dry_run(
    request: HttpRequest, action: str, target: str, detail: dict[str, Any], would: dict[str, Any]
) -> HttpResponse:
    expires = timezone.now() + PLAN_TTL
    plan = ApiPlan.objects.create(
        key=secrets.token_urlsafe(24),
        user=api_user(request),
        action=action,
        target=target,
        detail=detail,
        expires_at=expires,
    )
    return ok(
        {"dry_run": True, "plan": plan.key, "expires_at": expires.isoformat(), "would": would}
    )


def _apply(
    request: HttpRequest, body: dict[str, Any], actions: tuple[str, ...], target: str, run: Run
) -> HttpResponse:
    key = request.headers.get("Idempotency-Key", "")
    if not IDEMPOTENCY_KEY.match(key):
        raise ApiError(
            400, "An apply needs an Idempotency-Key header: 1-64 of A-Z a-z 0-9 _ . : -."
        )
    user = api_user(request)
    asked = hashlib.sha256(
        json.dumps([request.method, request.path, body], sort_keys=True).encode(
            "utf-8", "surrogatepass"
        )
    ).hexdigest()
    kept = ApiReplay.objects.filter(user=user, key=key).first()
    if kept is not None:
        return _replayed(kept, asked)
    plan_key = body.get("plan")
    reason = body.get("reason", "")
    if not isinstance(plan_key, str) or not isinstance(reason, str):
        raise ApiError(400, "plan and reason are strings.")
    token = _token(user.pk, key)
    reason = check_request(user.get_username(), reason, token)  # Invalid: a 400
    plan = ApiPlan.objects.filter(key=plan_key, user=user).first()
    if plan is None or plan.action not in actions or plan.target != target:
        raise ApiError(
            409, "No such plan of yours for this action and target: make a dry run first."
        )
    now = timezone.now()
    if plan.expires_at < now and plan.used_key != key:
        raise ApiError(409, "The plan has expired: make a new dry run.")
    # Used once: by this key (again, after a lost answer) or by none yet.
    claimed = (
        ApiPlan.objects.filter(pk=plan.pk)
        .filter(Q(used_at__isnull=True) | Q(used_key=key))
        .update(used_at=now, used_key=key)
    )
    if not claimed:
        raise ApiError(409, "The plan was applied already, under another Idempotency-Key.")
    status, answer = run(plan, reason, token)
    api_token = getattr(request, "api_token", None)
    try:
        with transaction.atomic():
            ApiReplay.objects.create(
                user=user,
                key=key,
                request=asked,
                status=status,
                body=answer,
                token_prefix=api_token.prefix if api_token else "",
            )
    except IntegrityError:
        # The same key applied concurrently: the first kept answer is the answer.
        return _replayed(ApiReplay.objects.get(user=user, key=key), asked)
    return ok(answer, status)


def _replayed(kept: ApiReplay, asked: str) -> HttpResponse:
    if kept.request != asked:
        raise ApiError(422, "This Idempotency-Key was used for another request.")
    response = ok(kept.body, kept.status)
    response["Idempotent-Replayed"] = "true"
    return response


def _token(user_pk: object, key: str) -> str:
    """The ``do_*`` idempotency token of ``key`` for this user (43 URL-safe characters:
    ``console.actions.common.TOKEN``)."""
    raw = hashlib.sha256(f"api:{user_pk}:{key}".encode()).digest()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")
