"""The API's OpenAPI 3.1 document, written out by hand beside the routes it
describes (``tests/console/api/test_openapi.py`` validates it and checks that every
route of ``console/api/urls.py`` is in it, and nothing else)."""

from __future__ import annotations

from typing import Any

type Json = dict[str, Any]

VERSION = "1.0.0"


def _ref(name: str) -> Json:
    return {"$ref": f"#/components/schemas/{name}"}


def _query(name: str, description: str, *, repeat: bool = False) -> Json:
    schema: Json = {"type": "array", "items": {"type": "string"}} if repeat else {"type": "string"}
    param: Json = {"name": name, "in": "query", "required": False, "schema": schema}
    if repeat:
        param |= {"style": "form", "explode": True}
    return param | {"description": description}


def _path(name: str, description: str) -> Json:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
        "description": description,
    }


def _errors(*codes: int) -> Json:
    words = {
        400: "Bad input (a message and the fields at fault)",
        401: "No, an unknown or a revoked token",
        403: "Refused: read-only token, missing permission, read-only console, CSRF",
        404: "No such record",
        405: "Method not allowed",
        409: "Conflict: the record moved on, a used or foreign plan",
        422: "The idempotency key was used for another request",
        503: "Storage unavailable",
    }
    return {
        str(c): {
            "description": words[c],
            "content": {"application/json": {"schema": _ref("Error")}},
        }
        for c in codes
    }


def _ok(schema: str, description: str = "OK") -> Json:
    return {
        "200": {
            "description": description,
            "content": {"application/json": {"schema": _ref(schema)}},
        }
    }


READ_ERRORS = (400, 401, 404, 405, 503)
SIZE = _query("size", "Page size: 25, 50 (default), 100 or 200.")

WORK_FILTERS = [
    _query("state", "Work state (repeats; comma-separated values too).", repeat=True),
    _query("source", "Source (repeats).", repeat=True),
    _query("scope", "Scope ID."),
    _query("within", "A Scope and its descendants."),
    _query("kind", "Work kind."),
    _query("parent", "Parent Work ID."),
    _query("executor", "Latest executor."),
    _query("error", "Error group key."),
    _query("is", "'exhausted' keeps exhausted Work only."),
    _query("since", "Updated at or after: an age (15m, 2h, 7d) or a date and time."),
    _query("until", "Updated before: like since."),
    _query("sort", "created (default, newest first), -created, updated, -updated."),
    SIZE,
    _query("after", "The previous answer's next."),
]

EVENT_FILTERS = [
    _query(name, description)
    for name, description in (
        ("source", "Event source."),
        ("type", "Event type."),
        ("scope", "Scope ID."),
        ("within", "A Scope and its descendants."),
        ("work", "Work ID."),
        ("actor", "operator:<name>, a bare name, or another actor as typed."),
        ("key_source", "Correlation key source (with key_id)."),
        ("key_id", "Correlation key ID (with key_source)."),
        ("mine", "1: only your own actions."),
        ("unrouted", "1: only Events no Work took."),
        ("since", "Received at or after."),
        ("until", "Received before."),
        ("before", "The previous answer's next (older Events)."),
        ("after", "Newer than this sequence number."),
    )
] + [SIZE]

WORKFLOW_FILTERS = [
    _query("status", "Workflow status (repeats).", repeat=True),
    _query("kind", "Workflow kind (repeats).", repeat=True),
    _query("deployment", "Deployment ID (repeats).", repeat=True),
    _query("reason", "Failure reason (repeats).", repeat=True),
    _query("q", "An ID or ID prefix to search for."),
    _query("alert", "near_ceiling, lease_expired or paused_long."),
    SIZE,
    _query("after", "The previous answer's next."),
]

OBJECT: Json = {"type": "object", "additionalProperties": True}
NEXT: Json = {"type": ["string", "null"], "description": "The next page's cursor; null at the end."}
NEXT_URL: Json = {"type": ["string", "null"]}


def _page(field: str, item: str, *, counted: bool) -> Json:
    """A keyset page of ``item``s under ``field``; ``count``: how many match in all."""
    properties: Json = {field: {"type": "array", "items": _ref(item)}}
    properties |= {"next": NEXT, "next_url": NEXT_URL}
    if counted:
        properties["count"] = {"type": "integer"}
    required = [*(["count"] if counted else []), field, "next", "next_url"]
    return {"type": "object", "required": required, "properties": properties}


