"""Finding records by ID prefix, across every kind that has an ID: what a search box
does with an ID copied from an alert or a log line (possibly shortened)."""

from __future__ import annotations

from ..errors import Invalid
from ..meaning.ids import FIND_IDS_MAX, KIND_ORDER
from ..records import IdMatch
from . import fields
from .base import TxBase


class LookupRules(TxBase):
    """The ID-prefix read of ``Tx``."""

    def find_ids(self, prefix: str, limit: int = 10) -> list[IdMatch]:
        self._check()
        fields.require_id(prefix, "ID prefix")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 0 < limit <= FIND_IDS_MAX:
            raise Invalid(f"find_ids takes a limit from 1 to {FIND_IDS_MAX}, not {limit!r}")
        out: list[IdMatch] = []
        for kind in KIND_ORDER:
            out += self._prefix_ids(kind, prefix, limit)
        return out
