"""Writing cassettes: vcrpy's format with readable bodies, no secrets, and no half-written file ever."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sim.cassette.compact import compacted
from sim.cassette.scrubbing import Scrubber, is_event_stream_text
from sim.cassette.secrets import SECRET_HEADERS, STALE_HEADERS
from sim.cassette.stored_body import decompress
from sim.core.errors import CassetteError
from sim.core.json_text import loads


@dataclass(frozen=True, slots=True)
class HttpExchange:
    """One HTTP request and its response, as captured."""

    method: str
    uri: str
    request_headers: Mapping[str, list[str]]
    request_body: bytes | None
    status: int
    reason: str
    response_headers: Mapping[str, list[str]]
    response_body: bytes


def exchange_from_vcr(request: Any, response: Mapping[str, Any]) -> HttpExchange:
    """One interaction as vcrpy captured it: its `Request` and its response as a dict."""
    body = request.body
    status = response.get("status", {})
    return HttpExchange(
        method=request.method,
        uri=request.uri,
        request_headers={str(k): [str(v)] for k, v in request.headers.items()},
        request_body=body.encode() if isinstance(body, str) else body,
        status=int(status.get("code", 200)),
        reason=str(status.get("message", "")),
        response_headers={str(k): [str(v) for v in vs] for k, vs in response.get("headers", {}).items()},
        response_body=_bytes(response.get("body", {}).get("string", b"")),
    )


def exchanges_from_vcr(cassette_dict: Mapping[str, Any]) -> list[HttpExchange]:
    """The interactions vcrpy captured (its `{"requests": [...], "responses": [...]}`)."""
    pairs = zip(cassette_dict["requests"], cassette_dict["responses"], strict=True)
    return [exchange_from_vcr(request, response) for request, response in pairs]


def _bytes(value: Any) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value or b"")


def readable(body: bytes, scrubber: Scrubber, content_type: str = "") -> str | bytes:
    """A body as text a person can read, scrubbed: decompressed, JSON laid out by `json_lines`, an event
    stream (by its content type or its lines) scrubbed as whole streamed texts, else UTF-8 scrubbed line by
    line (each JSON line decoded). A body that is not UTF-8 text (audio, an image) is kept as it came,
    bytes (vcrpy's `!!binary`), with any credential in it blanked out byte for byte."""
    raw = decompress(body)
    try:
        return json_lines(scrubber.value(loads(raw)))
    except ValueError:
        pass
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return scrubber.binary(raw)
    return scrubber.stream(text) if is_event_stream_text(text, content_type) else scrubber.lines(text)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def json_lines(value: Any) -> str:
    """JSON a person can read that stays small when a request carries a long history: an object's keys one
    per line, and a list of objects (`messages`, `tools`, `choices`) one compact object per line.

    Dropping each line's indentation gives back the compact JSON (see `without_layout`)."""
    if not isinstance(value, dict) or not value:
        return _compact(value)
    lines = []
    for key, item in value.items():
        if isinstance(item, list) and item and all(isinstance(element, dict) for element in item):
            elements = ",\n".join(f"    {_compact(element)}" for element in item)
            lines.append(f"  {json.dumps(key, ensure_ascii=False)}:[\n{elements}\n  ]")
        else:
            lines.append(f"  {json.dumps(key, ensure_ascii=False)}:{_compact(item)}")
    return "{\n" + ",\n".join(lines) + "\n}"


def without_layout(text: str) -> str:
    """The compact JSON that `json_lines` laid out (JSON strings hold no raw line breaks, so every line
    break and indentation is layout); other text comes back as other text."""
    return "".join(line.strip() for line in text.split("\n")) if "\n" in text else text


def _content_type(headers: Mapping[str, list[str]]) -> str:
    return ",".join(
        value for name, values in headers.items() if name.lower() == "content-type" for value in values
    )


def _headers(headers: Mapping[str, list[str]], scrubber: Scrubber) -> dict[str, list[str]]:
    kept = {}
    for name, values in headers.items():
        lowered = name.lower()
        if lowered not in SECRET_HEADERS and lowered not in STALE_HEADERS:
            kept[name] = [scrubber.text(value) for value in values]
    return kept


def interaction_data(exchange: HttpExchange, scrubber: Scrubber) -> dict[str, Any]:
    """One exchange as the file writes it: vcrpy's layout, bodies readable, secrets gone; `ValueError` or
    `OSError` when a body cannot be written."""
    request: dict[str, Any] = {
        "body": None if exchange.request_body is None else readable(exchange.request_body, scrubber),
        "headers": _headers(exchange.request_headers, scrubber),
        "method": exchange.method,
        "uri": scrubber.text(exchange.uri),
    }
    kind = _content_type(exchange.response_headers)
    response = {
        "body": {"string": readable(exchange.response_body, scrubber, kind)},
        "headers": _headers(exchange.response_headers, scrubber),
        "status": {"code": exchange.status, "message": exchange.reason},
    }
    return {"request": request, "response": response}


def _interactions(exchanges: Iterable[HttpExchange], scrubber: Scrubber) -> Iterator[dict[str, Any]]:
    for number, exchange in enumerate(exchanges):
        try:
            yield interaction_data(exchange, scrubber)
        except (ValueError, OSError) as error:
            raise CassetteError(f"interaction {number}: cannot be written: {error}") from None


_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _ReadableDumper(_BaseDumper):  # type: ignore[misc]
    """Multi-line text as `|` blocks, so that bodies read as they were sent (libyaml's emitter if present)."""

    def ignore_aliases(self, data: Any) -> bool:
        """Never anchors and aliases: a value used twice is written twice (readers refuse alias bombs)."""
        return True


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ReadableDumper.add_representer(str, _text)


def to_yaml(data: Mapping[str, Any]) -> str:
    """The cassette as YAML text."""
    return yaml.dump(dict(data), Dumper=_ReadableDumper, sort_keys=False, allow_unicode=True, width=110)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _temporary_beside(path: Path) -> tuple[int, str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)


def _replace(temporary: str, path: Path) -> None:
    os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it private; a cassette is an ordinary file
    os.replace(temporary, path)
    try:  # the new name on disk too, not only the text (what it replaces may be removed next: a journal)
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(folder)
    except OSError:
        pass  # a file system that cannot sync a folder has nothing more to do
    finally:
        os.close(folder)


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path`: all or nothing."""
    write_pieces(path, [text])


def write_pieces(path: Path, pieces: Iterable[str], *, refuse: Callable[[str], bool] | None = None) -> int:
    """Write `pieces` one after the other into a temporary file beside `path`, fsync it, then rename it over
    `path` (and fsync the folder): all or nothing, holding one piece at a time. `CassetteError` (and no
    file) when `refuse` says a piece must not be written. The number of bytes written."""
    handle, temporary = _temporary_beside(path)
    written = 0
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            for piece in pieces:
                if refuse is not None and refuse(piece):
                    raise CassetteError(f"{path}: refusing to write a cassette that still holds a secret")
                written += file.write(piece)
            file.flush()
            os.fsync(file.fileno())
        _replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return written


def cassette_pieces(interactions: Iterable[Mapping[str, Any]], rest: Mapping[str, Any]) -> Iterator[str]:
    """A cassette's YAML text an interaction at a time, then the `rest` of its keys (`sim`, `version`): the
    same text as `to_yaml` of the whole data (but for an optional end-of-document mark)."""
    empty = True
    for interaction in interactions:
        if empty:
            yield "interactions:\n"
            empty = False
        piece = to_yaml({"interactions": [interaction]}).removeprefix("interactions:\n")
        yield piece.removesuffix("...\n")  # the end-of-document mark after a `|+` text ends the file only
    if empty:
        yield "interactions: []\n"
    yield to_yaml(dict(rest))


def write_cassette(
    path: Path,
    exchanges: Iterable[HttpExchange],
    *,
    sim: Mapping[str, Any] | None,
    secrets: tuple[str, ...],
    compact: bool = False,
) -> None:
    """Write a cassette atomically, an exchange at a time (`compact`: request bodies that extend earlier
    ones as references); `CassetteError` (and no file) if a known secret would be written."""
    scrubber = Scrubber(secrets)
    interactions: Iterable[dict[str, Any]] = _interactions(exchanges, scrubber)
    block = None if sim is None else scrubber.value(dict(sim))
    if compact:
        interactions = compacted(interactions)
        block = {**(block or {}), "compact": True}
    pieces = cassette_pieces(interactions, written_rest(block))
    write_pieces(path, pieces, refuse=scrubber.holds_secret)


def written_rest(sim: Mapping[str, Any] | None) -> dict[str, Any]:
    """What sim writes after a cassette's interactions: its `sim:` block, if any, and vcrpy's version."""
    return {"sim": sim, "version": 1} if sim is not None else {"version": 1}
