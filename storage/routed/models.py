"""Tables of the routed runs in the ORM backend, ``conduit_routed_<name>``, one per
table of ``storage.routed.rows.TABLES``, all of one shape: the key, the record's
canonical JSON, its generation and the two indexed columns the rules select by.

``id`` orders rows by insertion (the lists' order). Declared in the ``storage`` app
(imported from ``storage.models``) so they share its migrations.
"""

from __future__ import annotations

from django.db import models


class RoutedRow(models.Model):
    id = models.BigAutoField(primary_key=True)
    key = models.CharField(max_length=255, unique=True)
    body = models.TextField()
    generation = models.BigIntegerField()
    parent = models.CharField(max_length=255)
    status = models.CharField(max_length=32)

    class Meta:
        abstract = True
        app_label = "storage"

    def __str__(self) -> str:
        return f"{type(self).__name__}({self.key})"


class RoutedMetaRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_meta"
        indexes = [models.Index(fields=["parent", "status"], name="rt_meta_p")]


class RoutedDeploymentRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_deployment"
        indexes = [models.Index(fields=["parent", "status"], name="rt_deployment_p")]


class RoutedAliasRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_alias"
        indexes = [models.Index(fields=["parent", "status"], name="rt_alias_p")]


class RoutedInvocationRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_invocation"
        indexes = [models.Index(fields=["parent", "status"], name="rt_invocation_p")]


class RoutedInvocationRequestRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_invocation_request"
        indexes = [models.Index(fields=["parent", "status"], name="rt_invocation_request_p")]


class RoutedIdempotencyRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_idempotency"
        indexes = [models.Index(fields=["parent", "status"], name="rt_idempotency_p")]


class RoutedWorkflowRow(RoutedRow):
    # The Workflows list's facets (``rows.FACET_TABLES``): kind and terminal reason
    # beside deployment (parent) and status, each indexed with the list's order (id,
    # newest first) so a filtered page is one index range.
    kind = models.CharField(max_length=64, default="")
    reason = models.CharField(max_length=64, default="")

    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_workflow"
        indexes = [
            models.Index(fields=["parent", "status"], name="rt_workflow_p"),
            models.Index(fields=["status", "id"], name="rt_workflow_status"),
            models.Index(fields=["kind", "id"], name="rt_workflow_kind"),
            models.Index(fields=["reason", "id"], name="rt_workflow_reason"),
            models.Index(fields=["parent", "id"], name="rt_workflow_dep"),
            # Covering the facets' grouped counts under a status or a reason condition
            # (index only: a count never reads the JSON rows).
            models.Index(fields=["status", "reason", "kind", "parent"], name="rt_workflow_sfacets"),
            models.Index(fields=["reason", "status", "kind", "parent"], name="rt_workflow_rfacets"),
        ]


class RoutedWorkflowTallyRow(models.Model):
    """The workflow tally (``storage.routed.tally``): the count of workflows per
    combination of their four facet columns, kept by the rules beside the workflow
    rows. Not a table of ``rows.TABLES``: it holds counts, not records."""

    id = models.BigAutoField(primary_key=True)
    parent = models.CharField(max_length=255)
    status = models.CharField(max_length=32)
    kind = models.CharField(max_length=64)
    reason = models.CharField(max_length=64)
    n = models.BigIntegerField()

    class Meta:
        app_label = "storage"
        db_table = "conduit_routed_workflow_tally"
        constraints = [
            models.UniqueConstraint(
                fields=["parent", "status", "kind", "reason"], name="rt_workflow_tally_key"
            )
        ]

    def __str__(self) -> str:
        return f"RoutedWorkflowTallyRow({self.parent}, {self.status}, {self.kind}, {self.reason})"


class RoutedNodeRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_node"
        indexes = [models.Index(fields=["parent", "status"], name="rt_node_p")]


class RoutedNodeTransitionRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_node_transition"
        indexes = [models.Index(fields=["parent", "status"], name="rt_node_transition_p")]


class RoutedRunRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_run"
        indexes = [models.Index(fields=["parent", "status"], name="rt_run_p")]


class RoutedAttemptRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_attempt"
        # status alone: the dashboard's expired-lease tile reads the running attempts.
        indexes = [
            models.Index(fields=["parent", "status"], name="rt_attempt_p"),
            models.Index(fields=["status"], name="rt_attempt_status"),
        ]


class RoutedRunLedgerRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_run_ledger"
        indexes = [models.Index(fields=["parent", "status"], name="rt_run_ledger_p")]


class RoutedServiceRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_service"
        indexes = [models.Index(fields=["parent", "status"], name="rt_service_p")]


class RoutedHandoffRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_handoff"
        indexes = [models.Index(fields=["parent", "status"], name="rt_handoff_p")]


class RoutedChildBatchRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_child_batch"
        indexes = [models.Index(fields=["parent", "status"], name="rt_child_batch_p")]


class RoutedChildResultRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_child_result"
        indexes = [models.Index(fields=["parent", "status"], name="rt_child_result_p")]


class RoutedControlRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_control"
        indexes = [models.Index(fields=["parent", "status"], name="rt_control_p")]


class RoutedControlResultRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_control_result"
        indexes = [models.Index(fields=["parent", "status"], name="rt_control_result_p")]


class RoutedDesiredStateRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_desired_state"
        indexes = [models.Index(fields=["parent", "status"], name="rt_desired_state_p")]


class RoutedAmendmentRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_amendment"
        indexes = [models.Index(fields=["parent", "status"], name="rt_amendment_p")]


class RoutedEnvelopeRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_envelope"
        indexes = [models.Index(fields=["parent", "status"], name="rt_envelope_p")]


class RoutedTimeLedgerRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_time_ledger"
        indexes = [models.Index(fields=["parent", "status"], name="rt_time_ledger_p")]


class RoutedCheckpointRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_checkpoint"
        indexes = [models.Index(fields=["parent", "status"], name="rt_checkpoint_p")]


class RoutedRestartRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_restart"
        indexes = [models.Index(fields=["parent", "status"], name="rt_restart_p")]


class RoutedTransitionRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_transition"
        indexes = [models.Index(fields=["parent", "status"], name="rt_transition_p")]


class RoutedArtifactRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_artifact"
        indexes = [models.Index(fields=["parent", "status"], name="rt_artifact_p")]


class RoutedProgressRow(RoutedRow):
    class Meta(RoutedRow.Meta):
        db_table = "conduit_routed_progress"
        indexes = [models.Index(fields=["parent", "status"], name="rt_progress_p")]


MODELS: dict[str, type[RoutedRow]] = {
    "meta": RoutedMetaRow,
    "deployment": RoutedDeploymentRow,
    "alias": RoutedAliasRow,
    "invocation": RoutedInvocationRow,
    "invocation_request": RoutedInvocationRequestRow,
    "idempotency": RoutedIdempotencyRow,
    "workflow": RoutedWorkflowRow,
    "node": RoutedNodeRow,
    "node_transition": RoutedNodeTransitionRow,
    "run": RoutedRunRow,
    "attempt": RoutedAttemptRow,
    "run_ledger": RoutedRunLedgerRow,
    "service": RoutedServiceRow,
    "handoff": RoutedHandoffRow,
    "child_batch": RoutedChildBatchRow,
    "child_result": RoutedChildResultRow,
    "control": RoutedControlRow,
    "control_result": RoutedControlResultRow,
    "desired_state": RoutedDesiredStateRow,
    "amendment": RoutedAmendmentRow,
    "envelope": RoutedEnvelopeRow,
    "time_ledger": RoutedTimeLedgerRow,
    "checkpoint": RoutedCheckpointRow,
    "restart": RoutedRestartRow,
    "transition": RoutedTransitionRow,
    "artifact": RoutedArtifactRow,
    "progress": RoutedProgressRow,
}
