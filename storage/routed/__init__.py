"""Routed runs: the durable domain model of deployments, admission, workflows, runs,
attempts under leases, control and the time envelope, over the contract's
``transact``/``view`` (see ``storage/routed/README.md``).

Floors, bottom to top: ``errors``, ``ids``, ``enums``, ``codec``, ``records``,
``envelope``, ``transitions``, ``migrate`` (pure); ``rows`` (the row-access interface a
backend supplies); the rules written once over it; the backends' rows; ``store`` (the
typed stores over a contract ``Store``).
"""
