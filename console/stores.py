"""The process-wide store and artifact store used by the console, the management
commands and the simulated runtime."""

from __future__ import annotations

from functools import cache

from django.conf import settings

from storage.artifacts import FileArtifactStore
from storage.orm import OrmStore
from storage.runs import RunStore, run_store_for


@cache
def get_store() -> OrmStore:
    """One OrmStore per process; it checks schema and record format on first use."""
    return OrmStore()


@cache
def get_run_store() -> RunStore:
    """Run records' Store/Session over the same database (ownership per run, see
    ``storage.runs.store``); the console only asks it ``owned``."""
    return run_store_for(get_store())


@cache
def get_artifacts() -> FileArtifactStore:
    return FileArtifactStore(settings.ARTIFACT_DIR)


def reset() -> None:
    """Forget the cached stores (tests switch databases and artifact folders)."""
    get_run_store.cache_clear()
    get_store.cache_clear()
    get_artifacts.cache_clear()
