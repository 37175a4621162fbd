"""How text sim did not write (a recording, a scenario, a client's request, a live reply) is shown: on a
terminal, in JSON, in HTML. A character that acts or hides is written out, so that what is shown is what
is there: controls (an escape sequence sets a title or erases a line; a newline forges a line of output),
format characters (bidi overrides turn text around; zero-width spaces, LRM/RLM and soft hyphens make
`she\u200bll` look like `shell`), line and paragraph separators, surrogates, unassigned and private code
points: every character Python does not call printable, but spaces."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

_NOT_PLAIN = re.compile(r"[^\x20-\x7e]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def unseen(char: str) -> bool:
    """Whether `char` acts on what is shown, or shows nothing (not printable, and not a space)."""
    return not char.isprintable() and unicodedata.category(char) != "Zs"


def _written(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str) -> str:
    """`text` for a terminal or a page: each unseen character written out as Python writes it (`\\x1b`,
    `\\u200b`, `\\n`), so that it can be printed without acting on it or hiding in it."""
    if text.isascii() and text.isprintable():
        return text
    return _NOT_PLAIN.sub(lambda match: _written(match[0]) if unseen(match[0]) else match[0], text)


def _json_escaped(char: str) -> str:
    if char == "\n":  # json.dumps escapes a newline in a string: a raw one is the indentation's
        return char
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(data: Any, indent: int | None = None) -> str:
    """`data` as JSON that says every character it holds (not ASCII-only), its unseen characters escaped
    as `\\uXXXX` (json.dumps leaves U+2028, U+202E, C1 controls and the like raw); it reads back the same."""
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    if text.isascii() and text.replace("\n", "").isprintable():
        return text
    return _NOT_PLAIN.sub(lambda match: _json_escaped(match[0]) if unseen(match[0]) else match[0], text)
