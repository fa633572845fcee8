"""Routed-run errors: one class per sentinel of the routed-run domain, each under the
storage root (``StorageError``) and under the storage class whose HTTP status fits it,
so the console's one error table maps them without knowing this package.

The default message of each class is the sentinel's text; callers catch the class.
"""

from __future__ import annotations

from typing import Any

from ..errors import Conflict, Corrupt, Fenced, Invalid, NotFound, RecordsNewer, StorageError


class RoutedError(StorageError):
    """Root of the routed-run errors (itself a ``StorageError``)."""

    sentinel = "routedrun: error"

    def __init__(self, message: str = "") -> None:
        super().__init__(f"{self.sentinel}: {message}" if message else self.sentinel)


class RoutedNotFound(RoutedError, NotFound):
    sentinel = "routedrun: not found"


class AlreadyExists(RoutedError, Conflict):
    sentinel = "routedrun: already exists"


class CASConflict(RoutedError, Conflict):
    sentinel = "routedrun: generation conflict"


class IdempotencyConflict(RoutedError, Conflict):
    sentinel = "routedrun: idempotency conflict"
    outcome_name = "IDEMPOTENCY_CONFLICT"  # its AdmissionOutcome


class AlreadyRunning(RoutedError, Conflict):
    sentinel = "routedrun: already running"
    outcome_name = "ALREADY_RUNNING"  # its AdmissionOutcome


class DeploymentInactive(RoutedError, Conflict):
    sentinel = "routedrun: deployment inactive"
    outcome_name = "DEPLOYMENT_INACTIVE"  # its AdmissionOutcome


class UnknownSchemaVersion(RoutedError, RecordsNewer):
    """Data stamped with a schema version this code does not read (newer, or older
    than any migration it knows): under ``RecordsNewer``, so the console answers 409
    as for any record this code cannot read, never a 500."""

    sentinel = "routedrun: unknown or unsupported schema version"


class InvalidArgument(RoutedError, Invalid):
    sentinel = "routedrun: invalid argument"


class LeaseCallerSelected(InvalidArgument):
    sentinel = "routedrun: caller-selected lease id rejected"


class AuthorityDenied(InvalidArgument):
    """The request's authority scope does not permit its command (resolution 7)."""

    sentinel = "routedrun: authority scope does not permit this command"


class LeaseFenced(RoutedError, Fenced):
    """An attempt write carried a lease that is no longer the attempt's authority
    (revoked, superseded, expired or absent)."""

    sentinel = "routedrun: lease fenced"


class SymlinkRejected(RoutedError, Invalid):
    """A link on an artifact's or a journal's path: a symbolic link at any level, or
    a file with more than one hard link (its content is reachable from outside)."""

    sentinel = "routedrun: symlink rejected"


class UnsafePermissions(RoutedError, Invalid):
    """A group- or world-writable artifact, or a journal key or file not 0600."""

    sentinel = "routedrun: unsafe permissions"


class SizeCapExceeded(RoutedError, Invalid):
    """Over 25 MiB in one artifact, 100 MiB accepted for a run, or 65,536 bytes in a
    journal event's payload."""

    sentinel = "routedrun: size cap exceeded"


class InvalidPath(RoutedError, Invalid):
    """An artifact path that is absolute, traverses, is empty in a segment, has over 8
    segments or 512 bytes, or names no regular file."""

    sentinel = "routedrun: invalid path component"


class JournalSequenceConflict(RoutedError, Conflict):
    """An append or an ingestion whose sequence is not exactly the last one + 1."""

    sentinel = "routedrun: journal sequence conflict"


class JournalInvalid(RoutedError, Corrupt):
    """A control journal that does not verify: an event altered (HMAC), removed,
    duplicated or reordered (sequence), unreadable, or its key replaced. The spec has
    no sentinel for it; under ``Corrupt``, as stored bytes that do not decode are."""

    sentinel = "routedrun: control journal failed verification"


class SegmentAlreadyOpen(RoutedError, Invalid):
    sentinel = "time envelope: active segment already open"


class MigrationError(RoutedError, Invalid):
    """A migration registry that is not one forward chain, or a step that failed."""

    sentinel = "routedrun: migration registry invalid"


class TransitionError(RoutedError, Invalid):
    """A status change the resource's transition map forbids."""

    sentinel = "routedrun: invalid transition"

    def __init__(self, resource: str, from_state: Any, to_state: Any, message: str = "") -> None:
        self.resource = resource
        self.from_state = from_state
        self.to_state = to_state
        self.message = message or (
            f"invalid {resource} transition from {_name(from_state)} to {_name(to_state)}"
        )
        super().__init__(self.message)


def _name(state: Any) -> str:
    return str(getattr(state, "name", state))