SCHEMAS: Json = {
    "DryRun": {
        "type": "object",
        "required": ["dry_run"],
        "properties": {"dry_run": {"const": True}},
    },
    "BulkDryRun": {
        "type": "object",
        "required": ["dry_run", "action", "filter"],
        "properties": {
            "dry_run": {"const": True},
            "action": {"type": "string", "enum": ["cancel", "retry"]},
            "filter": {"type": "string", "description": "The Work list's query string."},
        },
    },
    "Apply": {
        "type": "object",
        "required": ["plan", "reason"],
        "properties": {
            "plan": {"type": "string", "description": "The dry run's plan."},
            "reason": {"type": "string", "minLength": 1, "maxLength": 500},
        },
    },
    "Plan": {
        "type": "object",
        "required": ["dry_run", "plan", "expires_at", "would"],
        "properties": {
            "dry_run": {"const": True},
            "plan": {"type": "string"},
            "expires_at": {"type": "string", "format": "date-time"},
            "would": {"type": "object", "description": "What the action would do."},
        },
    },
    "ActionResult": {
        "type": "object",
        "required": ["action", "message"],
        "properties": {
            "action": {"type": "string"},
            "done": {"oneOf": [{"type": "boolean"}, {"type": "array"}]},
            "duplicate": {"type": "boolean"},
            "message": {"type": "string"},
        },
        "additionalProperties": True,
    },
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["status", "message", "fields"],
                "properties": {
                    "status": {"type": "integer"},
                    "message": {"type": "string"},
                    "fields": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            }
        },
    },
    "Work": {
        "type": "object",
        "required": ["id", "kind", "state", "created_at", "updated_at"],
        "properties": {
            "id": {"type": "string"},
            "kind": {"type": "string"},
            "scope_id": {"type": "string"},
            "parent_id": {"type": "string"},
            "state": {
                "type": "string",
                "enum": ["ready", "running", "waiting", "completed", "failed", "cancelled"],
            },
            "source": {"type": "string"},
            "exhausted": {"type": "boolean"},
            "error_group": {"type": "string"},
            "revision": {"type": "integer"},
            "created_at": {"type": "integer", "description": "ns since the epoch"},
            "updated_at": {"type": "integer"},
            "terminal": {"type": "boolean"},
        },
        "additionalProperties": True,
    },
    "Event": {
        "type": "object",
        "required": ["id", "source", "type", "sequence"],
        "properties": {
            "id": {"type": "string"},
            "source": {"type": "string"},
            "type": {"type": "string"},
            "work_id": {"type": "string"},
            "actor": {"type": "string"},
            "sequence": {"type": "integer"},
            "received_at": {"type": "integer"},
        },
        "additionalProperties": True,
    },
    "WorkList": _page("works", "Work", counted=True),
    "WorkDetail": {
        "type": "object",
        "required": ["work", "attempts", "events", "waits", "timers"],
        "properties": {
            "work": _ref("Work"),
            "attempts": {"type": "array", "items": OBJECT},
            "events": {"type": "array", "items": _ref("Event")},
            "more_events": {"type": "boolean"},
            "waits": {"type": "array", "items": OBJECT},
            "timers": {"type": "array", "items": OBJECT},
            "children": {"type": "array", "items": _ref("Work")},
            "more_children": {"type": "boolean"},
            "cancel_refusal": {
                "type": "string",
                "description": "Why cancel would be refused; empty when it applies.",
            },
            "retry_refusal": {"type": "string"},
        },
    },
    "EventList": _page("events", "Event", counted=False),
    "Workflow": {
        "type": "object",
        "required": ["workflow_id", "status", "generation", "row_generation"],
        "properties": {
            "workflow_id": {"type": "string"},
            "workflow_kind": {"type": "string"},
            "deployment_id": {"type": "string"},
            "status": {"type": "string"},
            "generation": {"type": "integer"},
            "row_generation": {"type": "integer"},
        },
        "additionalProperties": True,
    },
    "WorkflowList": _page("workflows", "Workflow", counted=True),
    "WorkflowDetail": {
        "type": "object",
        "required": ["workflow", "runs", "attempts", "controls"],
        "properties": {
            "workflow": _ref("Workflow"),
            "deployment": {"type": ["object", "null"]},
            "runs": {"type": "array", "items": OBJECT},
            "attempts": {"type": "array", "items": OBJECT},
            "nodes": {"type": "array", "items": OBJECT},
            "controls": {"type": "array", "items": OBJECT},
            "amendments": {"type": "array", "items": OBJECT},
            "restarted_as": {"type": "array", "items": {"type": "string"}},
        },
    },
}

