"""The Work list's column chooser: stored per user, a form POST; by default every
column but Source, Executor and Created (issue 34: the default list and its row
actions fit a 1280 px window)."""

from __future__ import annotations

import re

from django.test import Client

from console.saved.models import Preference
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB


def headers(client, path="/", **extra):
    html = client.get(path, **extra).content.decode()
    head = re.search(r"<thead>(.*?)</thead>", html, re.S).group(1)
    return [
        re.sub(r"<[^>]+>|[↑↓]", "", h).strip()
        for h in re.findall(r"<th[^>]*>(.*?)</th>", head, re.S)
    ]


ALL = ["Work", "State", "Last attempt", "Kind", "Scope", "Source", "Executor", "Created", "Updated"]
DEFAULT = ["Work", "State", "Last attempt", "Kind", "Scope", "Updated"]


def test_a_user_who_never_chose_sees_the_default_columns(as_bob):
    f.work("w1")

    assert headers(as_bob) == DEFAULT


def test_hidden_columns_stay_hidden_for_that_user_only_polls_included(as_bob, alice):
    f.work("w1")
    response = as_bob.post(
        "/preferences/columns", {"show": ["state", "kind"], "next": "/?kind=billing.charge"}
    )

    assert (response.status_code, response["Location"]) == (302, "/?kind=billing.charge")
    assert headers(as_bob) == ["Work", "State", "Kind"]
    # A poll re-renders the rows: the choice holds there too.
    poll = headers(as_bob, "/?stamp=stale", headers={"HX-Request": "true"})
    assert poll == ["Work", "State", "Kind"]
    other = Client()
    other.force_login(alice)
    # An operator's list adds the select-all and actions columns around them.
    assert [h for h in headers(other) if h] == [*DEFAULT, "Actions"]
    assert Preference.objects.get().hidden_work_columns == [
        "created",
        "executor",
        "last",
        "scope",
        "source",
        "updated",
    ]


def test_ticking_every_column_again_brings_them_back(as_bob):
    f.work("w1")
    as_bob.post("/preferences/columns", {"show": []})
    assert headers(as_bob) == ["Work"]

    as_bob.post(
        "/preferences/columns",
        {"show": ["state", "last", "kind", "scope", "source", "executor", "created", "updated"]},
    )
    assert headers(as_bob) == ALL


def test_it_refuses_an_unknown_column_and_an_outside_next(as_bob):
    assert as_bob.post("/preferences/columns", {"show": ["kind", "nope"]}).status_code == 400
    assert not Preference.objects.exists()
    response = as_bob.post("/preferences/columns", {"show": ["kind"], "next": "//evil.example/"})
    assert response["Location"] == "/"
