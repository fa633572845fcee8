"""The shared storage contract cases.

Each case is a plain function ``case_<name>(store, clock)`` that drives a fresh, empty
store and fails with a plain ``assert`` whose message names the broken rule.
``test_contract.py`` runs every case against every backend; the negative controls run
chosen cases against deliberately broken backends and match those messages, so keep
them stable. Each docstring names the checklist items it proves
(``shared/spec/storage-contract-checklist.md``); scenario cases are the 25 of §23.2.

Cases read through ordinary transactions, so a read never depends on the backend's
View; the View cases (and the dashboard reads' check that they answer inside one)
are the only ones that call ``view``.

One module per checklist area (identity and records, keys, events, scopes, lifecycle,
outcomes, transactions, views, checkpoints, scans, queries, the dashboard's series,
leases, timers, waits, kv);
helpers that several areas share live in ``_helpers``. ``CASES`` collects every
``case_`` function of those modules, keyed by its name without the prefix, in name
order.
"""

from __future__ import annotations

from types import ModuleType

from . import (
    checkpoints,
    events,
    identity,
    keys,
    kv,
    leases,
    lifecycle,
    outcomes,
    queries,
    records,
    scans,
    scopes,
    series,
    timers,
    transactions,
    views,
    waits,
)
from ._helpers import OUTCOME_FOR, Case, terminate

__all__ = ["CASES", "OUTCOME_FOR", "Case", "terminate"]

AREAS: tuple[ModuleType, ...] = (
    identity,
    records,
    keys,
    events,
    scopes,
    lifecycle,
    outcomes,
    transactions,
    views,
    checkpoints,
    scans,
    queries,
    series,
    leases,
    timers,
    waits,
    kv,
)


def _collect(areas: tuple[ModuleType, ...]) -> dict[str, Case]:
    """Every ``case_`` function defined in ``areas``, in name order; a name defined in
    two areas would silently shadow a case, so it is an error."""
    found: dict[str, Case] = {}
    for area in areas:
        for name, fn in vars(area).items():
            if not (name.startswith("case_") and callable(fn)):
                continue
            if getattr(fn, "__module__", None) != area.__name__:
                continue  # imported from another area, collected there
            if name in found:
                raise RuntimeError(f"contract case {name} is defined in two areas")
            found[name] = fn
    return {name.removeprefix("case_"): found[name] for name in sorted(found)}


CASES: dict[str, Case] = _collect(AREAS)
