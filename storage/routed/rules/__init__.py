"""The routed-run rules, written once over ``storage.routed.rows.Rows`` and run by
every backend: ``RoutedRules`` is all of them in one class (deployments and
admission, runs and attempts, workflows, control, limits)."""

from .control import ControlOutcome, TransitionCommand
from .deployments import Admission, input_digest, intent_digest
from .limits import RoutedRules
from .listing import IdHit, WorkflowPage, WorkflowQuery
from .runs import checkpoint_digest

__all__ = [
    "Admission",
    "ControlOutcome",
    "IdHit",
    "RoutedRules",
    "TransitionCommand",
    "WorkflowPage",
    "WorkflowQuery",
    "checkpoint_digest",
    "input_digest",
    "intent_digest",
]
