"""Deployments, aliases and admission (the spec's DeploymentStore), over ``Rows``."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass

from ..codec import canonical_digest, check_record, marshal_canonical
from ..enums import AdmissionOutcome, DeploymentStatus
from ..errors import (
    AlreadyRunning,
    CASConflict,
    DeploymentInactive,
    IdempotencyConflict,
    InvalidArgument,
    RoutedNotFound,
)
from ..ids import DeploymentID, InvocationID, RunID, WorkflowID, check_id
from ..records import (
    AliasRecord,
    DeploymentRecord,
    DurableIdempotencyRecord,
    InvocationReceipt,
    InvocationRequest,
    Stored,
)
from ..rows import RowFilter
from ..transitions import WORKFLOW_TRANSITIONS
from .base import check_payload, check_text
from .shapes import AdmissionShapes, Fault

__all__ = ["Admission", "DeploymentRules", "Fault"]
from .specs import (
    ALIAS,
    DEPLOYMENT,
    IDEMPOTENCY,
    INVOCATION,
    INVOCATION_REQUEST,
    WORKFLOW,
    RequestRow,
    idempotency_key,
)
from .topology import topology_of

# Workflows that still hold a top-level run: every status with an outgoing transition.
LIVE_WORKFLOW = tuple(sorted(s.name for s, nxt in WORKFLOW_TRANSITIONS.items() if nxt))


def input_digest(input_json: str) -> str:
    """The canonical digest of an invocation's input: SHA-256 of its canonical JSON."""
    try:
        parsed = json.loads(input_json)
    except ValueError as exc:
        raise InvalidArgument(f"input_json is not JSON ({exc})") from exc
    return hashlib.sha256(marshal_canonical(parsed)).hexdigest()


def intent_digest(request: InvocationRequest) -> str:
    """Canonical digest over the deployment reference, input, initial ceilings and
    creation options: what makes two requests with one key the same intent."""
    return canonical_digest(
        {
            "requested_deployment_ref": request.requested_deployment_ref,
            "input_digest": request.input_digest,
            "initial_max_active_duration_ms": request.initial_max_active_duration_ms,
            "initial_attempt_lease_ms": request.initial_attempt_lease_ms,
            "initial_max_cost_usd_decimal": request.initial_max_cost_usd_decimal,
            "creation_options_digest": request.creation_options_digest,
        }
    )


@dataclass(frozen=True)
class Admission:
    """An admitted (ACCEPTED) or replayed (IDEMPOTENT_REPLAY) invocation. The other
    three outcomes are errors naming theirs in ``outcome_name``: nothing was created."""

    outcome: AdmissionOutcome
    receipt: InvocationReceipt


