"""Read-only model handles for Django tooling that needs a model class, not a Store.

Everything else reads through ``storage.view`` and writes through ``Store.transact``;
``storage.models`` stays private to the ORM backend. A few tools cannot take a Store:
Django's admin changelist wants a model. ``work_table()`` hands such a tool the Work
table's model, under a contract the tool must keep: **read only**. A write through it
would bypass everything ``transact`` keeps right (revisions, the store clock, the
rules of the contract, the write-behind cache); its ``data`` column is the record's
encoding (``storage.codec``), its other columns the indexed copies of its fields. The
one user today is the benchmark's baseline admin (``bench/admin_site.py``).
"""

from __future__ import annotations

from django.db import models


def work_table() -> type[models.Model]:
    """The Work table's model, to read (list, filter, count) and never to write.
    Import-safe before Django's apps are loaded; call it once they are."""
    from .models import WorkRow

    return WorkRow
