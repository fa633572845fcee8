"""console.paths builds the URLs of one ID from a reversed prefix: it must spell every
ID exactly as reverse() does (percent-encoding, the converter's "~" for dot segments),
under any script prefix, and refuse what reverse() refuses."""

from __future__ import annotations

import pytest
from django.urls import NoReverseMatch, reverse, set_script_prefix

from console.actions.routed import WORKFLOW_ACTIONS
from console.paths import ID_URLS, id_url

AWKWARD = [
    "0193a4f2-9c1e-7d3b-8f00-1234",
    "a b",
    "100%",
    "a?b#c",
    "x/../y",
    "..",
    ".",
    "~tilde",
    "a//b/",
    "/leading",
    "quote'\"<&>",
    "caf\u00e9-\u65e5\u672c",
    "rtl\u202egnp.exe",
    "+!$&'()*,;=:@",
]


@pytest.mark.parametrize("name", sorted(ID_URLS))
def test_it_spells_every_id_as_reverse_does(name: str) -> None:
    for value in AWKWARD:
        expected = reverse(name, kwargs={ID_URLS[name]: value})
        assert id_url(name, value) == expected, value


def test_each_routed_workflow_action_has_its_own_route_and_prefix() -> None:
    for action in WORKFLOW_ACTIONS:
        expected = reverse(action.url_name, kwargs={"workflow_id": "wf 1"})
        assert expected.startswith(f"/routed/actions/{action.value}/")
        assert id_url(action.url_name, "wf 1") == expected


def test_it_follows_the_script_prefix_of_the_request() -> None:
    try:
        set_script_prefix("/console/")
        assert id_url("work_detail", "a b") == "/console/works/a%20b"
        assert id_url("work_detail", "a b") == reverse("work_detail", kwargs={"work_id": "a b"})
    finally:
        set_script_prefix("/")
    assert id_url("work_detail", "a b") == "/works/a%20b"


@pytest.mark.parametrize("value", ["", "line\nbreak"])
def test_it_refuses_what_reverse_refuses(value: str) -> None:
    with pytest.raises(NoReverseMatch):
        reverse("work_detail", kwargs={"work_id": value})
    with pytest.raises(NoReverseMatch):
        id_url("work_detail", value)
