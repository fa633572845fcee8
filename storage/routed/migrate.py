"""The forward-only schema migration registry (resolution 16).

A ``MigrationRegistry`` is one chain of steps ``a -> b -> ... -> current``: building one
with a gap, a fork, a cycle or a step that goes backwards raises ``MigrationError``.
``migrate(version, state)`` applies the steps from ``version`` to the current version;
an unknown or newer version is ``UnknownSchemaVersion`` before any step runs. Steps
must be idempotent: each is re-applied to its own output and must return the same
bytes, or the migration fails (``MigrationError``) and nothing is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .codec import SCHEMA_VERSION
from .errors import MigrationError, UnknownSchemaVersion

_SEMVER = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")


def parse_version(version: str) -> tuple[int, int, int]:
    match = _SEMVER.fullmatch(version)
    if match is None:
        raise UnknownSchemaVersion(f"{version!r} is not a schema version")
    major, minor, patch = (int(g) for g in match.groups())
    return major, minor, patch


@dataclass(frozen=True)
class Migration:
    from_version: str
    to_version: str
    apply: Callable[[bytes], bytes]


class MigrationRegistry:
    def __init__(self, current: str, migrations: Sequence[Migration] = ()) -> None:
        parse_version(current)
        steps: dict[str, Migration] = {}
        targets: set[str] = set()
        for step in migrations:
            if parse_version(step.to_version) <= parse_version(step.from_version):
                raise MigrationError(f"step {step.from_version} -> {step.to_version} goes back")
            if step.from_version in steps:
                raise MigrationError(f"two steps leave {step.from_version}")
            if step.to_version in targets:
                raise MigrationError(f"two steps reach {step.to_version}")
            steps[step.from_version] = step
            targets.add(step.to_version)
        # One chain: exactly one start (a version no step reaches), and walking from it
        # visits every step and ends at ``current``.
        starts = [v for v in steps if v not in targets]
        if steps and len(starts) != 1:
            raise MigrationError(f"steps do not form one chain (starts: {sorted(starts)})")
        seen = 0
        version = starts[0] if steps else current
        while version in steps:
            seen += 1
            if seen > len(steps):
                raise MigrationError("the steps form a cycle")
            version = steps[version].to_version
        if version != current or seen != len(steps):
            raise MigrationError(f"the chain ends at {version}, not at the current {current}")
        self._current = current
        self._steps = steps

    def current(self) -> str:
        return self._current

    def is_supported(self, version: str) -> bool:
        return version == self._current or version in self._steps

    def needs_migration(self, version: str) -> bool:
        return version in self._steps

    def migrate(self, from_version: str, state: bytes) -> tuple[str, bytes]:
        """The state brought to the current version (unchanged when it is current)."""
        if not self.is_supported(from_version):
            raise UnknownSchemaVersion(
                f"schema version {from_version!r} is unknown or newer than {self._current}"
            )
        version = from_version
        while version != self._current:
            step = self._steps[version]
            out = step.apply(state)
            if step.apply(out) != out:
                raise MigrationError(f"step {version} -> {step.to_version} is not idempotent")
            found = _stamp(out)
            if found != step.to_version:
                raise MigrationError(
                    f"step {version} -> {step.to_version} produced version {found!r}"
                )
            state, version = out, step.to_version
        return version, state


def _stamp(state: bytes) -> object:
    try:
        data = json.loads(state)
    except ValueError as exc:
        raise MigrationError(f"a step produced invalid JSON ({exc})") from exc
    return data.get("schema_version") if isinstance(data, dict) else None


def default_registry() -> MigrationRegistry:
    """0.3.0 is the first schema: no older versions to migrate from yet."""
    return MigrationRegistry(SCHEMA_VERSION)