class DeploymentRules(AdmissionShapes):
    # -- deployments -------------------------------------------------------------------
    def create_deployment(self, dep: DeploymentRecord) -> Stored[DeploymentRecord]:
        check_record(dep)
        check_text("package_name", dep.package_name)
        check_text("package_version", dep.package_version)
        if dep.max_concurrent_runs < 0:
            raise InvalidArgument("max_concurrent_runs must be >= 0 (0: no limit)")
        topology_of(dep.nested_package_digests, (dep.package_name, dep.package_version))
        active = dep.status is DeploymentStatus.ACTIVE
        return self._create(
            DEPLOYMENT,
            dataclasses.replace(
                dep,
                created_at=self.now,
                activated_at=self.now if active else None,
                deactivated_at=None if active else self.now,
            ),
        )

    def get_deployment(self, deployment_id: DeploymentID) -> Stored[DeploymentRecord]:
        return self._require(DEPLOYMENT, deployment_id)

    def list_deployments(self) -> list[Stored[DeploymentRecord]]:
        return self._list(DEPLOYMENT)

    def set_deployment_status(
        self, deployment_id: DeploymentID, status: DeploymentStatus, expected_generation: int
    ) -> Stored[DeploymentRecord]:
        check_id(DeploymentID, deployment_id)
        if not isinstance(status, DeploymentStatus):
            raise InvalidArgument(f"not a DeploymentStatus: {status!r}")
        current = self.get_deployment(deployment_id).record
        record = dataclasses.replace(current, status=status)
        if status is not current.status and status is DeploymentStatus.ACTIVE:
            record = dataclasses.replace(record, activated_at=self.now)
        elif status is not current.status:
            record = dataclasses.replace(record, deactivated_at=self.now)
        return self._replace(DEPLOYMENT, record, expected_generation)

    # -- aliases -----------------------------------------------------------------------
    def compare_and_swap_alias(self, alias: AliasRecord) -> Stored[AliasRecord]:
        """``alias.generation`` is the expected one: 0 creates the alias and fails if it
        exists (resolution 4); otherwise it must be the stored generation."""
        check_text("alias", alias.alias)
        if alias.alias.startswith(DeploymentID.prefix):
            raise InvalidArgument(f"alias {alias.alias!r} would read as a deployment ID")
        check_record(alias)
        target = self.get_deployment(alias.target_deployment_id).record
        if alias.target_version != target.package_version:
            raise InvalidArgument(
                f"alias target version {alias.target_version!r} is not deployment "
                f"{target.deployment_id}'s {target.package_version!r}"
            )
        record = dataclasses.replace(alias, updated_at=self.now)
        if alias.generation == 0:
            if self._read(ALIAS, alias.alias) is not None:
                raise CASConflict(f"alias {alias.alias!r} exists (generation 0 creates)")
            return self._create(ALIAS, record)
        return self._replace(ALIAS, record, alias.generation)

    def resolve_alias(self, alias: str) -> Stored[AliasRecord]:
        return self._require(ALIAS, alias)

    def list_aliases(self) -> list[Stored[AliasRecord]]:
        return self._list(ALIAS)

    # -- admission -----------------------------------------------------------------------
    def get_invocation_by_idempotency(
        self, caller_identity: str, idempotency_key_: str
    ) -> InvocationReceipt:
        found = self._find_idempotent(caller_identity, idempotency_key_)
        if found is None:
            raise RoutedNotFound(
                f"no invocation for key {idempotency_key_!r} of {caller_identity!r}"
            )
        return self._require(INVOCATION, found.invocation_id).record

    def get_invocation(self, invocation_id: InvocationID) -> InvocationReceipt:
        return self._require(INVOCATION, invocation_id).record

    def list_invocations(self) -> list[InvocationReceipt]:
        return [s.record for s in self._list(INVOCATION)]

    def _find_idempotent(self, caller: str, key: str) -> DurableIdempotencyRecord | None:
        found = self._read(IDEMPOTENCY, idempotency_key(caller, key))
        return None if found is None else found.record

    def _check_request(self, request: InvocationRequest) -> str:
        check_record(request)
        check_text("idempotency_key", request.idempotency_key)
        check_text("caller_identity", request.caller_identity)
        check_text("requested_deployment_ref", request.requested_deployment_ref)
        check_payload("input_json", request.input_json)
        if request.input_digest != input_digest(request.input_json):
            raise InvalidArgument("input_digest is not the canonical digest of input_json")
        if request.initial_max_active_duration_ms <= 0 or request.initial_attempt_lease_ms <= 0:
            raise InvalidArgument("initial active duration and attempt lease must be positive")
        return intent_digest(request)

    def _resolve(self, ref: str) -> DeploymentRecord:
        if ref.startswith(DeploymentID.prefix):
            return self.get_deployment(DeploymentID.parse(ref)).record
        target = self.resolve_alias(ref).record.target_deployment_id
        return self.get_deployment(target).record

    def admit_invocation(
        self, request: InvocationRequest, expected_deployment_generation: int
    ) -> Admission:
        """The one atomic admission (resolution 6). Raises ``IdempotencyConflict``,
        ``CASConflict``, ``DeploymentInactive`` or ``AlreadyRunning`` with nothing
        created; the caller's transaction rolls back any step already taken."""
        digest = self._check_request(request)
        prior = self._find_idempotent(request.caller_identity, request.idempotency_key)
        if prior is not None:
            if prior.invocation_intent_digest != digest:
                raise IdempotencyConflict(
                    f"key {request.idempotency_key!r} was admitted with another intent"
                )
            receipt = self._require(INVOCATION, prior.invocation_id).record
            return Admission(AdmissionOutcome.IDEMPOTENT_REPLAY, receipt)
        dep = self._resolve(request.requested_deployment_ref)
        if dep.generation != expected_deployment_generation:
            raise CASConflict(
                f"deployment {dep.deployment_id} is at generation {dep.generation}, "
                f"not {expected_deployment_generation}"
            )
        self.check_admissible(dep)
        receipt = self._admit(request, digest, dep)
        return Admission(AdmissionOutcome.ACCEPTED, receipt)

    def check_admissible(self, dep: DeploymentRecord) -> None:
        """Active, and under ``max_concurrent_runs`` live top-level runs (0: no limit)."""
        if dep.status is not DeploymentStatus.ACTIVE:
            raise DeploymentInactive(f"deployment {dep.deployment_id}")
        if not dep.max_concurrent_runs:
            return  # no limit: nothing to count
        # The live workflows from the workflow tally (a few rows per deployment, however
        # many workflows it has), which is exact here for two reasons. It moves with
        # every workflow row write, in that write's transaction (``tally.TalliedRows``),
        # so it counts this transaction's own earlier writes (a restart's cancel, an
        # earlier admission composed in the same ``transact``). And no other writer can
        # commit between this read and this transaction's commit: the routed store
        # writes in the contract's ``transact``, whose writers are serialised (SQLite's
        # BEGIN IMMEDIATE; PostgreSQL's writers' advisory lock, taken before BEGIN, so
        # the SERIALIZABLE snapshot sees every earlier commit). Were that lock ever
        # dropped, SERIALIZABLE would still refuse one of two racing admissions of the
        # same deployment: both read and upsert the same tally row (a serialization
        # failure, ``Conflict``), so the limit is never exceeded, only retried.
        where = RowFilter(parents=(dep.deployment_id,), statuses=LIVE_WORKFLOW)
        [by_deployment] = self.rows.counted(WORKFLOW.table, [("parent", where)])
        live = by_deployment.get(dep.deployment_id, 0)
        if live >= dep.max_concurrent_runs:
            raise AlreadyRunning(
                f"deployment {dep.deployment_id} has {live} live runs of {dep.max_concurrent_runs}"
            )

    def _admit(
        self, request: InvocationRequest, digest: str, dep: DeploymentRecord
    ) -> InvocationReceipt:
        """Receipt, idempotency record, workflow, first node, run, envelope and the
        READY launch intent, in one transaction."""
        receipt = InvocationReceipt(
            invocation_id=InvocationID.new(),
            workflow_id=WorkflowID.new(),
            run_id=RunID.new(),
            resolved_deployment_id=dep.deployment_id,
            resolved_deployment_version=dep.package_version,
            resolved_deployment_digest=dep.bundle_digest,
            requested_deployment_ref=request.requested_deployment_ref,
            invocation_intent_digest=digest,
            caller_identity=request.caller_identity,
            initial_max_active_duration_ms=request.initial_max_active_duration_ms,
            initial_attempt_lease_ms=request.initial_attempt_lease_ms,
            initial_max_cost_usd_decimal=request.initial_max_cost_usd_decimal,
            admitted_at=self.now,
            # A snapshot: later changes to the deployment's map do not reach it.
            nested_package_digests=dict(dep.nested_package_digests),
        )
        self._create(INVOCATION, receipt)
        self._create(INVOCATION_REQUEST, RequestRow(receipt.invocation_id, request))
        self.fault("receipt")
        self._create(
            IDEMPOTENCY,
            DurableIdempotencyRecord(
                invocation_id=receipt.invocation_id,
                caller_identity=request.caller_identity,
                idempotency_key=request.idempotency_key,
                invocation_intent_digest=digest,
                outcome=AdmissionOutcome.ACCEPTED,
                created_at=self.now,
            ),
        )
        self.fault("idempotency")
        self.start_workflow(receipt, dep)
        return receipt
