"""Log lines as text (the default, ``make run``) or JSON (``CONDUIT_LOG_FORMAT=json``),
each with the request's ID.

- ``RequestId`` (middleware, first in MIDDLEWARE): every request gets an ID, the
  proxy's ``X-Request-ID`` when the connection comes from a trusted proxy
  (``conduit.proxy.from_trusted_proxy``) and the value is well formed, else a new one
  (32 hex digits). It is echoed in the response's ``X-Request-ID`` and held in a
  context variable for the request's duration.
- ``RequestIdFilter`` puts that ID on every record as ``request_id`` ("" outside a
  request: startup, management commands; Django's own line about a 4xx or 5xx
  response, written after the middleware returned, takes it from the request).
- ``JsonFormatter`` writes one JSON object a line: docs/logging.md lists the fields.
- ``GunicornLogger`` (deploy/gunicorn.conf.py's ``logger_class``): in JSON mode
  gunicorn's error and access logs use the same formatter, and an access line carries
  the request, its status, size and duration and the request ID the console answered
  with; in text mode gunicorn logs as it always did.

Why python-json-logger, not structlog: every line here comes through the standard
``logging`` module (Django's, gunicorn's, django-axes', our own ``log.info(...,
extra=...)``); a formatter on the handlers turns all of them into JSON without
changing a call site. structlog would need its own processor chain bridged into
``logging`` for the libraries' lines, for no field we need.
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from django.http import HttpRequest, HttpResponse
from gunicorn import glogging
from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

HEADER = "X-Request-ID"
META_HEADER = "HTTP_X_REQUEST_ID"
# What a proxy's request ID may look like: nginx's $request_id is 32 hex digits; UUIDs,
# and the IDs of other proxies and tracing systems, fit too. Anything else (too long,
# spaces, quotes, control characters) is replaced, so it cannot forge log content.
WELL_FORMED = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")
FORMATS = ("text", "json")

_current: ContextVar[str] = ContextVar("request_id", default="")


def current_request_id() -> str:
    return _current.get()


def request_id_of(request: HttpRequest) -> str:
    """The proxy's ID when a trusted proxy sent a well-formed one, else a new one."""
    from conduit.proxy import from_trusted_proxy

    given = request.META.get(META_HEADER, "")
    if given and WELL_FORMED.match(given) and from_trusted_proxy(request):
        return str(given)
    return uuid.uuid4().hex


class RequestId:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        rid = request_id_of(request)
        request.request_id = rid  # type: ignore[attr-defined]
        token = _current.set(rid)
        try:
            response = self.get_response(request)
        finally:
            _current.reset(token)
        response[HEADER] = rid
        return response


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            # Django logs a 4xx or 5xx response (django.request) after the middleware
            # has returned, with the request on the record: its ID is there.
            request = getattr(record, "request", None)
            record.request_id = getattr(request, "request_id", "") or _current.get()
        return True


# Record attributes that are logging's own bookkeeping, never written as fields (the
# ones kept are renamed: time, level, logger, message).
_RESERVED = [
    "args",
    "created",
    "exc_info",
    "exc_text",
    "filename",
    "funcName",
    "levelno",
    "lineno",
    "module",
    "msecs",
    "msg",
    "pathname",
    "processName",
    "relativeCreated",
    "stack_info",
    "taskName",
    "thread",
    "threadName",
    # Django's request log passes the request object: its path is in the message.
    "request",
]


class JsonFormatter(_JsonFormatter):
    """One JSON object a line: ``time`` (UTC, ISO 8601), ``level``, ``logger``,
    ``message``, ``request_id``, ``process``, then whatever the call's ``extra`` named,
    and ``exc_info`` with a traceback."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("fmt", "%(levelname)s %(name)s %(message)s %(request_id)s %(process)d")
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger"})
        kwargs.setdefault("timestamp", "time")
        kwargs.setdefault("reserved_attrs", _RESERVED)
        kwargs.setdefault("json_ensure_ascii", False)
        super().__init__(*args, **kwargs)


def logging_config(fmt: str, level: str) -> dict[str, Any]:
    """Django's LOGGING for the format: every handler carries the request ID filter."""
    formatter: dict[str, Any] = (
        {"()": JsonFormatter} if fmt == "json" else {"format": "%(message)s"}
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": RequestIdFilter}},
        "formatters": {"console": formatter},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "console",
                "filters": ["request_id"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # Django's default config gives its own logger a console handler under
            # DEBUG; with ours on the root every 4xx ("Not Found: /x") was printed
            # twice. Naming the logger here replaces its handlers, so records reach
            # the root once.
            "django": {"handlers": [], "level": "INFO", "propagate": True},
            # django-axes logs every sign-in at INFO; failures and lockouts are WARNINGs.
            "axes": {"level": "WARNING"},
        },
    }


class GunicornLogger(glogging.Logger):  # type: ignore[misc]
    """gunicorn's logger, writing JSON lines when ``CONDUIT_LOG_FORMAT=json`` (the
    settings refuse any value but text and json when the app loads)."""

    json_lines = False

    def setup(self, cfg: Any) -> None:
        self.json_lines = os.environ.get("CONDUIT_LOG_FORMAT", "text").strip() == "json"
        super().setup(cfg)
        if self.json_lines:
            for log in (self.error_log, self.access_log):
                for handler in log.handlers:
                    handler.setFormatter(JsonFormatter())

    def access(self, resp: Any, req: Any, environ: Any, request_time: Any) -> None:
        if not self.json_lines:
            super().access(resp, req, environ, request_time)
            return
        if not self.access_log_enabled:
            return
        atoms = self.atoms(resp, req, environ, request_time)
        fields = {
            "event": "access",
            "request_id": atoms.get("{x-request-id}o", ""),
            "remote_addr": atoms["h"],
            "forwarded_for": environ.get("HTTP_X_FORWARDED_FOR", ""),
            "method": atoms["m"],
            "path": atoms["U"],
            "query": atoms["q"] or "",
            "protocol": atoms["H"],
            "status": int(atoms["s"]) if str(atoms["s"]).isdigit() else atoms["s"],
            "bytes": atoms["B"] or 0,
            "duration_ms": round(atoms["D"] / 1000, 1),
            "referer": environ.get("HTTP_REFERER", ""),
            "user_agent": environ.get("HTTP_USER_AGENT", ""),
        }
        try:
            self.access_log.info(
                "%s %s %s", atoms["m"], environ.get("RAW_URI", atoms["U"]), atoms["s"], extra=fields
            )
        except Exception:
            self.exception("access log line failed")
