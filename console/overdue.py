"""What "overdue" means for a Timer in the console: late by more than the grace
(``settings.CONSOLE_OVERDUE_GRACE_SECONDS``), so a Timer a healthy runtime is about to
fire is no alarm. Every figure of overdue Timers (the dashboards, the Timers page's
overdue tab, the preset) selects the Timers due by ``overdue_by(now)``."""

from __future__ import annotations

from django.conf import settings

SECOND = 10**9


def grace_seconds() -> int:
    """The grace in seconds, read per request (tests and deployments may set it)."""
    return int(settings.CONSOLE_OVERDUE_GRACE_SECONDS)


def overdue_by(now: int) -> int:
    """The latest fire time of a Timer overdue at ``now``: due more than the grace ago."""
    return now - grace_seconds() * SECOND
