"""User text is isolated and its control characters are shown (issue 20): a Work ID
``rtl\\u202egnp.exe`` must not display as "...exe.png" nor pull the state badge into
itself."""

import pytest
from django.template import Context, Template
from django.utils.safestring import mark_safe

from console.templatetags.console import visible
from tests.console import factories as f
from tests.console.conftest import DB

SPOOF = "rtl\u202egnp.exe"


def render(value: object) -> str:
    return Template("{% load console %}{{ value|visible }}").render(Context({"value": value}))


def test_a_bidi_override_is_shown_as_its_code_point_inside_an_isolate():
    html = render(SPOOF)

    assert "\u202e" not in html
    assert html == (
        '<bdi>rtl<span class="ctl" title="RIGHT-TO-LEFT OVERRIDE">U+202E</span>gnp.exe</bdi>'
    )


@pytest.mark.parametrize("char", ["\x00", "\r", "\x1b", "\u200b", "\u2066", "\u2028", "\ufeff"])
def test_control_and_format_characters_are_shown(char):
    assert char not in render(f"a{char}b")
    assert f"U+{ord(char):04X}" in render(f"a{char}b")


def test_right_to_left_text_is_isolated_and_escaped():
    assert render("שלום<b>") == "<bdi>שלום&lt;b&gt;</bdi>"


def test_plain_text_and_other_values_are_left_alone():
    assert render("w-1/a.b") == "w-1/a.b"
    assert render("<b>") == "&lt;b&gt;"
    assert render(12) == "12"
    assert visible(mark_safe("<span>\u202e</span>")) == "<span>\u202e</span>"


@DB
def test_the_work_pages_show_a_spoofed_id_for_what_it_is(as_bob):
    f.work(SPOOF)

    for url in ("/", "/works/rtl%E2%80%AEgnp.exe"):
        html = as_bob.get(url).content.decode()
        assert "U+202E</span>gnp.exe</bdi>" in html, url
        assert ">rtl\u202e" not in html, url


def test_line_breaks_and_tabs_stay_as_they_are():
    assert render('{\n\t"a": 1\n}') == "{\n\t&quot;a&quot;: 1\n}"
    assert render("é\nü") == "é\nü"  # left-to-right letters need no isolate
