"""The composition root hands out one routed store over the process's default store."""

from __future__ import annotations

import pytest

from storage.default import default_routed_store, default_store, reset_defaults
from storage.routed.store import RoutedStore

from .support import admit


@pytest.mark.django_db(transaction=True, databases=["default", "view"])
def test_the_default_routed_store_is_one_per_process_over_the_default_store() -> None:
    reset_defaults()
    try:
        routed = default_routed_store()
        assert isinstance(routed, RoutedStore)
        assert routed.store is default_store()
        assert default_routed_store() is routed
        admission = admit(routed)
        assert (
            default_routed_store().view(lambda r: r.get_run(admission.receipt.run_id)).generation
            == 1
        )
    finally:
        reset_defaults()
