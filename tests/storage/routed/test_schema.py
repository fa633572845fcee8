"""Schema versions on every backend: a record or database stamped with an unknown or
newer version is refused before any write, and the stored bytes stay as they were."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from storage.errors import Corrupt
from storage.routed.enums import ControlCommand, RunStatus
from storage.routed.errors import UnknownSchemaVersion
from storage.routed.migrate import Migration, MigrationRegistry
from storage.routed.rows import Row
from storage.routed.store import RoutedStore

from .support import admit, control, send
from .support import snapshot as bodies


def _stamp(routed: RoutedStore, table: str, key: str, version: str) -> None:
    def write(rules: Any) -> None:
        row = rules.rows.get(table, key)
        data = json.loads(row.body)
        data["schema_version"] = version
        data["from_the_future"] = True
        rules.rows.update(
            table,
            Row(row.key, json.dumps(data), row.generation, row.parent, row.status),
            row.generation,
        )

    routed.transact(write)


@pytest.mark.parametrize("version", ["0.4.0", "1.0.0", "0.2.0"])
def test_a_record_of_an_unknown_version_is_refused_and_left_untouched(
    routed: RoutedStore, version: str
) -> None:
    admission = admit(routed)
    run_id = admission.receipt.run_id
    _stamp(routed, "run", run_id, version)
    before = bodies(routed)
    with pytest.raises(UnknownSchemaVersion):
        routed.view(lambda r: r.get_run(run_id))
    with pytest.raises(UnknownSchemaVersion):  # a write reads the row first: refused
        send(routed, control(routed, admission.receipt.workflow_id, ControlCommand.CANCEL))
    assert bodies(routed) == before


def test_a_database_stamped_newer_is_refused_at_open(store: Any) -> None:
    routed = RoutedStore(store)
    admit(routed)
    _stamp(routed, "meta", "schema", "0.9.0")
    before = bodies(routed)
    with pytest.raises(UnknownSchemaVersion):
        RoutedStore(store)
    assert bodies(routed) == before


def test_an_older_stamp_that_the_registry_knows_is_migrated_on_read(store: Any) -> None:
    def forward(state: bytes) -> bytes:
        data = json.loads(state)
        if data.get("schema_version") == "0.2.0":
            data["schema_version"] = "0.3.0"
            data.pop("from_the_future", None)
        return json.dumps(data).encode()

    registry = MigrationRegistry("0.3.0", [Migration("0.2.0", "0.3.0", forward)])
    routed = RoutedStore(store, registry=registry)
    admission = admit(routed)
    _stamp(routed, "run", admission.receipt.run_id, "0.2.0")
    assert (
        routed.view(lambda r: r.get_run(admission.receipt.run_id)).record.status
        is RunStatus.PENDING
    )
    with pytest.raises(UnknownSchemaVersion):  # the default registry knows no 0.2.0
        RoutedStore(store).view(lambda r: r.get_run(admission.receipt.run_id))


def test_stored_bytes_that_are_not_a_record_are_corrupt(routed: RoutedStore) -> None:
    admission = admit(routed)

    def garble(rules: Any) -> None:
        row = rules.rows.get("run", admission.receipt.run_id)
        rules.rows.update("run", dataclasses.replace(row, body="{not json"), row.generation)

    routed.transact(garble)
    with pytest.raises(Corrupt):
        routed.view(lambda r: r.get_run(admission.receipt.run_id))
