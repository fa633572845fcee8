"""Cancel or retry a Work from the shell, exactly as the console's button does:
``manage.py console_action cancel WORK_ID --user alice --reason "stuck since 3am"``.

The user must be active and hold ``console.work_control`` (the "operators" group
does); CONSOLE_READ_ONLY refuses it as it refuses the console. ``--token`` makes a
retried invocation idempotent (default: a fresh token).
"""

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from console.access import WORK_CONTROL, holds
from console.actions.common import new_token
from console.actions.work import do_cancel_work, do_retry_work, message
from storage import StorageError
from storage.default import default_store
from storage.ops.manual import Action


class Command(BaseCommand):
    help = "Cancel or retry one Work as an operator (records a core.manual Event)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=[a.value for a in Action])
        parser.add_argument("work_id")
        parser.add_argument("--user", required=True, help="the operator's username")
        parser.add_argument("--reason", required=True)
        parser.add_argument("--token", default="", help="idempotency token (16-64 of A-Za-z0-9_-)")

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.CONSOLE_READ_ONLY:
            raise CommandError("the console is read-only (CONSOLE_READ_ONLY): no actions")
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None or not holds(user, WORK_CONTROL):
            raise CommandError(f"{options['user']!r} is not an active operator ({WORK_CONTROL})")
        do = do_cancel_work if options["action"] == Action.CANCEL else do_retry_work
        try:
            result = do(
                default_store(),
                username=user.get_username(),
                work_id=options["work_id"],
                reason=options["reason"],
                token=options["token"] or new_token(),
            )
        except StorageError as exc:
            raise CommandError(str(exc)) from exc
        if not result.done:
            raise CommandError(message(result))
        self.stdout.write(self.style.SUCCESS(message(result)))
