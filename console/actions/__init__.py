"""Operator actions: named ``do_*`` functions that the console's views, the management
commands and the tests all call (zulip's ``zerver/actions/``).

- ``common``: what every action request shares: the form's idempotency token, the
  reason and its text rules, the result message's wording.
- ``work``: cancel and retry of Work, one or in bulk, as manual Events
  (``storage.ops.manual``'s record-then-apply recipe).
- ``routed``: routed-run actions (workflow control, limit amendments, deployment
  status, alias repoints, bulk control), each one ``RoutedStore.transact`` with its
  audit note inside it.

Who may call them is ``console.access``'s: one permission per action.
"""
