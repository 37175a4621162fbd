"""Secrets taken out of what sim writes, and looked for in what others wrote, in decoded text: each JSON
string on its own (no escape such as `\\n` or `\\u0073` hides a credential), each line of JSON Lines
(batch output) decoded the same way, fields declared base64 decoded, and streamed text joined across the
chunks that carry it (a key split over `"RKE"`, `"Dorg1"` is still a key)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any

from sim.cassette.secrets import CREDENTIAL_PATTERNS, credentials_in, known_secrets_pattern, scrub_text
from sim.cassette.stored_body import sse_lines
from sim.core.json_text import loads
from sim.wire.registry import CODECS

_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _walk(value: Any, text: Callable[[str], str]) -> Any:
    """`value` with `text` applied to every string in it, keys included (JSON depth is bounded)."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {text(k) if isinstance(k, str) else k: _walk(v, text) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(item, text) for item in value]
    return value


def _events(lines: list[str]) -> dict[int, Any]:
    """The JSON payload of each `data:` line, by line number."""
    found = {}
    for number, line in enumerate(lines):
        if line.startswith("data:"):
            try:
                found[number] = loads(line[5:].strip())
            except ValueError:
                continue
    return found


def _joined_streams(events: Iterable[Any]) -> dict[Hashable, list[tuple[dict[str, Any], str]]]:
    """Every streamed text, as the places holding its pieces, in order."""
    streams: dict[Hashable, list[tuple[dict[str, Any], str]]] = defaultdict(list)
    for event in events:
        for codec in CODECS.values():  # how each API streams text, so a stream can be read as a whole
            for which, holder, key in codec.stream_text_pieces(event):
                streams[(codec.api, which)].append((holder, key))
    return streams


def is_event_stream_text(text: str, content_type: str = "") -> bool:
    """Whether a body is server-sent events: by its content type, else by its lines (any of them, however
    many keep-alive comments come first)."""
    if "text/event-stream" in content_type.lower():
        return True
    return any(line.startswith("data:") for line in sse_lines(text))


BASE64_FIELDS = frozenset({"b64_json"})
"""Fields whose text is base64 by the API's definition (an image's `b64_json`; audio's `data`, below)."""


def _base64_text(value: str) -> str | None:
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


class Scrubber:
    """Takes the known secrets (the live key, account ids) and anything shaped like a credential out of
    headers, URLs, JSON values and bodies."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._known = known_secrets_pattern(secrets)

    def text(self, text: str) -> str:
        """Plain decoded text, scrubbed."""
        return scrub_text(text, self._known)

    def value(self, value: Any) -> Any:
        """A JSON value with every string in it scrubbed, and every field declared base64 scrubbed in what
        it decodes to."""
        return self._decoded(_walk(value, self.text))

    def _decoded(self, value: Any, parent: str | None = None) -> Any:
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                declared = key in BASE64_FIELDS or (key == "data" and parent == "audio")
                if declared and isinstance(item, str) and (decoded := _base64_text(item)) is not None:
                    clean = self.text(decoded)
                    item = item if clean == decoded else base64.b64encode(clean.encode()).decode()
                out[key] = self._decoded(item, key)
            return out
        if isinstance(value, list):
            return [self._decoded(item, parent) for item in value]
        return value

    def binary(self, data: bytes) -> bytes:
        """Bytes that are not text, with each credential-shaped run of ASCII in them replaced by one of the
        same length (so that offsets in the data stay where they were)."""
        text = data.decode("latin-1")  # one character a byte, both ways
        patterns = [*([self._known] if self._known is not None else []), *CREDENTIAL_PATTERNS.values()]
        for pattern in patterns:
            text = pattern.sub(lambda found: "*" * len(found[0]), text)
        return text.encode("latin-1")

    def lines(self, text: str) -> str:
        """Text that is not one JSON document: each line that is JSON (JSON Lines, as batch output is)
        scrubbed as a JSON value, every other line as text."""
        parts = _LINE_BREAK.split(text)
        lines = parts[::2]
        for number, line in enumerate(lines):
            try:
                value = loads(line)
            except ValueError:
                lines[number] = self.text(line)
                continue
            clean = self.value(value)
            if clean != value:
                lines[number] = _compact(clean)
        parts[::2] = lines
        return "".join(parts)

    def holds_secret(self, text: str) -> bool:
        """Whether `text` holds a known secret where `text` (the method) would find one."""
        return self._known is not None and self._known.search(text) is not None

    def stream(self, text: str) -> str:
        """An event stream: each streamed text scrubbed as a whole (the cleaned text then stands in its
        first piece, the other pieces left empty), every event scrubbed, and only changed lines rewritten."""
        parts = _LINE_BREAK.split(text)
        lines = parts[::2]
        events = _events(lines)
        touched: set[int] = set()
        holders = {id(holder): number for number, event in events.items() for holder in _dicts(event)}
        for places in _joined_streams(events.values()).values():
            whole = "".join(holder[key] for holder, key in places)
            clean = self.text(whole)
            if clean != whole:
                for position, (holder, key) in enumerate(places):
                    holder[key] = clean if position == 0 else ""
                    touched.add(holders[id(holder)])
        for number, line in enumerate(lines):
            if number in events:
                clean_event = self.value(events[number])
                if number in touched or clean_event != events[number]:
                    lines[number] = "data: " + _compact(clean_event)
            else:
                lines[number] = self.text(line)
        parts[::2] = lines
        return "".join(parts)


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _dicts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _dicts(item)


def decoded_texts(body: str) -> Iterator[str]:
    """What a body says, decoded, for the audit: each JSON string (and what a base64 field decodes to); for
    a stream, each event's strings and each streamed text joined; else each line, decoded when it is
    JSON."""
    try:
        value = loads(body)
    except ValueError:
        if not is_event_stream_text(body):
            for line in sse_lines(body):
                try:
                    yield from _strings(loads(line))
                except ValueError:
                    yield line
            return
        lines = sse_lines(body)
        events = _events(lines)
        yield from (line for number, line in enumerate(lines) if number not in events)
        for event in events.values():
            yield from _strings(event)
        for places in _joined_streams(events.values()).values():
            yield "".join(holder[key] for holder, key in places)
        return
    yield from _strings(value)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            if key in BASE64_FIELDS and isinstance(item, str) and (decoded := _base64_text(item)) is not None:
                yield decoded
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def credentials_in_body(body: str) -> list[str]:
    """The kinds of credential a body holds, in decoded text (streams joined)."""
    found: dict[str, None] = {}
    for text in decoded_texts(body):
        found.update(dict.fromkeys(credentials_in(text)))
    return list(found)
