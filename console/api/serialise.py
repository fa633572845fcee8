"""Records as JSON, for the API and ``manage.py work``/``workflow`` alike: one module,
so the command line and the API say the same thing about the same record.

Times are integer nanoseconds since the Unix epoch (UTC), as storage keeps them;
enums are their string values, or their names when numbered; a payload is its
schema and its JSON data (stored as valid JSON bytes; anything else as text).
"""

from __future__ import annotations

import base64
import dataclasses
import json
from decimal import Decimal
from enum import Enum
from typing import Any

from console.events.reads import EventPage
from console.routed.detail import WorkflowDetail
from console.routed.reads import WorkflowListPage
from console.urlstate import format_key
from console.works.reads import WorkCountPage, WorkDetail
from storage import Payload, StoredEvent, Work
from storage.routed.records import Stored

type Json = dict[str, Any]


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data: dataclasses by field, enums by value."""
    if isinstance(value, Payload):
        return {"schema": value.schema, "data": _payload_data(value.data)}
    if isinstance(value, Stored):
        return {**plain(value.record), "row_generation": value.generation}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        # A string enum by its value ("ready"); a numbered one by its name ("RUNNING",
        # as the routed pages and filters spell it), never by an opaque number.
        return value.value if isinstance(value.value, str) else value.name
    if isinstance(value, bool | int | float | None):
        return value
    if isinstance(value, str):
        return str(value)  # an ID type (a str subclass) as a plain string
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {str(plain(k)): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [plain(v) for v in value]
        return items if isinstance(value, list | tuple) else sorted(items, key=repr)
    return str(value)


def _payload_data(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")


def work(w: Work) -> Json:
    return {**plain(w), "source": w.source, "terminal": w.terminal}


def event(stored: StoredEvent) -> Json:
    return {
        **plain(stored.event),
        "sequence": stored.sequence,
        "scope_id": stored.scope_id,
        "route": plain(stored.route),
    }


def work_list(page: WorkCountPage) -> Json:
    return {
        "count": page.count,
        "works": [work(w) for w in page.works],
        "next": format_key(page.next_key) if page.next_key else None,
    }


def work_detail(d: WorkDetail) -> Json:
    return {
        "work": work(d.work),
        "attempts": [plain(x) for x in d.attempts],
        "events": [event(e) for e in d.events],
        "more_events": d.more_events,
        "waits": [plain(w) for w in d.waits],
        "timers": [plain(t) for t in d.timers],
        "children": [work(c) for c in d.children],
        "more_children": d.more_children,
        "cancel_refusal": d.cancel_refusal,
        "retry_refusal": d.retry_refusal,
    }


def event_list(page: EventPage) -> Json:
    return {
        "events": [event(e) for e in page.events],
        "next": str(page.older) if page.older else None,
    }


def workflow_list(page: WorkflowListPage) -> Json:
    return {
        "count": page.count,
        "workflows": [plain(s) for s in page.rows],
        "next": str(page.next_after) if page.next_after else None,
    }


def workflow_detail(d: WorkflowDetail) -> Json:
    return {
        "workflow": plain(d.workflow),
        "deployment": plain(d.deployment),
        "runs": [plain(r) for r in d.runs],
        "attempts": [plain(a.stored) for a in d.attempts],
        "nodes": [plain(n) for n in d.nodes],
        "controls": [{"request": plain(c.request), "result": plain(c.result)} for c in d.controls],
        "amendments": [plain(a) for a in d.amendments],
        "restarted_as": list(d.restarted_as),
    }