ACTION_ERRORS = (400, 401, 403, 404, 405, 409, 422, 503)
IDEMPOTENCY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,64}$"},
    "description": "Required to apply: the same key answers the first result again.",
}


def _action(operation: str, summary: str, path_param: str, dry_run: str) -> Json:
    params = [IDEMPOTENCY]
    if path_param:
        params.insert(0, _path(path_param, "The ID."))
    return {
        "post": {
            "operationId": operation,
            "summary": summary,
            "parameters": params,
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {"oneOf": [_ref(dry_run), _ref("Apply")]},
                    }
                },
            },
            "responses": {
                "200": {
                    "description": "The dry run's plan, or the applied action's result",
                    "content": {
                        "application/json": {
                            "schema": {"oneOf": [_ref("Plan"), _ref("ActionResult")]}
                        }
                    },
                }
            }
            | _errors(*ACTION_ERRORS),
        }
    }


PATHS: Json = {
    "/works": {
        "get": {
            "operationId": "listWork",
            "summary": "The Work list, the page's filters, keyset pages",
            "parameters": WORK_FILTERS,
            "responses": _ok("WorkList") | _errors(*READ_ERRORS),
        }
    },
    "/works/{work_id}": {
        "get": {
            "operationId": "getWork",
            "summary": "One Work with its attempts, Events, Waits and Timers",
            "parameters": [
                _path("work_id", "The Work ID (may contain '/', percent-encoded as needed).")
            ],
            "responses": _ok("WorkDetail") | _errors(*READ_ERRORS),
        }
    },
    "/events": {
        "get": {
            "operationId": "listEvents",
            "summary": "The Event stream, newest first",
            "parameters": EVENT_FILTERS,
            "responses": _ok("EventList") | _errors(*READ_ERRORS),
        }
    },
    "/workflows": {
        "get": {
            "operationId": "listWorkflows",
            "summary": "Routed workflows",
            "parameters": WORKFLOW_FILTERS,
            "responses": _ok("WorkflowList") | _errors(*READ_ERRORS),
        }
    },
    "/workflows/{workflow_id}": {
        "get": {
            "operationId": "getWorkflow",
            "summary": "One routed workflow with its runs, attempts and control requests",
            "parameters": [_path("workflow_id", "The workflow ID.")],
            "responses": _ok("WorkflowDetail") | _errors(*READ_ERRORS),
        }
    },
    "/actions/cancel/{work_id}": _action("cancelWork", "Cancel a Work", "work_id", "DryRun"),
    "/actions/retry/{work_id}": _action("retryWork", "Retry a Work", "work_id", "DryRun"),
    "/actions/bulk": _action("bulk", "Cancel or retry what a filter selects", "", "BulkDryRun"),
    "/actions/pause-workflow/{workflow_id}": _action(
        "pauseWorkflow", "Pause a workflow", "workflow_id", "DryRun"
    ),
    "/actions/resume-workflow/{workflow_id}": _action(
        "resumeWorkflow", "Resume a workflow", "workflow_id", "DryRun"
    ),
    "/actions/cancel-workflow/{workflow_id}": _action(
        "cancelWorkflow", "Cancel a workflow", "workflow_id", "DryRun"
    ),
    "/openapi.json": {
        "get": {
            "operationId": "getOpenApi",
            "summary": "This document (no authentication needed)",
            "security": [],
            "responses": {
                "200": {
                    "description": "The OpenAPI document",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                }
            },
        }
    },
}


def document(base_url: str) -> Json:
    """The document, its server being ``base_url`` (…/api/v1)."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Conduit Console API",
            "version": VERSION,
            "description": "Read and act on Conduit's Work and routed workflows (docs/api.md).",
        },
        "servers": [{"url": base_url}],
        "security": [{"token": []}, {"session": []}],
        "paths": PATHS,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {
                "token": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A per-user API token (cc_...), from your API tokens page.",
                },
                "session": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": "sessionid",
                    "description": (
                        "The console's sign-in session; unsafe methods also need the CSRF token."
                    ),
                },
            },
        },
    }
