"""The provider's group claim, mapped to the console's groups (``settings.OIDC_GROUP_MAP``).

The mapping names the console groups the provider manages: at every sign-in a user is
put in exactly those of them that the claim maps to and taken out of the others, so a
group removed at the provider takes its permissions away at the next sign-in. Console
groups the mapping never names are left alone (an administrator's grant in the admin
stands), and so are permissions granted to the user directly. A user with no mapped
group is read-only: signed in, every page readable, no action (console/access.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractUser, Group
from django.db import transaction

log = logging.getLogger(__name__)


def claimed_groups(claims: Mapping[str, Any]) -> frozenset[str]:
    """The provider groups in ``claims``: a list of names, or one name as a string
    (some providers send a lone group so). Anything else counts as none."""
    value = claims.get(settings.OIDC_GROUPS_CLAIM)
    if isinstance(value, str):
        return frozenset({value})
    if isinstance(value, list | tuple):
        return frozenset(item for item in value if isinstance(item, str))
    if value is not None:
        log.warning("OIDC claim %r is neither a list nor a string", settings.OIDC_GROUPS_CLAIM)
    return frozenset()


def managed_groups() -> frozenset[str]:
    """Every console group the mapping names: the ones a sign-in may add or take away."""
    mapping: Mapping[str, tuple[str, ...]] = settings.OIDC_GROUP_MAP
    return frozenset(name for names in mapping.values() for name in names)


def mapped_groups(claims: Mapping[str, Any]) -> frozenset[str]:
    """The console groups the provider's claim grants."""
    mapping: Mapping[str, tuple[str, ...]] = settings.OIDC_GROUP_MAP
    return frozenset(name for group in claimed_groups(claims) for name in mapping.get(group, ()))


def sync_groups(user: AbstractUser, claims: Mapping[str, Any]) -> frozenset[str]:
    """Put ``user`` in exactly the managed groups the claim maps to; return them.

    One transaction: a concurrent sign-in of the same user sees the old set or the new
    one, never a half. A mapped group missing from the database (a typo in the
    setting, a group never created) is logged and skipped, not created: a group made
    here would hold no permission and hide the typo.
    """
    granted = mapped_groups(claims)
    managed = managed_groups()
    with transaction.atomic():
        present = {group.name: group for group in Group.objects.filter(name__in=managed)}
        for name in sorted(managed - present.keys()):
            log.warning("OIDC group mapping names console group %r, which does not exist", name)
        user.groups.remove(*(present[name] for name in managed - granted if name in present))
        user.groups.add(*(present[name] for name in granted if name in present))
    # access.py memoises a user's permissions on the object; this one just changed.
    user.__dict__.pop("_console_action_perms", None)
    held = frozenset(name for name in granted if name in present)
    log.info("OIDC sign-in of %s: console groups %s", user.get_username(), sorted(held) or "none")
    return held
