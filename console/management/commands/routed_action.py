"""Act on a routed run from the shell, exactly as the console's confirmation does:
``manage.py routed_action pause WORKFLOW_ID --user alice --reason "model is down"``.

The user must hold the action's authority (runs:control, or runs:amend_limits for
``amend-limits``); CONSOLE_READ_ONLY refuses it as it refuses the console. The
generation defaults to the current one (the shell has no stale form to protect);
``--token`` makes a repeated invocation idempotent (default: a fresh token).
"""

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from console.access import SCOPE_PERMISSION, holds
from console.actions import routed as a
from console.actions.common import new_token
from storage import StorageError
from storage.default import default_routed_store
from storage.routed.ids import WorkflowID

SIMPLE = {
    a.RoutedAction.PAUSE: a.do_pause_workflow,
    a.RoutedAction.RESUME: a.do_resume_workflow,
    a.RoutedAction.CANCEL: a.do_cancel_workflow,
    a.RoutedAction.CONTINUE: a.do_continue_workflow,
}


class Command(BaseCommand):
    help = "Pause, resume, cancel, restart, continue or amend the limits of a workflow."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=[x.value for x in a.WORKFLOW_ACTIONS])
        parser.add_argument("workflow_id")
        parser.add_argument("--user", required=True, help="the operator's username")
        parser.add_argument("--reason", required=True)
        parser.add_argument("--token", default="", help="idempotency token (16-64 of A-Za-z0-9_-)")
        parser.add_argument("--target", default="", help="restart: an alias (default: exact)")
        parser.add_argument("--max-active-ms", type=int, default=0, help="amend-limits")
        parser.add_argument("--attempt-lease-ms", type=int, default=0, help="amend-limits")
        parser.add_argument("--max-llm-spend", default="", help="amend-limits")

    def handle(self, *args: Any, **options: Any) -> None:
        act = a.RoutedAction(options["action"])
        if settings.CONSOLE_READ_ONLY:
            raise CommandError("the console is read-only (CONSOLE_READ_ONLY): no actions")
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None or not holds(user, SCOPE_PERMISSION[act.authority]):
            raise CommandError(f"{options['user']!r} does not hold {act.authority.value}")
        routed = default_routed_store()
        common: dict[str, Any] = {
            "username": user.get_username(),
            "workflow_id": options["workflow_id"],
            "reason": options["reason"],
            "token": options["token"] or new_token(),
        }
        try:
            wf = routed.view(lambda r: r.get_workflow(WorkflowID.parse(options["workflow_id"])))
            if act is a.RoutedAction.AMEND_LIMITS:
                result = a.do_amend_limits(
                    routed,
                    authority_generation=wf.record.authority_generation,
                    max_active_duration_ms=options["max_active_ms"],
                    attempt_lease_ms=options["attempt_lease_ms"],
                    max_llm_spend=options["max_llm_spend"],
                    **common,
                )
            elif act is a.RoutedAction.RESTART:
                result = a.do_restart_workflow(
                    routed, generation=wf.generation, target_ref=options["target"], **common
                )
            else:
                result = SIMPLE[act](routed, generation=wf.generation, **common)
        except StorageError as exc:
            raise CommandError(str(exc)) from exc
        if not result.done:
            raise CommandError(result.message)
        self.stdout.write(self.style.SUCCESS(result.message))
