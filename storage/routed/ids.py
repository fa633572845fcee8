"""Typed routed-run IDs: one ``str`` subclass per ID with its prefix.

``X.new()`` mints a cryptographically random ID (128 bits from ``secrets``);
``X.parse(text)`` validates the prefix and the characters and returns the typed ID,
raising ``InvalidArgument`` otherwise. Constructing ``X(text)`` directly does not
validate: every store write validates each ID field of the record against its type
(``check_id``), so a wrong prefix is refused with nothing written, whatever built it.
"""

from __future__ import annotations

import re
import secrets
from typing import ClassVar, Self

from .errors import InvalidArgument

# Bounded and printable: IDs are primary keys and URL path segments.
ID_MAX = 128
_BODY = re.compile(r"[A-Za-z0-9_.:-]+")


class RoutedID(str):
    prefix: ClassVar[str] = ""

    __slots__ = ()

    @classmethod
    def new(cls) -> Self:
        return cls(cls.prefix + secrets.token_hex(16))

    @classmethod
    def parse(cls, text: object) -> Self:
        check_id(cls, text)
        return cls(str(text))

    @classmethod
    def valid(cls, text: object) -> bool:
        """Go's ``ValidateIDPrefix``: non-empty, the prefix, then a bounded body."""
        return (
            isinstance(text, str)
            and len(text) > len(cls.prefix)
            and len(text) <= ID_MAX
            and text.startswith(cls.prefix)
            and _BODY.fullmatch(text, len(cls.prefix)) is not None
        )


def check_id(kind: type[RoutedID], text: object, field: str = "") -> None:
    if not kind.valid(text):
        where = f" {field}" if field else ""
        raise InvalidArgument(
            f"{kind.__name__}{where} must be {kind.prefix!r} followed by up to "
            f"{ID_MAX - len(kind.prefix)} of [A-Za-z0-9_.:-], not {text!r}"
        )


class DeploymentID(RoutedID):
    prefix = "dep-"


class InvocationID(RoutedID):
    prefix = "inv-"


class WorkflowID(RoutedID):
    prefix = "wf-"


class NodeID(RoutedID):
    prefix = "node-"


class RunID(RoutedID):
    prefix = "run-"


class AttemptID(RoutedID):
    prefix = "at-"


class LeaseID(RoutedID):
    prefix = "ls-"


class ControlRequestID(RoutedID):
    prefix = "ctrl-"


class LimitAmendmentID(RoutedID):
    prefix = "amend-"


class ServiceID(RoutedID):
    prefix = "svc-"


class HandoffID(RoutedID):
    prefix = "ho-"


class ChildBatchID(RoutedID):
    prefix = "cb-"


class ChildResultID(RoutedID):
    prefix = "cr-"


class IdempotencyID(RoutedID):
    prefix = "idem-"


class CheckpointID(RoutedID):
    """The spec gives checkpoints no prefix; ``ckpt-`` keeps them apart from the rest."""

    prefix = "ckpt-"


class ArtifactID(RoutedID):
    """The spec gives artifacts no prefix; ``art-``, and the workspace derives the body
    from (run, relative path), so accepting a path again updates its one record."""

    prefix = "art-"


ALL_ID_TYPES: tuple[type[RoutedID], ...] = (
    DeploymentID,
    InvocationID,
    WorkflowID,
    NodeID,
    RunID,
    AttemptID,
    LeaseID,
    ControlRequestID,
    LimitAmendmentID,
    ServiceID,
    HandoffID,
    ChildBatchID,
    ChildResultID,
    IdempotencyID,
    CheckpointID,
    ArtifactID,
)
