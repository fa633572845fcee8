"""One access model for every operator action (issue 33): Django permissions, which the
groups hold; migration 0004 gives the groups what they need, so their members keep
every action they had when the console stopped asking for the group's name."""

from __future__ import annotations

import html

import pytest
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from console.access import (
    GROUP_PERMISSIONS,
    ROUTED_AMEND_LIMITS,
    ROUTED_CONTROL,
    WORK_CONTROL,
    holds,
)
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB
BEFORE = ("console", "0003_saved_views_preferences")
AFTER = ("console", "0004_action_permissions")


def migrate(target: tuple[str, str]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])


def granted(group: str) -> set[str]:
    perms = Group.objects.get(name=group).permissions.select_related("content_type")
    return {f"{p.content_type.app_label}.{p.codename}" for p in perms}


def member(username: str, group: str):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user(username=username, password="pw")
    user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


def fresh(user):
    # has_perm caches a user's permissions on the object: read the user again.
    return type(user).objects.get(pk=user.pk)


@pytest.fixture
def before_0004():
    """The database as 0003 left it: the groups with 0002's routed grants only."""
    migrate(BEFORE)
    operators, _ = Group.objects.get_or_create(name="operators")
    amenders, _ = Group.objects.get_or_create(name="limit-amenders")
    operators.permissions.set([Permission.objects.get(codename="routed_control")])
    amenders.permissions.set([Permission.objects.get(codename="routed_amend_limits")])
    yield
    # Leave the schema at its latest (every app's last migration, 0004 is not the
    # console's last) for the tests after this one: on PostgreSQL the template restore
    # brings back rows, not tables (tests/support/template_db.py).
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_the_migration_gives_each_group_the_permissions_its_members_act_with(before_0004):
    olivia = member("olivia", "operators")
    lena = member("lena", "limit-amenders")
    assert not Permission.objects.filter(codename="work_control").exists()

    migrate(AFTER)

    assert granted("operators") == {WORK_CONTROL, ROUTED_CONTROL}
    assert granted("limit-amenders") == {ROUTED_AMEND_LIMITS}
    assert {g: granted(g) for g in GROUP_PERMISSIONS} == {
        g: set(perms) for g, perms in GROUP_PERMISSIONS.items()
    }
    olivia, lena = fresh(olivia), fresh(lena)
    assert holds(olivia, WORK_CONTROL)
    assert holds(olivia, ROUTED_CONTROL)
    assert not holds(olivia, ROUTED_AMEND_LIMITS)
    assert holds(lena, ROUTED_AMEND_LIMITS)
    assert not holds(lena, WORK_CONTROL)
    assert not holds(lena, ROUTED_CONTROL)


def test_the_migration_restores_a_group_whose_grants_were_removed(before_0004):
    Group.objects.get(name="operators").permissions.clear()
    Group.objects.filter(name="limit-amenders").delete()

    migrate(AFTER)

    assert granted("operators") == {WORK_CONTROL, ROUTED_CONTROL}
    assert granted("limit-amenders") == {ROUTED_AMEND_LIMITS}


def test_back_to_0003_takes_only_the_work_permission_away(before_0004):
    migrate(AFTER)

    migrate(BEFORE)

    assert granted("operators") == {ROUTED_CONTROL}
    assert granted("limit-amenders") == {ROUTED_AMEND_LIMITS}


def test_a_group_acts_through_its_permission_not_its_name(django_user_model):
    f.exhausted("w1")
    crew = Group.objects.create(name="night-shift")
    crew.permissions.add(Permission.objects.get(codename="work_control"))
    user = django_user_model.objects.create_user(username="nina", password="pw")
    user.groups.add(crew)
    named = django_user_model.objects.create_user(username="oscar", password="pw")
    # A group named "operators" holding no grants (the migration gives the real one its
    # grants; taken away here, the name alone must grant nothing).
    operators = Group.objects.get_or_create(name="operators")[0]
    operators.permissions.clear()
    named.groups.add(operators)
    nina, oscar = Client(), Client()
    nina.force_login(user)
    oscar.force_login(named)

    assert nina.get("/actions/cancel/w1").status_code == 200
    refused = oscar.get("/actions/cancel/w1")
    assert refused.status_code == 403
    assert '"night-shift"' in html.unescape(refused.content.decode())  # who to ask


def test_a_superuser_holds_every_action(django_user_model):
    root = django_user_model.objects.create_superuser(username="root", password="pw")

    assert all(holds(root, perm) for perm in (WORK_CONTROL, ROUTED_CONTROL, ROUTED_AMEND_LIMITS))
