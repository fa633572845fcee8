"""A workflow's shape at admission: the topology its deployment declares.

The spec's ``AdmitInvocation`` creates the "topology-specific workflow/node/run
identity" in the admitting transaction, and a deployment's ``nested_package_digests``
holds "every statically declared stage, MCP service, and child-allowlist package". The
spec names the roles, not the keys; our reading of the keys (each valued with that
package's digest):

- ``stage:<n>`` (the deployment's own package) or ``stage:<n>:<name>@<version>``: the
  pipeline stage of order ``n``, 0-based and contiguous;
- ``service:<service name>:<name>@<version>``: an MCP service of the workflow;
- ``child:<name>@<version>``: a package a parent stage may spawn (the allowlist).

No stage or one: ``standalone``; two or more: ``pipeline``; an allowlist makes it
``parent_child``, whose one stage is the parent. ``create_deployment`` refuses a map
this reading cannot place, so an admission never meets one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import InvalidArgument
from .base import check_text

_ORDER = re.compile(r"[0-9]{1,4}")
# The run kind of each stage's run (RunRecord.run_kind's names).
RUN_KIND = {"standalone": "standalone", "pipeline": "pipeline_stage", "parent_child": "parent"}

Package = tuple[str, str]  # (name, version)


@dataclass(frozen=True)
class Topology:
    kind: str
    stages: tuple[Package, ...]  # in stage order; never empty
    services: tuple[tuple[str, Package], ...]  # (service name, package)
    children: frozenset[Package]


def _package(text: str, key: str) -> Package:
    name, at, version = text.rpartition("@")
    if not (at and name and version):
        raise InvalidArgument(f"nested package key {key!r} must name <package>@<version>")
    check_text(f"{key} package name", name)
    check_text(f"{key} package version", version)
    return name, version


def declared_children(digests: Mapping[str, str]) -> frozenset[Package]:
    """The child allowlist of ``digests`` (a map ``topology_of`` accepted)."""
    return frozenset(_package(key[6:], key) for key in digests if key.startswith("child:"))


def topology_of(digests: Mapping[str, str], own: Package) -> Topology:
    """The shape ``digests`` declares for a deployment of package ``own``."""
    stages: dict[int, Package] = {}
    services: dict[str, Package] = {}
    children: set[Package] = set()
    for key in sorted(digests):
        role, _, rest = key.partition(":")
        if role == "stage":
            order, _, package = rest.partition(":")
            if not _ORDER.fullmatch(order) or int(order) in stages:
                raise InvalidArgument(
                    f"nested package key {key!r}: stage order missing or repeated"
                )
            stages[int(order)] = _package(package, key) if package else own
        elif role == "service":
            name, _, package = rest.partition(":")
            if not name or name in services:
                raise InvalidArgument(
                    f"nested package key {key!r}: service name missing or repeated"
                )
            check_text("service_name", name)
            services[name] = _package(package, key)
        elif role == "child":
            children.add(_package(rest, key))
        else:
            raise InvalidArgument(f"nested package key {key!r} is not a stage, service or child")
    if sorted(stages) != list(range(len(stages))):
        raise InvalidArgument(f"stage orders {sorted(stages)} are not 0..n-1")
    if children and len(stages) > 1:
        raise InvalidArgument("a parent/child workflow has one stage, the parent")
    ordered = tuple(stages[n] for n in range(len(stages))) or (own,)
    kind = "parent_child" if children else "pipeline" if len(ordered) > 1 else "standalone"
    return Topology(kind, ordered, tuple(sorted(services.items())), frozenset(children))
