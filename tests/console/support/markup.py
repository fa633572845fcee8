"""A page's text as a reader sees it: tags dropped, entities decoded, white space
collapsed (what the page tests assert sentences against)."""

from __future__ import annotations

import html
import re


def text_of(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
