"""The reference double's record-version log (``storage.versions``): its rows as
stored and the row hooks over them, a mixin of ``storage.memory.MemoryTx``. Every
read is a pass over the list in position order: the reference, not a fast path."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .records import Nanos
from .tx.versions import VERSION_END, decoded, first_position, version_of
from .versions import RecordVersion, VersionKind


@dataclass(frozen=True, slots=True)
class VersionRow:
    """A version log row as stored: the state before as text (KV: bytes)."""

    position: int
    at: Nanos
    kind: VersionKind
    id: str
    key: str
    before: str | bytes | None
    event_sequence: int
    execution_id: str
    work_id: str

    def public(self) -> RecordVersion:
        return RecordVersion(
            self.position,
            version_of(self.position),
            self.at,
            self.kind,
            self.id,
            self.key,
            decoded(self.kind, self.before),
            self.event_sequence,
            self.execution_id,
            self.work_id,
        )


class _Logged(Protocol):
    versions: list[VersionRow]
    version_horizon: int


class MemoryVersions:
    """The version log's row hooks (``tx.rows.ContractRows``) for the double."""

    state: _Logged

    def _append_versions(
        self,
        rows: Sequence[tuple[int, VersionKind, str, str, str | bytes | None, str]],
        at: Nanos,
        event_sequence: int,
        execution_id: str,
    ) -> None:
        self.state.versions.extend(
            VersionRow(position, at, kind, id, key, before, event_sequence, execution_id, work)
            for position, kind, id, key, before, work in rows
        )

    def _record_versions(
        self,
        kind: VersionKind,
        id: str,
        key: str,
        after: int,
        upto: int,
        limit: int,
        newest_first: bool,
    ) -> list[RecordVersion]:
        low = first_position(after + 1)
        high = first_position(upto + 1) if upto else None
        found = [
            r
            for r in self.state.versions
            if (r.kind, r.id, r.key) == (kind, id, key)
            and low <= r.position
            and (high is None or r.position < high)
        ]
        if newest_first:
            found.reverse()
        return [r.public() for r in (found[:limit] if limit else found)]

    def _version_changes(self, low: int, high: int | None, limit: int) -> list[RecordVersion]:
        found = [
            r
            for r in self.state.versions
            if low <= r.position and (high is None or r.position < high)
        ]
        return [r.public() for r in (found[:limit] if limit else found)]

    def _work_versions(
        self, work_id: str, low: int, high: int | None, limit: int
    ) -> list[RecordVersion]:
        found = [
            r
            for r in self.state.versions
            if r.work_id == work_id and low <= r.position and (high is None or r.position < high)
        ]
        return [r.public() for r in (found[:limit] if limit else found)]

    def _first_versions(
        self,
        low: int = 0,
        work_id: str = "",
        kind: VersionKind = "work",
        seeks: Sequence[tuple[str, int]] = (),
    ) -> list[RecordVersion]:
        lows = dict(seeks)
        first: dict[tuple[str, str, str], VersionRow] = {}
        for r in self.state.versions:
            if work_id:
                if r.work_id == work_id and r.position >= low:
                    first.setdefault((r.kind, r.id, r.key), r)
            elif r.kind == kind and r.key == "" and r.position >= lows.get(r.id, VERSION_END):
                first.setdefault((r.kind, r.id, r.key), r)
        return [r.public() for r in first.values()]

    def _kv_first_versions(
        self, namespace: str, low: int, prefix: str, after: str, limit: int
    ) -> list[RecordVersion]:
        first: dict[str, VersionRow] = {}
        for r in self.state.versions:
            mine = r.kind == "kv" and r.id == namespace and r.position >= low
            if mine and r.key.startswith(prefix) and r.key > after:
                first.setdefault(r.key, r)
        found = [first[key].public() for key in sorted(first)]
        return found[:limit] if limit else found

    def _first_position_after(self, at: Nanos) -> int | None:
        return next((r.position for r in self.state.versions if r.at > at), None)

    def _version_horizon(self) -> int:
        return self.state.version_horizon

    def _set_version_horizon(self, version: int) -> None:
        self.state.version_horizon = version

    def _prune_versions(self, before: Nanos, limit: int) -> tuple[int, int] | None:
        rows = self.state.versions
        count = 0
        while count < min(limit, len(rows)) and rows[count].at < before:
            count += 1
        if not count:
            return None
        last = rows[count - 1].position
        self.state.versions = rows[count:]
        return count, last
