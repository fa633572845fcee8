"""The Work list's optional columns and who hides which (``Preference``).

The Work ID column is always shown (every row needs its link); every other column may
be hidden. The default, for a user who never chose, leaves out Source, Executor and
Created (issue 34: with every column the list was 1,606 px wide at 1440x900 and the
row actions sat off screen), so the default columns and the row actions fit a 1280 px
window without sideways scrolling; the chooser shows the rest.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from console.saved.models import Preference

WORK_COLUMNS = (
    ("state", "State"),
    ("last", "Last attempt"),
    ("kind", "Kind"),
    ("scope", "Scope"),
    ("source", "Source"),
    ("executor", "Executor"),
    ("created", "Created"),
    ("updated", "Updated"),
)
COLUMN_KEYS = frozenset(key for key, _ in WORK_COLUMNS)
DEFAULT_HIDDEN = frozenset({"source", "executor", "created"})


def shown_work_columns(user: AbstractBaseUser | AnonymousUser) -> frozenset[str]:
    """The columns this user sees: one query, remembered on the user for the request."""
    cached = getattr(user, "_console_columns", None)
    if cached is not None:
        return frozenset(cached)
    hidden: Iterable[str] = DEFAULT_HIDDEN
    if user.is_authenticated:
        stored = Preference.objects.filter(user_id=user.pk).values_list(
            "hidden_work_columns", flat=True
        )
        row = next(iter(stored), None)
        # Tolerate a hand-edited row (the admin, a shell): anything but names is ignored.
        if row is not None:
            hidden = [c for c in row if isinstance(c, str)] if isinstance(row, list) else ()
    shown = COLUMN_KEYS - frozenset(hidden)
    setattr(user, "_console_columns", shown)  # noqa: B010 (a per-request memo)
    return shown


def choose_work_columns(user: AbstractBaseUser, shown: Iterable[str]) -> frozenset[str]:
    """Store the columns ``user`` chose to show; unknown names are refused by the
    caller, so ``shown`` is a subset of COLUMN_KEYS here."""
    chosen = frozenset(shown) & COLUMN_KEYS
    hidden = sorted(COLUMN_KEYS - chosen)
    Preference.objects.update_or_create(user_id=user.pk, defaults={"hidden_work_columns": hidden})
    setattr(user, "_console_columns", chosen)  # noqa: B010 (a per-request memo)
    return chosen


def column_choices(shown: frozenset[str]) -> list[tuple[str, str, bool]]:
    return [(key, label, key in shown) for key, label in WORK_COLUMNS]
