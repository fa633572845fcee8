"""The composition root: the process's one store, run store and artifact store.

As ``django.core.files.storage.default_storage`` is for files, these build storage's
defaults from settings (the database aliases; ``ARTIFACT_DIR`` for artifacts;
``DATA_DIR`` for run-lock files on SQLite), once per process. The console, the
management commands, the simulated runtime and the benchmarks all import them from
here: the top floor of ``storage``, below every caller. Import once Django's apps are
loaded (``OrmStore`` needs the models).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from django.conf import settings

from .api import Store
from .artifacts import FileArtifactStore
from .errors import Invalid
from .memory import MemoryStore
from .ops.run_record_sessions import MemoryRunStore, OrmRunStore, RunStore
from .orm import OrmStore
from .records import Nanos
from .routed.store import RoutedStore

__all__ = [
    "default_artifacts",
    "default_routed_store",
    "default_run_store",
    "default_store",
    "reset_defaults",
    "run_store_for",
]


@cache
def default_store() -> OrmStore:
    """One OrmStore per process; it checks schema and record format on first use."""
    return OrmStore()


@cache
def default_run_store() -> RunStore:
    """Run records' Store/Session over the same database (ownership per run, see
    ``storage.ops.run_record_sessions``)."""
    return run_store_for(default_store())


@cache
def default_routed_store() -> RoutedStore:
    """Routed runs (``storage.routed``) over the same database; opening it checks the
    routed data's schema stamp."""
    return RoutedStore(default_store())


@cache
def default_artifacts() -> FileArtifactStore:
    return FileArtifactStore(settings.ARTIFACT_DIR)


def run_store_for(store: Store, *, clock: Callable[[], Nanos] | None = None) -> RunStore:
    """The run store over ``store``'s data: MemoryStore or OrmStore. ``clock`` is the
    saves' Guard clock (default: the store's)."""
    if isinstance(store, MemoryStore):
        return MemoryRunStore(store, clock=clock)
    if isinstance(store, OrmStore):
        return OrmRunStore(store, clock=clock)
    raise Invalid(f"no run store for {type(store).__name__}")


def reset_defaults() -> None:
    """Forget the cached stores (tests switch databases and artifact folders)."""
    default_run_store.cache_clear()
    default_routed_store.cache_clear()
    default_store.cache_clear()
    default_artifacts.cache_clear()
