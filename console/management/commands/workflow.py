"""Read routed workflows from the shell, as the API does:
``manage.py workflow list 'status=RUNNING' --json``, ``manage.py workflow show WF_ID``.

The list takes the Workflows page's URL filters and pages with ``--after``; ``--json``
prints the API's serialisation (``console/api/serialise.py``). Reads only.
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from console.api import serialise
from console.api.cli import add_read_commands, as_command_error, dump, query, table, when
from console.api.views import read
from console.routed.detail import read_workflow
from console.routed.filters import parse_workflow_cursor, parse_workflow_filter
from console.routed.reads import read_workflow_list
from console.urlstate import FilterError
from storage import StorageError


class Command(BaseCommand):
    help = "List routed workflows (the Workflows page's filters) or show one; --json for JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        add_read_commands(parser, "workflow")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["command"] == "list":
                self._list(options)
            else:
                self._show(options)
        except (FilterError, StorageError) as exc:
            raise as_command_error(exc) from exc

    def _list(self, options: dict[str, Any]) -> None:
        data = query(options)
        page = read(read_workflow_list(parse_workflow_filter(data), parse_workflow_cursor(data)))
        body = serialise.workflow_list(page)
        if options["json"]:
            self.stdout.write(dump(body))
            return
        rows = [
            (
                w["workflow_id"],
                w["status"],
                w["workflow_kind"],
                w["deployment_id"],
                when(w["updated_at"]),
            )
            for w in body["workflows"]
        ]
        self.stdout.write(table(("ID", "STATUS", "KIND", "DEPLOYMENT", "UPDATED (UTC)"), rows))
        self.stdout.write(
            f"{body['count']} matching"
            + (f"; next: --after {body['next']}" if body["next"] else "")
        )

    def _show(self, options: dict[str, Any]) -> None:
        body = serialise.workflow_detail(read(read_workflow(options["id"])))
        if options["json"]:
            self.stdout.write(dump(body))
            return
        wf = body["workflow"]
        for label, value in (
            ("Workflow", wf["workflow_id"]),
            (
                "Status",
                wf["status"] + (f" ({wf['terminal_reason']})" if wf["terminal_reason"] else ""),
            ),
            ("Kind", wf["workflow_kind"]),
            ("Deployment", wf["deployment_id"]),
            ("Created", when(wf["created_at"])),
            ("Updated", when(wf["updated_at"])),
        ):
            self.stdout.write(f"{label + ':':11} {value}")
        attempts = [(a["attempt_number"], a["attempt_id"], a["status"]) for a in body["attempts"]]
        self.stdout.write(f"\nAttempts ({len(attempts)}):")
        if attempts:
            self.stdout.write(table(("#", "ID", "STATUS"), attempts))
        self.stdout.write(f"\nRuns: {len(body['runs'])}  Control requests: {len(body['controls'])}")
