"""The shared storage contract suite: every case of the ``cases`` package on every backend.

Test IDs read ``test_case[<backend>-<case>]``, e.g. ``test_case[sqlite-revisions]``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import pytest

from storage import Store

from .cases import CASES, Case
from .support import FakeClock


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_case(store: Store, clock: FakeClock, reopen: Callable[[], Store], case: Case) -> None:
    if "reopen" in inspect.signature(case).parameters:
        case(store, clock, reopen)
    else:
        case(store, clock)
