"""``RoutedStore``: the routed-run stores over a contract ``Store``.

Each method is one contract transaction (``transact``: serialisable, ``now`` from the
Guard) or one View (``view``: a snapshot that never writes), running the rules of
``storage.routed.rules`` on the backend's rows; ``transact``/``view`` compose several
operations in one. The methods are the spec's DeploymentStore, RunStore,
WorkflowStore and CheckpointStore in snake_case; reads return ``Stored`` (record and
generation) for every mutable record.

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
from .enums import AuthorityScope, DeploymentStatus
from .envelope import TimeEnvelope
from .errors import UnknownSchemaVersion
from .ids import (
    AttemptID,
    CheckpointID,
    ChildBatchID,
    DeploymentID,
    HandoffID,
    LeaseID,
    NodeID,
    RunID,
    WorkflowID,
)
from .migrate import MigrationRegistry, default_registry
from .records import (
    ActiveTimeLedger,
    AliasRecord,
    ArtifactMetadata,
    AttemptProgress,
    AttemptRecord,
    ChildBatch,
    ChildResult,
    ControlRequest,
    ControlResult,
    DeploymentRecord,
    DesiredState,
    HandoffEnvelope,
    InvocationReceipt,
    InvocationRequest,
    LedgerEntry,
    LimitAmendment,
    MCPServiceBinding,
    NodeStateTransition,
    PipelineNode,
    RestartProvenance,
    RunRecord,
    SemanticCheckpoint,
    Stored,
    WorkflowRecord,
)
from .rows import CachedRows, Rows
from .rules import (
    Admission,
    ControlOutcome,
    IdHit,
    RoutedRules,
    TransitionCommand,
    WorkflowPage,
    WorkflowQuery,
)
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

    # -- DeploymentStore -----------------------------------------------------------------
    def create_deployment(self, dep: DeploymentRecord) -> Stored[DeploymentRecord]:
        return self.transact(lambda r: r.create_deployment(dep))

    def get_deployment(self, deployment_id: DeploymentID) -> Stored[DeploymentRecord]:
        return self.view(lambda r: r.get_deployment(deployment_id))

    def list_deployments(self) -> list[Stored[DeploymentRecord]]:
        return self.view(lambda r: r.list_deployments())

    def set_deployment_status(
        self, deployment_id: DeploymentID, status: DeploymentStatus, expected_generation: int
    ) -> Stored[DeploymentRecord]:
        return self.transact(
            lambda r: r.set_deployment_status(deployment_id, status, expected_generation)
        )

    def compare_and_swap_alias(self, alias: AliasRecord) -> Stored[AliasRecord]:
        return self.transact(lambda r: r.compare_and_swap_alias(alias))

    def resolve_alias(self, alias: str) -> Stored[AliasRecord]:
        return self.view(lambda r: r.resolve_alias(alias))

    def list_aliases(self) -> list[Stored[AliasRecord]]:
        return self.view(lambda r: r.list_aliases())

    def admit_invocation(
        self, request: InvocationRequest, expected_deployment_generation: int
    ) -> Admission:
        return self.transact(lambda r: r.admit_invocation(request, expected_deployment_generation))

    def get_invocation_by_idempotency(self, caller: str, key: str) -> InvocationReceipt:
        return self.view(lambda r: r.get_invocation_by_idempotency(caller, key))

    def list_invocations(self) -> list[InvocationReceipt]:
        return self.view(lambda r: r.list_invocations())

    # -- RunStore ------------------------------------------------------------------------
    def create_run(self, run: RunRecord) -> Stored[RunRecord]:
        return self.transact(lambda r: r.create_run(run))

    def get_run(self, run_id: RunID) -> Stored[RunRecord]:
        return self.view(lambda r: r.get_run(run_id))

    def update_run(self, run: RunRecord, expected_generation: int) -> Stored[RunRecord]:
        return self.transact(lambda r: r.update_run(run, expected_generation))

    def list_runs(self, workflow_id: WorkflowID | None = None) -> list[Stored[RunRecord]]:
        return self.view(lambda r: r.list_runs(workflow_id))

    def create_attempt(self, attempt: AttemptRecord) -> Stored[AttemptRecord]:
        return self.transact(lambda r: r.create_attempt(attempt))

    def get_attempt(self, attempt_id: AttemptID) -> Stored[AttemptRecord]:
        return self.view(lambda r: r.get_attempt(attempt_id))

    def claim_attempt(
        self, attempt_id: AttemptID, expected_generation: int, duration_ms: int
    ) -> Stored[AttemptRecord]:
        return self.transact(
            lambda r: r.claim_attempt(attempt_id, expected_generation, duration_ms)
        )

    def renew_lease(
        self, attempt_id: AttemptID, lease_id: LeaseID, duration_ms: int
    ) -> Stored[AttemptRecord]:
        return self.transact(lambda r: r.renew_lease(attempt_id, lease_id, duration_ms))

    def update_attempt(
        self, attempt: AttemptRecord, expected_generation: int, lease_id: LeaseID | None
    ) -> Stored[AttemptRecord]:
        return self.transact(lambda r: r.update_attempt(attempt, expected_generation, lease_id))

    def list_attempts(self, run_id: RunID) -> list[Stored[AttemptRecord]]:
        return self.view(lambda r: r.list_attempts(run_id))

    def append_ledger(self, run_id: RunID, entry: str) -> LedgerEntry:
        return self.transact(lambda r: r.append_ledger(run_id, entry))

    def list_ledger(self, run_id: RunID) -> list[LedgerEntry]:
        return self.view(lambda r: r.list_ledger(run_id))

    def reconcile_interrupted(self, run_id: RunID) -> list[Stored[AttemptRecord]]:
        return self.transact(lambda r: r.reconcile_interrupted(run_id))

    def get_time_envelope(self, workflow_id: WorkflowID) -> Stored[TimeEnvelope]:
        return self.view(lambda r: r.get_time_envelope(workflow_id))

    def put_time_envelope(
        self, workflow_id: WorkflowID, env: TimeEnvelope, expected_generation: int
    ) -> Stored[TimeEnvelope]:
        return self.transact(lambda r: r.put_time_envelope(workflow_id, env, expected_generation))

    def get_active_time_ledger(self, workflow_id: WorkflowID) -> Stored[ActiveTimeLedger]:
        return self.view(lambda r: r.get_active_time_ledger(workflow_id))

    def put_active_time_ledger(
        self, workflow_id: WorkflowID, ledger: ActiveTimeLedger, expected_generation: int
    ) -> Stored[ActiveTimeLedger]:
        return self.transact(
            lambda r: r.put_active_time_ledger(workflow_id, ledger, expected_generation)
        )

    # -- CheckpointStore -----------------------------------------------------------------
    def save_checkpoint(self, cp: SemanticCheckpoint) -> SemanticCheckpoint:
        return self.transact(lambda r: r.save_checkpoint(cp))

    def get_checkpoint(self, checkpoint_id: CheckpointID) -> SemanticCheckpoint:
        return self.view(lambda r: r.get_checkpoint(checkpoint_id))

    def get_latest_checkpoint(self, attempt_id: AttemptID) -> SemanticCheckpoint:
        return self.view(lambda r: r.get_latest_checkpoint(attempt_id))

    # -- artifacts and progress (issue 17) --------------------------------------------------
    def accept_artifact(
        self, meta: ArtifactMetadata, lease_id: LeaseID | None = None
    ) -> Stored[ArtifactMetadata]:
        return self.transact(lambda r: r.accept_artifact(meta, lease_id))

    def list_artifacts(self, run_id: RunID) -> list[ArtifactMetadata]:
        return self.view(lambda r: r.list_artifacts(run_id))

    def save_attempt_progress(self, progress: AttemptProgress) -> AttemptProgress:
        return self.transact(lambda r: r.save_attempt_progress(progress))

    def get_attempt_progress(self, attempt_id: AttemptID) -> AttemptProgress:
        return self.view(lambda r: r.get_attempt_progress(attempt_id))

    def ingest_progress(
        self, progress: AttemptProgress, checkpoint: SemanticCheckpoint | None
    ) -> AttemptProgress:
        return self.transact(lambda r: r.ingest_progress(progress, checkpoint))

    def mark_progress_invalid(self, attempt_id: AttemptID, reason: str) -> AttemptProgress:
        return self.transact(lambda r: r.mark_progress_invalid(attempt_id, reason))

    # -- WorkflowStore -------------------------------------------------------------------
    def create_workflow(self, wf: WorkflowRecord) -> Stored[WorkflowRecord]:
        return self.transact(lambda r: r.create_workflow(wf))

    def get_workflow(self, workflow_id: WorkflowID) -> Stored[WorkflowRecord]:
        return self.view(lambda r: r.get_workflow(workflow_id))

    def update_workflow(
        self, wf: WorkflowRecord, expected_generation: int
    ) -> Stored[WorkflowRecord]:
        return self.transact(lambda r: r.update_workflow(wf, expected_generation))

    def list_workflows(self) -> list[Stored[WorkflowRecord]]:
        return self.view(lambda r: r.list_workflows())

    def page_workflows(
        self, query: WorkflowQuery, after: WorkflowID | None = None, limit: int = 50
    ) -> WorkflowPage:
        return self.view(lambda r: r.page_workflows(query, after, limit))

    def workflow_facets(self, query: WorkflowQuery) -> dict[str, dict[str, int]]:
        return self.view(lambda r: r.workflow_facets(query))

    def count_workflows(self, query: WorkflowQuery) -> int:
        return self.view(lambda r: r.count_workflows(query))

    def find_ids(self, text: str, limit: int = 20) -> list[IdHit]:
        return self.view(lambda r: r.find_ids(text, limit))

    def create_node(self, node: PipelineNode) -> Stored[PipelineNode]:
        return self.transact(lambda r: r.create_node(node))

    def get_node(self, node_id: NodeID) -> Stored[PipelineNode]:
        return self.view(lambda r: r.get_node(node_id))

    def update_node(self, node: PipelineNode, expected_generation: int) -> Stored[PipelineNode]:
        return self.transact(lambda r: r.update_node(node, expected_generation))

    def list_nodes(self, workflow_id: WorkflowID) -> list[Stored[PipelineNode]]:
        return self.view(lambda r: r.list_nodes(workflow_id))

    def list_node_transitions(self, node_id: NodeID) -> list[NodeStateTransition]:
        return self.view(lambda r: r.list_node_transitions(node_id))

    def register_service(self, svc: MCPServiceBinding) -> Stored[MCPServiceBinding]:
        return self.transact(lambda r: r.register_service(svc))

    def update_service(
        self, svc: MCPServiceBinding, expected_generation: int
    ) -> Stored[MCPServiceBinding]:
        return self.transact(lambda r: r.update_service(svc, expected_generation))

    def list_services(self, workflow_id: WorkflowID) -> list[Stored[MCPServiceBinding]]:
        return self.view(lambda r: r.list_services(workflow_id))

    def commit_handoff(self, handoff: HandoffEnvelope) -> HandoffEnvelope:
        return self.transact(lambda r: r.commit_handoff(handoff))

    def get_handoff(self, handoff_id: HandoffID) -> HandoffEnvelope:
        return self.view(lambda r: r.get_handoff(handoff_id))

    def list_handoffs(self, workflow_id: WorkflowID) -> list[HandoffEnvelope]:
        return self.view(lambda r: r.list_handoffs(workflow_id))

    def create_child_batch(self, batch: ChildBatch) -> Stored[ChildBatch]:
        return self.transact(lambda r: r.create_child_batch(batch))

    def update_child_batch(self, batch: ChildBatch, expected_generation: int) -> Stored[ChildBatch]:
        return self.transact(lambda r: r.update_child_batch(batch, expected_generation))

    def list_child_batches(self, workflow_id: WorkflowID) -> list[Stored[ChildBatch]]:
        return self.view(lambda r: r.list_child_batches(workflow_id))

    def commit_child_result(self, result: ChildResult) -> ChildResult:
        return self.transact(lambda r: r.commit_child_result(result))

    def list_child_results(self, child_batch_id: ChildBatchID) -> list[ChildResult]:
        return self.view(lambda r: r.list_child_results(child_batch_id))

    def request_control(self, req: ControlRequest) -> ControlOutcome:
        return self.transact(lambda r: r.request_control(req))

    def get_desired_state(self, workflow_id: WorkflowID) -> Stored[DesiredState]:
        return self.view(lambda r: r.get_desired_state(workflow_id))

    def append_control_result(self, req: ControlRequest, result: ControlResult) -> ControlResult:
        return self.transact(lambda r: r.append_control_result(req, result))

    def list_control_requests(self, workflow_id: WorkflowID) -> list[ControlRequest]:
        return self.view(lambda r: r.list_control_requests(workflow_id))

    def list_control_results(self, workflow_id: WorkflowID) -> list[ControlResult]:
        return self.view(lambda r: r.list_control_results(workflow_id))

    def get_restart_provenance(self, workflow_id: WorkflowID) -> RestartProvenance:
        return self.view(lambda r: r.get_restart_provenance(workflow_id))

    def append_limit_amendment(
        self,
        workflow_id: WorkflowID,
        expected_authority_generation: int,
        amendment: LimitAmendment,
        scope: AuthorityScope,
    ) -> LimitAmendment:
        return self.transact(
            lambda r: r.append_limit_amendment(
                workflow_id, expected_authority_generation, amendment, scope
            )
        )

    def list_limit_amendments(self, workflow_id: WorkflowID) -> list[LimitAmendment]:
        return self.view(lambda r: r.list_limit_amendments(workflow_id))

    def apply_transition(
        self,
        workflow_id: WorkflowID,
        expected_generation: int,
        command: TransitionCommand,
        idempotency_key: str,
    ) -> Stored[WorkflowRecord]:
        return self.transact(
            lambda r: r.apply_transition(workflow_id, expected_generation, command, idempotency_key)
        )
