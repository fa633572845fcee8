"""Every enum of the routed-run domain, with the spec's names and numbers.

Two kinds, as in the spec:

- ``CodedEnum``: Go ``int`` enums. Each member's value is the Go number and its name
  the upper-case name of the Go constant without its type prefix (``RunStatus.
  PAUSE_REQUESTED`` = 2). Stores write and compare the *name* (resolution 1: Run and
  Workflow number BudgetExceeded and Expired in opposite order, so numbers must never
  cross types); JSON carries the name. Decoding accepts the name or the Go number and
  refuses anything else (unknown names, unknown numbers, booleans, floats).
- ``TextEnum``: Go ``string`` enums. JSON carries the spec's string; nothing else is
  accepted.

Members of different enums never compare equal (plain ``Enum``, not ``IntEnum``).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Self

from .errors import InvalidArgument


class CodedEnum(Enum):
    def to_json(self) -> str:
        return self.name

    @classmethod
    def from_json(cls, value: Any) -> Self:
        if isinstance(value, str):
            member = cls.__members__.get(value)
            if member is not None:
                return member
        elif isinstance(value, int) and not isinstance(value, bool):
            try:
                return cls(value)
            except ValueError:
                pass
        raise InvalidArgument(f"{cls.__name__}: unknown value {value!r}")

    @classmethod
    def from_name(cls, name: str) -> Self:
        """A stored status name back to its member (stores keep names, not numbers)."""
        member = cls.__members__.get(name)
        if member is None:
            raise InvalidArgument(f"{cls.__name__}: unknown name {name!r}")
        return member


class TextEnum(Enum):
    def to_json(self) -> str:
        return str(self.value)

    @classmethod
    def from_json(cls, value: Any) -> Self:
        if isinstance(value, str):
            for member in cls:
                if member.value == value:
                    return member
        raise InvalidArgument(f"{cls.__name__}: unknown value {value!r}")

    @classmethod
    def from_name(cls, name: str) -> Self:
        return cls.from_json(name)


# -- statuses of the six resources (plus deployments) ------------------------------
class RunStatus(CodedEnum):
    PENDING = 0
    RUNNING = 1
    PAUSE_REQUESTED = 2
    PAUSED = 3
    NEEDS_REPLAN = 4
    SUCCEEDED = 5
    FAILED = 6
    CANCELLED = 7
    BUDGET_EXCEEDED = 8
    EXPIRED = 9


class AttemptStatus(CodedEnum):
    PENDING = 0
    RUNNING = 1
    NEEDS_REPLAN = 2
    SUCCEEDED = 3
    FAILED = 4
    FENCED = 5
    CANCELLED = 6


class WorkflowStatus(CodedEnum):
    PENDING = 0
    RUNNING = 1
    PAUSE_REQUESTED = 2
    PAUSED = 3
    NEEDS_REPLAN = 4
    SUCCEEDED = 5
    FAILED = 6
    CANCELLED = 7
    EXPIRED = 8
    BUDGET_EXCEEDED = 9


class NodeStatus(CodedEnum):
    PENDING = 0
    READY = 1
    LAUNCHING = 2
    RUNNING = 3
    PAUSE_REQUESTED = 4
    PAUSED = 5
    NEEDS_REPLAN = 6
    SUCCEEDED = 7
    FAILED = 8
    CANCELLED = 9
    SKIPPED = 10


class ServiceStatus(CodedEnum):
    DECLARED = 0
    STARTING = 1
    READY = 2
    UNHEALTHY = 3
    FENCED = 4
    STOPPING = 5
    STOPPED = 6
    FAILED = 7


class ChildBatchStatus(CodedEnum):
    INTENT = 0
    ALLOCATED = 1
    RUNNING = 2
    PAUSE_REQUESTED = 3
    PAUSED = 4
    JOINING = 5
    STOPPING = 6
    STOPPED = 7
    SUCCEEDED = 8
    FAILED = 9
    CANCELLED = 10


class DeploymentStatus(CodedEnum):
    ACTIVE = 0
    INACTIVE = 1


# -- failure classification --------------------------------------------------------
class FailureReason(CodedEnum):
    MODEL_TIMEOUT = 0
    MODEL_CONNECTION_FAILED = 1
    MODEL_RATE_LIMITED = 2
    MODEL_SERVICE_ERROR = 3
    MODEL_CONTEXT_LIMIT = 4
    MODEL_OUTPUT_LIMIT = 5
    MODEL_MALFORMED_JSON = 6
    MODEL_IDENTITY_MISMATCH = 7
    MODEL_AUTH_UNAVAILABLE = 8
    MODEL_QUOTA_EXHAUSTED = 9
    NO_ELIGIBLE_TARGET = 10
    ATTEMPT_TIME_EXHAUSTED = 11
    STALL_TIMEOUT = 12
    NO_PROGRESS_GUARDRAIL = 13
    REPEATED_ACTION_GUARDRAIL = 14
    LLM_BUDGET_EXHAUSTED = 15
    ACTIVE_TIME_EXHAUSTED = 16
    POLICY_DENIED = 17
    EXTERNAL_DEPENDENCY_FAILED = 18
    AGENT_EXCEPTION = 19
    CHECKPOINT_UNAVAILABLE = 20
    DAEMON_RESTARTED = 21
    USER_CANCELLED = 22
    MCP_SERVICE_UNAVAILABLE = 23
    MCP_PROTOCOL_ERROR = 24
    HANDOFF_MISSING = 25
    HANDOFF_INVALID = 26
    CHILD_SPAWN_DENIED = 27
    CHILD_BATCH_FAILED = 28
    WORKFLOW_RESOURCE_EXHAUSTED = 29
    PAUSE_BOUNDARY_UNAVAILABLE = 30


class FailureScope(CodedEnum):
    MODEL_CALL = 0
    WORKER = 1
    BUDGET = 2
    POLICY = 3
    CREDENTIAL = 4
    EXTERNAL = 5
    PLATFORM = 6
    WORKFLOW = 7
    MCP_SERVICE = 8
    HANDOFF = 9
    CHILD_BATCH = 10


class RecoveryDisposition(CodedEnum):
    NOT_NEEDED = 0
    AUTO_RECOVERED = 1
    NEEDS_REPLAN = 2
    TERMINAL = 3


class ResumeCapability(CodedEnum):
    SAFE_CHECKPOINT = 0
    RESTART_ONLY = 1
    NONE = 2


class AdmissionOutcome(CodedEnum):
    ACCEPTED = 0
    IDEMPOTENT_REPLAY = 1
    ALREADY_RUNNING = 2
    IDEMPOTENCY_CONFLICT = 3
    DEPLOYMENT_INACTIVE = 4


class ControlCommand(CodedEnum):
    CANCEL = 0
    PAUSE = 1
    RESUME = 2
    RESTART = 3
    CONTINUE = 4
    AMEND_LIMITS = 5


class TerminationReason(CodedEnum):
    """Lower numbers win when termination signals coincide (``resolve_termination``).
    ``UNKNOWN`` is the zero value and is never emitted for a real event."""

    UNKNOWN = 0
    USER_CANCEL = 1
    ACTIVE_TIME_EXHAUSTED = 2
    LEASE_EXPIRED = 3
    STALL = 4
    PROCESS_FAILURE = 5


class InvokeJobEventKind(CodedEnum):
    """Control-journal event kinds; stored by name, like every status."""

    UNSPECIFIED = 0
    ACCEPTED = 1  # durable admission committed, before the container starts
    STARTED = 2  # container started, before the handler runs
    PROGRESS_REF = 3  # a progress record: a heartbeat or a checkpoint
    SUCCEEDED = 4  # terminal: result committed
    FAILED = 5  # terminal: failure recorded
    CANCELLED = 6  # terminal: cancel precedence won


# -- string enums ------------------------------------------------------------------
class AuthorityScope(TextEnum):
    DEFAULT = "default"
    CONTROL = "runs:control"
    AMEND_LIMITS = "runs:amend_limits"


class DataClassification(TextEnum):
    PUBLIC = "public"
    INTERNAL = "internal"
    CONFIDENTIAL = "confidential"
    RESTRICTED = "restricted"

    @property
    def level(self) -> int:
        """public=0, internal=1, confidential=2, restricted=3."""
        return _LEVELS[self]


_LEVELS = {c: i for i, c in enumerate(DataClassification)}


def max_classification(a: DataClassification, b: DataClassification) -> DataClassification:
    """The more restrictive of ``a`` and ``b`` (Go ``MaxClassification``)."""
    return a if a.level >= b.level else b


class ResumeReason(TextEnum):
    FAILURE_CONTINUATION = "failure_continuation"
    OPERATOR_PAUSE_RESUME = "operator_pause_resume"


# Which scope each command needs (resolution 7); ``default`` may only read.
REQUIRED_SCOPE: dict[ControlCommand, AuthorityScope] = {
    ControlCommand.CANCEL: AuthorityScope.CONTROL,
    ControlCommand.PAUSE: AuthorityScope.CONTROL,
    ControlCommand.RESUME: AuthorityScope.CONTROL,
    ControlCommand.RESTART: AuthorityScope.CONTROL,
    ControlCommand.CONTINUE: AuthorityScope.CONTROL,
    ControlCommand.AMEND_LIMITS: AuthorityScope.AMEND_LIMITS,
}

ALL_ENUMS: tuple[type[CodedEnum] | type[TextEnum], ...] = (
    RunStatus,
    AttemptStatus,
    WorkflowStatus,
    NodeStatus,
    ServiceStatus,
    ChildBatchStatus,
    DeploymentStatus,
    FailureReason,
    FailureScope,
    RecoveryDisposition,
    ResumeCapability,
    AdmissionOutcome,
    ControlCommand,
    TerminationReason,
    InvokeJobEventKind,
    AuthorityScope,
    DataClassification,
    ResumeReason,
)
