"""Read the Work list and one Work from the shell, as the API does:
``manage.py work list 'state=failed' --json``, ``manage.py work show WORK_ID``.

The list takes the Work list page's URL filters (one query string) and pages with
``--after`` (the printed next cursor); ``--json`` prints the API's serialisation
(``console/api/serialise.py``). Reads only: one ``storage.view`` each.
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from console.api import serialise
from console.api.cli import add_read_commands, as_command_error, dump, query, table, when
from console.api.views import read
from console.urlstate import FilterError
from console.works.filters import forward_key, parse_cursor, parse_work_filter
from console.works.reads import read_work_count_page, read_work_detail
from storage import StorageError


class Command(BaseCommand):
    help = "List Work (the Work list's filters) or show one Work; --json for the API's JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        add_read_commands(parser, "Work")

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
        body = serialise.work_list(
            read_work_count_page(parse_work_filter(data), forward_key(parse_cursor(data)))
        )
        if options["json"]:
            self.stdout.write(dump(body))
            return
        rows = [
            (w["id"], w["state"], w["kind"], w["scope_id"] or "-", when(w["updated_at"]))
            for w in body["works"]
        ]
        self.stdout.write(table(("ID", "STATE", "KIND", "SCOPE", "UPDATED (UTC)"), rows))
        self.stdout.write(
            f"{body['count']} matching"
            + (f"; next: --after {body['next']}" if body["next"] else "")
        )

    def _show(self, options: dict[str, Any]) -> None:
        body = serialise.work_detail(read(read_work_detail(options["id"])))
        if options["json"]:
            self.stdout.write(dump(body))
            return
        w = body["work"]
        for label, value in (
            ("Work", w["id"]),
            ("State", w["state"] + (" (exhausted)" if w["exhausted"] else "")),
            ("Kind", w["kind"]),
            ("Scope", w["scope_id"] or "-"),
            ("Created", when(w["created_at"])),
            ("Updated", when(w["updated_at"])),
        ):
            self.stdout.write(f"{label + ':':9} {value}")
        attempts = [
            (x["attempt"], x["id"], x["state"], x["executor"] or "-") for x in body["attempts"]
        ]
        self.stdout.write(f"\nAttempts ({len(attempts)}):")
        if attempts:
            self.stdout.write(table(("#", "ID", "STATE", "EXECUTOR"), attempts))
        events = [
            (e["sequence"], e["id"], e["type"], e["actor"] or "-", when(e["received_at"]))
            for e in body["events"]
        ]
        self.stdout.write(f"\nEvents ({len(events)}{'+' if body['more_events'] else ''}):")
        if events:
            self.stdout.write(table(("SEQ", "ID", "TYPE", "ACTOR", "RECEIVED (UTC)"), events))
        self.stdout.write(f"\nWaits: {len(body['waits'])}  Timers: {len(body['timers'])}")
