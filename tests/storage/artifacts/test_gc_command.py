"""``manage.py artifacts_gc`` on the real database and artifact folder: referenced and
young content stays, old orphans go."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from pytest_django import Settings as SettingsWrapper

from storage import Execution, Guard, Tx, Work
from storage.artifacts import FileArtifactStore
from storage.orm import OrmStore

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "view"])


def publish(store: FileArtifactStore, body: bytes) -> str:
    with store.create("text/plain") as writer:
        writer.write(body)
        return writer.commit().id


def test_it_deletes_only_old_unreferenced_content(
    tmp_path: Path, settings: SettingsWrapper
) -> None:
    settings.ARTIFACT_DIR = tmp_path
    old = [0]
    artifacts = FileArtifactStore(tmp_path, clock=lambda: old[0])
    kept_ref = artifacts.stat(publish(artifacts, b"attached log"))
    orphan = publish(artifacts, b"never attached")
    young_store = FileArtifactStore(tmp_path)  # wall clock: committed just now
    young = publish(young_store, b"attachment on its way")

    def attach(tx: Tx) -> None:
        tx.put_work(Work(id="w1", kind="test.gc"))
        x = tx.put_execution(Execution(id="x1", work_id="w1", attempt=1))
        tx.put_execution(replace(x, artifacts=(kept_ref,)))

    OrmStore().transact(Guard(), attach)
    out = io.StringIO()
    call_command("artifacts_gc", "--older-than", "1h", stdout=out)

    assert f"deleted {orphan}" in out.getvalue()
    assert not young_store.exists(orphan)
    assert young_store.exists(kept_ref.id), "referenced content was collected"
    assert young_store.exists(young), "young content was collected"
    assert "kept 1 referenced, 1 young" in out.getvalue()


def test_it_refuses_a_malformed_age() -> None:
    with pytest.raises(CommandError, match="not a duration"):
        call_command("artifacts_gc", "--older-than", "soon")
