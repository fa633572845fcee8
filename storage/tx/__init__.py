"""The contract's rules, written once over a small persistence interface.

``BaseTx`` implements every ``Tx`` operation: validation, lifecycle tables, revisions,
ownership, fencing, timers, waits, KV, run records and dashboard reads. It is composed
from one class per section of the contract (``events``, ``work``, ``executions``,
``scopes``, ``timers``, ``waits``, ``kv``, ``runs``, ``dashboard``, ``lookup``,
``versions``) over the plumbing
in ``base`` and the row hooks in ``rows``. Backends subclass ``BaseTx`` and supply only
the hooks of ``rows.ContractRows``. Each operation checks everything before its first write, so
an operation that raises has no effect even when the callback swallows the error
(checklist T-10).
"""

from .base import TxScope, check_admission
from .dashboard import DashboardRules
from .events import EventRules
from .executions import ExecutionRules
from .kv import KvRules
from .lookup import LookupRules
from .run_records import RunRecordRules
from .scopes import ScopeRules
from .timers import TimerRules
from .versions import VersionRules
from .waits import WaitRules
from .work import WorkRules


class BaseTx(
    WaitRules,
    TimerRules,
    ScopeRules,
    ExecutionRules,
    WorkRules,
    EventRules,
    KvRules,
    RunRecordRules,
    DashboardRules,
    LookupRules,
    VersionRules,
):
    """Every ``Tx`` operation; a backend subclasses it and implements ``rows.ContractRows``."""


__all__ = ["BaseTx", "TxScope", "check_admission"]
