"""What every browser journey checks of a page as it stands: axe-core's serious and
critical violations (vendored in tests/vendor/, no npm) and sideways scroll. A support
module, not a test module, so journeys share it without importing each other."""

from __future__ import annotations

import json
from pathlib import Path

AXE = Path(__file__).resolve().parents[2] / "vendor" / "axe-core" / "axe.min.js"
GRAVE = ("serious", "critical")


# What a second theme can change: colours. Each colour is light-dark(light, dark) in
# static/css/console.css and nothing else follows the theme; the other rules read the
# document, which the theme leaves alone, so the dark pass runs only these.
COLOUR_RULES = ["color-contrast", "link-in-text-block"]


def serious(page, rules: list[str] | None = None) -> list[str]:
    """axe's serious and critical violations on the page as it is now (every rule, or
    only ``rules``)."""
    if not page.evaluate("typeof window.axe === 'object'"):
        # evaluate() runs as the debugger does, outside the page's CSP.
        page.evaluate(AXE.read_text(encoding="utf-8"))
    options = {"runOnly": {"type": "rule", "values": rules}} if rules else {}
    found = page.evaluate(
        "options => axe.run(document, options).then(r => JSON.stringify(r.violations))", options
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']}; "
        + " | ".join(n["target"][0] if n["target"] else "?" for n in v["nodes"][:4])
        for v in json.loads(found)
        if v["impact"] in GRAVE
    ]


def sideways(page) -> int:
    """How many pixels the page scrolls sideways (0 when it fits its window)."""
    width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    return max(0, width - inner)


def fits_and_passes_axe(page, width: int = 360, height: int = 800) -> list[str]:
    """What is wrong with the page at ``width`` (a phone's 360 px by default) and to
    axe in the light theme and, for colours, the dark one ([] when nothing); the
    viewport is put back."""
    before = page.viewport_size
    page.set_viewport_size({"width": width, "height": height})
    px = sideways(page)
    wrong = [f"{px} px sideways at {width} px"] if px else []
    page.emulate_media(color_scheme="light")
    wrong += [f"light: {v}" for v in serious(page)]
    page.emulate_media(color_scheme="dark")
    wrong += [f"dark: {v}" for v in serious(page, COLOUR_RULES)]
    page.emulate_media(color_scheme="light")
    page.set_viewport_size(before)
    return wrong
