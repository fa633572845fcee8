"""URLs of the pages about one ID (a Work's page, its Retry and Cancel), built from one
reversed prefix per URL name instead of one ``reverse()`` per row.

A list of 50 Work reverses three URLs a row; ``reverse()`` walks the resolver's
possibilities and regex-checks the result each time (about a tenth of the Work list's
render). The URLs here end in the ID (``<id:...>``, ``console.converters``), so the
prefix is the same for every ID and only the ID's part needs encoding, exactly as
``reverse()`` encodes it: the converter's ``to_url``, then ``quote`` with the same safe
characters. ``tests/console/test_paths.py`` checks the two agree on awkward IDs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import quote

from django.urls import get_resolver, get_script_prefix, get_urlconf, reverse
from django.utils.http import RFC3986_SUBDELIMS

from console.converters import IdConverter

_SAFE = RFC3986_SUBDELIMS + "/~:@"  # what reverse() leaves unencoded (django/urls/resolvers.py)
_CONVERTER = IdConverter()
_MARK = "x"
# No "/", ".", "~" (the converter's segments) nor anything quote() encodes.
_ORDINARY = re.compile(r"[A-Za-z0-9_-]+")
# (script prefix, resolver, URL name, its other arguments) -> the reversed URL without
# its ID. The script prefix is per request (SCRIPT_NAME) and reverse() starts with it;
# the resolver changes with the URLconf (a test's override_settings clears Django's
# cache of them). The other arguments are few (a routed action's name).
_PREFIXES: dict[tuple[str, object, str, tuple[tuple[str, str], ...]], str] = {}
# The URL names this builds, with their ID argument: each pattern ends "<id:...>".
ID_URLS = {
    "work_detail": "work_id",
    "retry_work": "work_id",
    "cancel_work": "work_id",
    "routed_workflow": "workflow_id",
    # One route per routed workflow action (RoutedAction.url_name).
    **{
        f"routed_{action}": "workflow_id"
        for action in ("pause", "resume", "cancel", "restart", "continue", "amend_limits")
    },
}


def id_url(name: str, value: str, **fixed: str) -> str:
    """``reverse(name, kwargs={**fixed, arg: value})`` for a name of ``ID_URLS``."""
    return url_maker(name, **fixed)(value)


def url_maker(name: str, **fixed: str) -> Callable[[str], str]:
    """``id_url`` for many IDs of one request: the prefix looked up once (the script
    prefix and the URLconf are per-request lookups, a third of ``id_url``'s cost)."""
    key = (get_script_prefix(), get_resolver(get_urlconf()), name, tuple(sorted(fixed.items())))
    prefix = _PREFIXES.get(key)
    if prefix is None:
        prefix = reverse(name, kwargs={**fixed, ID_URLS[name]: _MARK})[: -len(_MARK)]
        _PREFIXES[key] = prefix

    def url(value: str) -> str:
        if _ORDINARY.fullmatch(value):
            return prefix + value  # what to_url() and quote() leave as it is: most IDs
        if "\n" in value or not value:
            # reverse() refuses these (the converter's ".+" matches no newline, nor
            # nothing): let it raise as it always has.
            return reverse(name, kwargs={**fixed, ID_URLS[name]: value})
        return prefix + quote(_CONVERTER.to_url(value), safe=_SAFE)

    return url
