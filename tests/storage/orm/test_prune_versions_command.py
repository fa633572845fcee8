"""``manage.py prune_versions`` on the real database: rows older than the retention go,
a batch per transaction, the horizon follows, and younger history stays whole."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from pytest_django import Settings as SettingsWrapper

from storage import PRUNE_BATCH, Guard, RecordAt, Tx, wall_clock
from storage.orm import OrmStore

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])

DAY = 86_400 * 10**9


def test_it_deletes_what_is_older_than_the_retention_in_batches(
    settings: SettingsWrapper,
) -> None:
    settings.STORAGE_VERSION_RETENTION_DAYS = 30
    now = wall_clock()
    store = OrmStore(clock=lambda: now - 40 * DAY)

    def fill(t: Tx) -> None:
        for n in range(PRUNE_BATCH + 7):  # more than one transaction's batch
            t.kv_put("old", f"k{n}", b"x")

    store.transact(Guard(), fill)
    store.transact(Guard(), lambda t: t.kv_put("old", "k0", b"y"))
    old = store.view(lambda t: t.store_version())
    store.transact(Guard(clock=lambda: now - DAY), lambda t: t.kv_put("old", "k0", b"z"))

    out = io.StringIO()
    call_command("prune_versions", stdout=out)

    assert out.getvalue().startswith(f"{PRUNE_BATCH + 8} version log rows deleted"), out.getvalue()
    assert f"from store version {old} on" in out.getvalue()
    assert store.view(lambda t: t.version_horizon()) == old
    kept = store.view(lambda t: t.version_changes())
    assert [(r.id, r.key, r.before) for r in kept] == [("old", "k0", b"y")]
    assert store.view(lambda t: t.record_as_of("kv", "old", old, "k0")) == RecordAt(b"y")
    assert store.view(lambda t: t.record_as_of("kv", "old", old - 1, "k0")).known is False

    again = io.StringIO()
    call_command("prune_versions", "--older-than", "12h", stdout=again)
    assert again.getvalue().startswith("1 version log rows deleted"), again.getvalue()
    assert store.view(lambda t: t.version_changes()) == []
