"""What a saved view may be called, what it stores, and who may change it.

A name is 1-80 printable characters (``str.isprintable``: it is shown in menus
and must read as typed). The query stored is the Work list's
canonical query string for the filter submitted (``WorkFilter.querystring``): a
cursor, a poll stamp or a search box's bare words are not part of a view, and a
filter the list would refuse is refused here too, so an opened view never lands on
a 400. Personal views are read and changed by their owner only; team views are read
by everyone and changed by holders of ``console.manage_team_views`` (superusers
have every permission). ``CONSOLE_READ_ONLY`` does not apply: it switches off
actions on the store, and a view is a bookmark in the console's own tables.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Permission
from django.db.models import Q, QuerySet
from django.http import QueryDict

from console.saved.models import NAME_MAX, QUERY_MAX, SavedView
from console.urlstate import FilterError
from console.works.filters import apply_search, parse_search, parse_work_filter

TEAM_PERMISSION = "console.manage_team_views"


class Refused(Exception):
    """A request about a saved view that cannot be done: ``status`` is its answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def clean_name(raw: str) -> str:
    """The name as it will be stored (spaces at either end trimmed), or Refused(400)."""
    name = raw.strip()
    if not name:
        raise Refused(400, "Give the view a name.")
    if len(name) > NAME_MAX:
        raise Refused(400, f"A view's name has at most {NAME_MAX} characters ({len(name)} given).")
    # str.isprintable: no control, format, private-use, unassigned or surrogate code
    # point, and no separator but the plain space (bidi overrides would reorder a menu).
    bad = next((c for c in name if not c.isprintable()), None)
    if bad is not None:
        raise Refused(400, f"A view's name cannot hold the character U+{ord(bad):04X}.")
    return name


def canonical_query(raw: str) -> str:
    """The Work list's canonical query for ``raw`` (without "?"), or Refused(400)."""
    if len(raw) > QUERY_MAX:
        raise Refused(400, f"A view's filter has at most {QUERY_MAX} characters.")
    data = QueryDict(raw.lstrip("?"))
    try:
        f = parse_work_filter(data)
        search = parse_search(data.get("q", ""))
        if search.qualifiers:
            f = apply_search(f, search)
    except FilterError as exc:
        raise Refused(400, "That filter is not valid: " + " ".join(exc.errors.values())) from None
    query = f.querystring().lstrip("?")
    if len(query) > QUERY_MAX:
        raise Refused(400, f"A view's filter has at most {QUERY_MAX} characters.")
    return query


def may_manage_team(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Superuser, or the permission held directly or through a group: one query,
    remembered on the user (``has_perm`` would load every permission in two)."""
    if not user.is_authenticated or not user.is_active:
        return False
    if getattr(user, "is_superuser", False):
        return True
    cached = getattr(user, "_console_team_views", None)
    if cached is None:
        app_label, codename = TEAM_PERMISSION.split(".")
        held = Permission.objects.filter(content_type__app_label=app_label, codename=codename)
        cached = held.filter(Q(user=user) | Q(group__user=user)).exists()
        setattr(user, "_console_team_views", cached)  # noqa: B010 (a per-request memo)
    return bool(cached)


def listed(user: AbstractBaseUser) -> QuerySet[SavedView]:
    """The views ``user`` sees: the team's, then their own, each by name (one query)."""
    views = SavedView.objects.filter(Q(team=True) | Q(team=False, owner_id=user.pk))
    return views.select_related("owner").order_by("-team", "name", "id")


def editable(user: AbstractBaseUser, pk: int) -> SavedView:
    """The view ``user`` may rename or delete. Someone else's personal view is a 404
    (its existence is nobody else's business); a team view without the permission a
    403 (everyone can see it exists)."""
    view = SavedView.objects.filter(pk=pk).first()
    if view is None or (not view.team and view.owner_id != user.pk):
        raise Refused(404, "No such saved view.")
    if view.team and not may_manage_team(user):
        raise Refused(403, _team_refusal())
    return view


def _team_refusal() -> str:
    return (
        "Team views are changed by users with the permission "
        f'"{TEAM_PERMISSION}"; ask an administrator, or save it as your own view.'
    )


def save(user: AbstractBaseUser, name: str, query: str, team: bool) -> tuple[SavedView, bool]:
    """Create the view, or update the query of the one with that name (the owner's,
    or the team's): saving again under a name is how a view is changed. Returns the
    view and whether it is new."""
    if team and not may_manage_team(user):
        raise Refused(403, _team_refusal())
    lookup = {"team": True} if team else {"team": False, "owner_id": user.pk}
    view, created = SavedView.objects.update_or_create(
        name=name, **lookup, defaults={"query": query, "owner_id": user.pk}
    )
    return view, created


def rename(user: AbstractBaseUser, pk: int, raw_name: str) -> SavedView:
    view = editable(user, pk)
    name = clean_name(raw_name)
    clash = SavedView.objects.filter(name=name, team=view.team).exclude(pk=view.pk)
    if not view.team:
        clash = clash.filter(owner_id=view.owner_id)
    if clash.exists():
        raise Refused(409, f"There is already a view named {name!r}.")
    view.name = name
    view.save(update_fields=["name", "updated_at"])
    return view
