"""The URL converter for an opaque ID (a Work's, an Event's, a run's...).

An ID is any string of the storage identifier rule, "/" included: it takes the rest of
the path, and ``reverse()`` percent-encodes what a path cannot carry ("%", "?", "#",
spaces, non-ASCII). What encoding cannot protect is a dot segment: a browser removes
"." and ".." segments (also spelt "%2e", per the URL standard) before it sends the
request, so an ID "..", or "a/../b", would land on another page. Such a segment gets a
"~" before it, and so does any segment already starting with "~", which keeps the
spelling reversible: ".." is "~..", "~x" is "~~x", everything else is itself.
"""

from __future__ import annotations

_DOT_SEGMENTS = frozenset({".", ".."})


def _escape(segment: str) -> str:
    return "~" + segment if segment in _DOT_SEGMENTS or segment.startswith("~") else segment


def _unescape(segment: str) -> str:
    return segment[1:] if segment.startswith("~") else segment


class IdConverter:
    regex = ".+"

    def to_python(self, value: str) -> str:
        return "/".join(_unescape(segment) for segment in value.split("/"))

    def to_url(self, value: str) -> str:
        return "/".join(_escape(segment) for segment in value.split("/"))
