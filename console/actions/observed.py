"""Every operator action, counted and logged once: ``@observed(name)`` on each ``do_*``.

The wrapper times the call and, whatever its end (a result, a refusal, an exception),
adds one to ``conduit_operator_actions_total{action, result}`` (docs/metrics.md) and
writes ONE log line on the ``console.actions`` logger with the actor, the action, its
targets, the form token, the result and the duration (docs/logging.md lists the
fields). It runs after the action's transactions have ended, so neither the count nor
the line can hold a transaction open or roll one back.

``result`` is one of a fixed set, so the counter's series stay few:
``done``, ``duplicate`` (a replayed form), ``refused`` (the action did not apply),
``partial`` (a bulk action that did some and skipped some), ``invalid``, ``conflict``,
``not_found``, ``unavailable`` (storage's exceptions), ``error`` (anything else).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from console.metrics.instruments import ACTIONS
from storage import Conflict, Invalid, NotFound, StorageError, Unavailable

log = logging.getLogger("console.actions")

# The keyword arguments that name what an action acts on, in the order logged.
TARGET_ARGS = ("work_id", "workflow_id", "deployment_id", "alias", "work_ids", "workflow_ids")
# A bulk action's line lists this many targets at most (target_count says how many).
TARGETS_LOGGED = 100

_ERRORS: tuple[tuple[type[Exception], str], ...] = (
    (Invalid, "invalid"),
    (NotFound, "not_found"),
    (Conflict, "conflict"),
    (Unavailable, "unavailable"),
    (StorageError, "refused"),
)


def outcome(result: object) -> str:
    """The label of a returned result: a single action's (``done``, ``duplicate``) or a
    bulk summary's (``done``/``skipped`` tuples)."""
    done = getattr(result, "done", None)
    if isinstance(done, bool):
        if getattr(result, "duplicate", False):
            return "duplicate"
        return "done" if done else "refused"
    skipped = getattr(result, "skipped", ())
    if done and skipped:
        return "partial"
    return "done" if done or not skipped else "refused"


def failure(exc: Exception) -> str:
    return next((label for cls, label in _ERRORS if isinstance(exc, cls)), "error")


def targets(kwargs: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for name in TARGET_ARGS:
        value = kwargs.get(name)
        if isinstance(value, str) and value:
            out.append(value)
        elif value is not None and not isinstance(value, str):
            out.extend(str(v) for v in value)
    return out


def observed[**P, R](
    name: str | Callable[[Mapping[str, Any]], str],
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """``name``: the action's label, or a function of the call's keyword arguments
    (a bulk action is labelled by what it does: ``bulk_cancel_work``)."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            action = name if isinstance(name, str) else name(kwargs)
            start = time.perf_counter()
            # Until the call ends otherwise: a BaseException (SystemExit from a worker
            # stopped mid-action) passes the except below and still gets its line.
            label, detail = "error", ""
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                label, detail = failure(exc), str(exc)
                raise
            else:
                label = outcome(result)
            finally:
                ACTIONS.labels(action, label).inc()
                _line(action, label, kwargs, time.perf_counter() - start, detail)
            return result

        return run

    return wrap


def _line(action: str, result: str, kwargs: Mapping[str, Any], took: float, detail: str) -> None:
    actor = str(kwargs.get("username", ""))
    named = targets(kwargs)
    ms = round(took * 1000, 1)
    log.info(
        "operator action %s by %s on %s: %s (%s ms)%s",
        action,
        actor,
        ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else ""),
        result,
        ms,
        f": {detail}" if detail else "",
        extra={
            "event": "operator_action",
            "actor": actor,
            "action": action,
            "targets": named[:TARGETS_LOGGED],
            "target_count": len(named),
            "form_token": str(kwargs.get("token", "")),
            "result": result,
            "duration_ms": ms,
            "detail": detail,
        },
    )


def bulk_label(what: str, known: frozenset[str]) -> Callable[[Mapping[str, Any]], str]:
    """A bulk action's label from its ``action`` argument and what it acts on:
    ``bulk_cancel_work``, ``bulk_pause_workflow``; a value outside ``known`` (refused
    by the action itself) is ``bulk_unknown_<what>``, so the label stays bounded."""

    def label(kwargs: Mapping[str, Any]) -> str:
        raw = kwargs.get("action")
        value = str(getattr(raw, "value", raw))
        return f"bulk_{value if value in known else 'unknown'}_{what}".replace("-", "_")

    return label
