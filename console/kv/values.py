"""A KV value as the inspector shows it: its bytes as UTF-8 JSON, indented; else as
UTF-8 text when every character prints (line breaks and tabs too); else as hex, 16
bytes a line. Long values are cut (``TEXT_MAX`` characters, ``HEX_MAX`` bytes) and
say so. A row shows a value's first lines (``head``) and folds the rest away in a
``<details>``, so a long value neither makes its row tall nor needs a scrolling box
(which a keyboard could not scroll). Values are at most 64 KiB
(``storage.KV_VALUE_LIMIT``), so decoding one whole costs little; the template
escapes what this returns and ``visible`` marks any control or bidi character left in
text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

TEXT_MAX = 4000  # characters of JSON or text shown
HEX_MAX = 512  # bytes shown as hex
HEAD_LINES = 8  # a row's first lines ...
HEAD_CHARS = 600  # ... and at most this many characters of them
_LAYOUT = frozenset("\n\r\t")  # shown as they are (a CR marked by `visible`)

Form = Literal["json", "text", "hex", "empty"]


@dataclass(frozen=True, slots=True)
class Shown:
    form: Form
    head: str  # what the row shows
    rest: str  # what its "more" folds away, after the head's last line break
    size: int  # the value's bytes
    whole: int  # characters (bytes for hex) of the whole rendering
    cut: bool  # head + rest is only the start of it

    @property
    def shown(self) -> int:
        """Of ``whole``, how much head + rest hold (when ``cut``)."""
        return HEX_MAX if self.form == "hex" else TEXT_MAX

    @property
    def more_lines(self) -> int:
        return self.rest.count("\n") + 1 if self.rest else 0


def _strict(name: str) -> object:
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity: Python's, not JSON's


def show(value: bytes) -> Shown:
    if not value:
        return Shown("empty", "", "", 0, 0, False)
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None:
        try:
            data = json.loads(text, parse_constant=_strict)
            # Keys in their stored order: the inspector shows what was written.
            pretty = json.dumps(data, indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):  # deep nesting is text, not a crash
            pretty = None
        if pretty is not None:
            return _folded("json", pretty, len(value), len(pretty))
        if all(c.isprintable() or c in _LAYOUT for c in set(text)):
            return _folded("text", text, len(value), len(text))
    lines = [value[i : i + 16].hex(" ") for i in range(0, min(len(value), HEX_MAX), 16)]
    return _folded("hex", "\n".join(lines), len(value), len(value))


def _folded(form: Form, text: str, size: int, whole: int) -> Shown:
    cut = len(text) > TEXT_MAX if form != "hex" else whole > HEX_MAX
    text = text[:TEXT_MAX]
    # The first HEAD_LINES lines (the rest starts after their line break), or fewer
    # characters when they are long.
    end = -1
    for _ in range(HEAD_LINES):
        end = text.find("\n", end + 1)
        if end < 0:
            end = len(text)
            break
    end = min(end, HEAD_CHARS)
    return Shown(form, text[:end], text[end:].removeprefix("\n"), size, whole, cut)
