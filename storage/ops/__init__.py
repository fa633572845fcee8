"""Named operations above the Store, each a recipe of the contract written once.

- ``control``: cancel and operator retry of Work, and why either is refused.
- ``manual``: operators' manual Events, recorded (tx 1), applied (tx 2), recovered.
- ``backfill``: the startup backfills of metadata older records lack.
- ``run_record_sessions``: run ownership, ``RunStore.acquire`` -> ``Session``, over the
  engine's locks in ``run_record_locks``.

They take a ``Tx`` or a ``Store`` and import only the floors below (contract, rules,
backends); ``storage.default`` builds the stores they run on.
"""
