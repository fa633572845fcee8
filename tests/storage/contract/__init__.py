"""The shared storage contract: one ``test_<section>.py`` module per section of the
contract (identity and records, keys, events, scopes, lifecycle, outcomes,
transactions, views, checkpoints, scans, queries, the dashboard's series, leases,
timers, waits, kv).

Each test is a plain ``test_<behaviour>(store, clock)`` function that drives a fresh,
empty store and fails with a plain ``assert`` whose message names the broken rule. The
``store`` fixture (``tests/storage/conftest.py``) runs it on every backend, so a
failure reads ``test_claim_rules[sqlite]`` and ``pytest contract/test_timers.py -k
sqlite`` runs one section on one backend; a test that restarts the store also takes the
``reopen`` fixture. The negative controls (``test_negative_controls.py``) call chosen
functions on deliberately broken backends and match their messages, so keep those
stable. Each docstring names the checklist items it proves
(``docs/spec/storage-contract-checklist.md``); scenario tests are the 25 of §23.2.

Tests read through ordinary transactions, so a read never depends on the backend's
View; the View tests (and the dashboard reads' check that they answer inside one) are
the only ones that call ``view``. Helpers that several sections share live in
``_helpers``.
"""

from ._helpers import OUTCOME_FOR, terminate

__all__ = ["OUTCOME_FOR", "terminate"]
