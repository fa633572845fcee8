"""Decoded values on the run page: each ready value restored with the value codecs of
whoever wrote the runs, beside the restore check's result.

Where the codecs come from: ``settings.CONSOLE_RUN_VALUES`` names a callable that
returns a ``storage.run_records.ValueCatalog`` (or a bare ``Codecs``); the project's settings
point it at the demo's graphs (``demo.graphs.run_values``), since neither storage nor
the console may import the demo. "" means the built-in codecs only. The callable is
loaded once per path and process; a path that does not load is a system check error
(``manage.py check``) and, on the page, a notice with digests as before, never a 500.

The decoded value is shown as ``pprint`` draws it (escaped by the template), cut at
``PREVIEW_CHARS`` with the whole text in a ``<details>`` ("show all", no script), which
itself stops at ``SHOW_ALL_CHARS`` so one huge value cannot make the page unbounded.
"""

from __future__ import annotations

import logging
import pprint
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from django.conf import settings
from django.core import checks
from django.utils.module_loading import import_string

from console.run_records.tree import anchor
from storage.run_records import (
    Codecs,
    DurableRunRecord,
    Outcome,
    Restored,
    ValueCatalog,
    ValueRecord,
    new_codecs,
    restore_value,
)

log = logging.getLogger(__name__)

PREVIEW_CHARS = 600
SHOW_ALL_CHARS = 200_000


@cache
def load_catalog(path: str) -> tuple[ValueCatalog | None, str]:
    """The catalog the callable at ``path`` returns, or ``(None, why not)``."""
    if not path:
        return ValueCatalog(new_codecs()), ""
    try:
        built = import_string(path)()
    except Exception as exc:  # an import error or the host's own failure
        log.exception("CONSOLE_RUN_VALUES %r does not load", path)
        return None, f"{path} does not load: {type(exc).__name__}: {exc}"
    if isinstance(built, Codecs):
        built = ValueCatalog(built)
    if not isinstance(built, ValueCatalog):
        return None, f"{path} returned {type(built).__name__}, not a ValueCatalog or Codecs"
    return built, ""


def get_catalog() -> tuple[ValueCatalog | None, str]:
    return load_catalog(getattr(settings, "CONSOLE_RUN_VALUES", ""))


@checks.register()
def check_run_values(**kwargs: Any) -> list[checks.CheckMessage]:
    catalog, error = get_catalog()
    if catalog is None:
        return [checks.Error(error, hint="Set CONSOLE_RUN_VALUES", id="console.E101")]
    return []


@dataclass(frozen=True, slots=True)
class DecodedValue:
    value: ValueRecord
    restored: Restored
    declared_name: str  # the type the value was checked against ("" when not decoded)
    declared_known: bool  # whether the host declared it (else the codec's own type)
    head: str = ""  # the decoded value as text, at most PREVIEW_CHARS
    full: str = ""  # all of it (to SHOW_ALL_CHARS) when longer than head, else ""
    length: int = 0  # characters in the whole text
    cut: int = 0  # characters past SHOW_ALL_CHARS not drawn

    @property
    def unregistered(self) -> bool:
        return "codec-unregistered" in self.restored.checks

    @property
    def stream(self) -> bool:
        return self.restored.outcome is Outcome.STREAM

    @property
    def skipped(self) -> bool:
        return self.restored.outcome is Outcome.SKIPPED


def _text(value: Any) -> str:
    try:
        return pprint.pformat(value, width=88, sort_dicts=False)
    except Exception as exc:  # a custom type whose repr raises
        return f"(the decoded {type(value).__qualname__} cannot be printed: {exc})"


def decode_value(
    value: ValueRecord, catalog: ValueCatalog, declared: type | None = None
) -> DecodedValue:
    restored = restore_value(value, catalog.codecs, declared)
    name = getattr(restored.declared, "__qualname__", "") if restored.declared else ""
    if not restored.decoded:
        return DecodedValue(value, restored, name, declared is not None)
    text = _text(restored.value)
    head = text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"
    full = text[:SHOW_ALL_CHARS] if len(text) > PREVIEW_CHARS else ""
    cut = max(len(text) - SHOW_ALL_CHARS, 0)
    return DecodedValue(value, restored, name, declared is not None, head, full, len(text), cut)


def decoded_values(record: DurableRunRecord, catalog: ValueCatalog) -> dict[str, DecodedValue]:
    """Every node output and managed value of ``record``, restored, by the element id
    the run tree gives its row (``console.run_records.tree.value_views``: owner anchor, "-v",
    position)."""
    out: dict[str, DecodedValue] = {}

    def add(owner: str, graph: str, node_id: str, values: Iterable[ValueRecord]) -> None:
        for i, value in enumerate(values):
            declared = catalog.declared_type(graph, node_id, value.name)
            out[f"{owner}-v{i}"] = decode_value(value, catalog, declared)

    for scope_id, scope in record.scopes.items():
        for node_id, node in scope.nodes.items():
            add(anchor("node", scope_id, node_id), scope.graph, node_id, node.outputs)
    for key, managed in record.managed.items():
        owner = record.scopes.get(managed.scope)
        graph = owner.graph if owner is not None else ""
        add(anchor("managed", key), graph, managed.node_id, managed.values)
    return out
