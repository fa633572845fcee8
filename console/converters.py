"""The URL converter for an opaque ID (a Work's, an Event's, a run's...).

An ID is any string of the storage identifier rule, "/" included: it takes the rest of
the path, and ``reverse()`` percent-encodes what a path cannot carry ("%", "?", "#",
spaces, non-ASCII). What encoding cannot protect is a dot segment: a browser removes
"." and ".." segments (also spelt "%2e", per the URL standard) before it sends the
request, so an ID "..", or "a/../b", would land on another page. Such a segment gets a
"~" before it, and so does any segment already starting with "~", which keeps the
spelling reversible: ".." is "~..", "~x" is "~~x", everything else is itself.

A page below an ID's page (``works/<id>/compare``) ends in a word an ID could also end
in: an ID's last segment (after a "/") spelt as such a word (``SUBPAGES``) gets the same "~", so
``/works/a/compare`` is Work "a"'s comparison and Work "a/compare" is ``/works/a/~compare``.
"""

from __future__ import annotations

_DOT_SEGMENTS = frozenset({".", ".."})
# The last path segments of routes below an ID (console/urls.py lists them first).
SUBPAGES = frozenset({"compare"})


def _escape(segment: str, last: bool = False) -> str:
    if segment in _DOT_SEGMENTS or segment.startswith("~") or (last and segment in SUBPAGES):
        return "~" + segment
    return segment


def _unescape(segment: str) -> str:
    return segment[1:] if segment.startswith("~") else segment


class IdConverter:
    regex = ".+"

    def to_python(self, value: str) -> str:
        return "/".join(_unescape(segment) for segment in value.split("/"))

    def to_url(self, value: str) -> str:
        segments = value.split("/")
        # A one-segment ID cannot be read as "<id>/compare": only a later last one.
        last = len(segments) - 1
        return "/".join(_escape(s, 0 < n == last) for n, s in enumerate(segments))
