"""``RoutedStore``: the routed-run stores over a contract ``Store``.

Its face is ``transact(fn)`` (one contract transaction: serialisable, ``now`` from the
Guard) and ``view(fn)`` (one snapshot that never writes), each running ``fn`` over the
rules of ``storage.routed.rules`` (``RoutedRules``: the spec's DeploymentStore,
RunStore, WorkflowStore and CheckpointStore in snake_case) on the backend's rows; a
caller composes what it reads and writes in one of them, the way ``storage/ops``
works over a ``Tx``. The named operations that compose several rule calls live beside
their domain (``progress.load_resume_checkpoint``, ``anchoring.anchor_old_journals``,
the console's ``do_*`` actions). Reads return ``Stored`` (record and generation) for
every mutable record.

Opening checks the schema stamp of the routed-run data before anything else, in a
View (opening never writes, so reads work on a read-only database): an unknown or
newer one is ``UnknownSchemaVersion`` and nothing is written; a missing or older one
is stamped by the first write transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..api import Store
from ..errors import Invalid
from ..records import Guard, Nanos
from .clock import MonotonicAxis
from .codec import SCHEMA_VERSION
from .errors import UnknownSchemaVersion
from .migrate import MigrationRegistry, default_registry
from .rows import CachedRows, Rows
from .rules import RoutedRules
from .rules.deployments import Fault
from .rules.specs import META, SchemaStamp
from .tally import TalliedRows

T = TypeVar("T")


def rows_for(store: Store) -> Callable[[Any], Rows]:
    """The backend's rows for one of its transactions: the double's dicts or the
    ORM's tables. Chosen once per store, by its type."""
    from ..memory import MemoryStore

    if isinstance(store, MemoryStore):
        from .rows_memory import MemoryRows

        return MemoryRows
    from ..orm import OrmStore

    if isinstance(store, OrmStore):
        from .rows_orm import OrmRows

        return OrmRows
    raise Invalid(f"routed runs have no rows for {type(store).__name__}")


class RoutedStore:
    def __init__(
        self,
        store: Store,
        *,
        clock: Callable[[], Nanos] | None = None,
        monotonic: Callable[[], Nanos] | None = None,
        registry: MigrationRegistry | None = None,
        rules: type[RoutedRules] = RoutedRules,
        fault: Fault | None = None,
    ) -> None:
        self.store = store
        self._rows = rows_for(store)
        self._clock = clock
        self._axis = MonotonicAxis() if monotonic is None else MonotonicAxis(monotonic)
        self._registry = registry or default_registry()
        self._rules_class = rules
        self._fault = fault
        # Opening only reads (a View): a page that opens the store must work on a
        # read-only database. A missing or older stamp is written by the first write.
        self._stamped = self.view(self._check_stamp)

    def _rules(self, tx: Any) -> RoutedRules:
        # The tally above the cache: an update's previous row is the one the rule read.
        rows = TalliedRows(CachedRows(self._rows(tx)))
        rules = self._rules_class(rows, tx.now, self._registry, self._axis)
        if self._fault is not None:
            rules.fault = self._fault
        return rules

    def _check_stamp(self, rules: RoutedRules) -> bool:
        """True when the data is stamped with this code's version; False when it is
        unstamped (a fresh database) or stamped older with a known migration, for the
        first write to stamp; ``UnknownSchemaVersion`` when unknown or newer."""
        stamp = rules._read(META, "schema")
        if stamp is None:
            return False
        found = stamp.record.schema_version
        if found == SCHEMA_VERSION:
            return True
        if not self._registry.needs_migration(found):
            raise UnknownSchemaVersion(
                f"routed-run data is stamped {found!r}; this code reads {SCHEMA_VERSION}"
            )
        return False

    def _write_stamp(self, rules: RoutedRules) -> None:
        """Inside a write transaction: check the stamp again (another process may
        have written one since the open) and write ours if it is missing or older."""
        if self._check_stamp(rules):
            return
        stamp = rules._read(META, "schema")
        if stamp is None:
            rules._create(META, SchemaStamp())
        else:
            rules._replace(META, SchemaStamp(), stamp.generation)  # reads migrate each record

    def transact(self, callback: Callable[[RoutedRules], T]) -> T:
        """Run ``callback`` with the rules in one contract transaction."""
        stamped = self._stamped

        def run(tx: Any) -> T:
            rules = self._rules(tx)
            if not stamped:
                self._write_stamp(rules)
            return callback(rules)

        result = self.store.transact(Guard(clock=self._clock), run)
        self._stamped = True
        return result

    def view(self, callback: Callable[[RoutedRules], T]) -> T:
        """Run ``callback`` with the rules on one read-only snapshot."""
        viewer: Any = self.store
        return viewer.view(lambda tx: callback(self._rules(tx)))  # type: ignore[no-any-return]

    def rules_in(self, tx: Any) -> RoutedRules:
        """The rules over a transaction or View of this store that the caller already
        holds: the console reads a page's routed records in the same View as the
        contract's poll stamp, so both describe one snapshot."""
        return self._rules(tx)
