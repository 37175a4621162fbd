"""Reading any vcrpy cassette liberally: gzip `!!binary` bodies, `parsed_body`, python-tagged header keys
(read as text, never executed), scalar header values, stale content-length, SSE bodies."""

from __future__ import annotations

import contextlib
import functools
import gc
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from sim.cassette.compact import (
    Compactor,
    Extension,
    Rebuilder,
    TooMuchRebuilt,
    appended_items,
    checked_reference,
    list_end,
)
from sim.cassette.stored_body import MAX_BODY_BYTES, BodyTooLarge, body_bytes, decompress, sse_lines
from sim.core.errors import CassetteError
from sim.core.json_text import loads
from sim.scenario.user_files import FileRefused, opened, read_text
from sim.scenario.yaml_source import YamlLoader, YamlTooLarge, check_limits, may_alias, yaml_problem
from sim.wire.registry import Codec, codec_for


class _CassetteLoader(YamlLoader):
    """The safe loader, plus python tags read as plain data instead of being executed."""


def _python_tag(loader: yaml.Loader, suffix: str, node: yaml.Node) -> Any:
    # e.g. !!python/object/apply:multidict._multidict.istr [Accept] is a case-insensitive str: keep the text
    if isinstance(node, yaml.SequenceNode):
        items = loader.construct_sequence(node, deep=True)
        return items[0] if len(items) == 1 and isinstance(items[0], str) else items
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


_CassetteLoader.add_multi_constructor("tag:yaml.org,2002:python/", _python_tag)


Headers = dict[str, list[str]]
"""Header names lower-cased, each with its values."""


def _headers(raw: Any) -> Headers:
    if not isinstance(raw, Mapping):
        return {}
    headers: Headers = {}
    for name, values in raw.items():
        listed = values if isinstance(values, list) else [values]
        headers.setdefault(str(name).lower(), []).extend(str(v) for v in listed)
    return headers


@dataclass(frozen=True, slots=True)
class Extended:
    """A compact request body: the `base` request's body with `add` inserted at character `at`."""

    index: int
    """The interaction it is the request of."""
    base: RecordedRequest
    base_index: int
    at: int
    add: str
    tail: str | None
    """The base body from `at` on, shared along a chain of requests that each append to the one before
    (None when not known without rebuilding the base): what replay matches without rebuilding."""
    rebuilder: Rebuilder
    """The file's rebuilder (the newest rebuilt bodies kept, the total bounded)."""
    path: Path


@dataclass(frozen=True)
class RecordedRequest:
    """A recorded request; `body` is the bytes sent (rebuilt as JSON from a `parsed_body`, and from the
    request it extends in a compact cassette)."""

    method: str
    uri: str
    headers: Headers
    stored_body: bytes | None
    extended: Extended | None = None
    plain_growth: PlainGrowth | None = field(default=None, compare=False, repr=False)
    """The file's finder of plain bodies that append to an earlier one (as a compact body would)."""

    @property
    def path(self) -> str:
        """The URL path, e.g. `/v1/chat/completions`."""
        return urlsplit(self.uri).path

    @property
    def body(self) -> bytes | None:
        """The body as sent (a compact one rebuilt: not kept, ask once)."""
        return self.stored_body if self.extended is None else (self.text or "").encode("utf-8")

    @functools.cached_property
    def _stored_text(self) -> str | None:
        return None if self.stored_body is None else self.stored_body.decode("utf-8", errors="replace")

    @property
    def text(self) -> str | None:
        """The body as text; a compact one rebuilt from the nearest request on its chain whose text is at
        hand (the newest rebuilt are kept, so reading requests in order rebuilds each from the one
        before); `CassetteError` when the file's compact bodies rebuild into too much in all."""
        if self.extended is None:
            return self._stored_text
        try:
            return self.extended.rebuilder.text(self.extended.index)
        except TooMuchRebuilt as error:
            raise CassetteError(f"{self.extended.path}: {error}") from None

    @property
    def written(self) -> Any:
        """The body as the file writes it: its text, its compact reference, or None for no text body."""
        if self.extended is None:
            return self._stored_text
        return Extension(self.extended.base_index, self.extended.at, self.extended.add).data()

    @property
    def appended(self) -> Appended | None:
        """What the body appends to an earlier request's conversation list (`messages`, `input`), the rest
        of the body unchanged, as JSON items: a compact body's addition, or a plain body that is an
        earlier one's text with items inserted after its list's last item (as `sim compact` would write
        it); None when it is no such extension."""
        if self.extended is None:
            if self.plain_growth is not None and "appended" not in self.__dict__:
                self.plain_growth.find()
        else:
            _ = self.list_end
        return self.__dict__.get("appended")

    @functools.cached_property
    def list_end(self) -> int | None:
        """Where the last item of the body's conversation list ends, when known without rebuilding it
        (worked out along the chain of requests it extends, once each)."""
        chain: list[RecordedRequest] = []
        request: RecordedRequest = self
        while request.extended is not None and "list_end" not in request.__dict__:
            chain.append(request)
            request = request.extended.base
        end = list_end(request._stored_text or "") if request is self else request.list_end  # cached
        for step in reversed(chain):
            extended = step.extended
            assert extended is not None
            items = appended_items(extended.add) if extended.at == end else None
            step.__dict__["appended"] = None if items is None else Appended(extended.base, items)
            exact = items is not None and extended.add == extended.add.rstrip()
            end = extended.at + len(extended.add) if exact else None
            step.__dict__["list_end"] = end
        return end

    @functools.cached_property
    def characters(self) -> int:
        """The body's length in characters (what a compact `at` counts), known without rebuilding a
        compact one."""
        added = 0
        request: RecordedRequest = self
        while request.extended is not None and "characters" not in request.__dict__:
            added += len(request.extended.add)
            request = request.extended.base
        known = request.__dict__.get("characters")
        return added + (known if known is not None else len(request.text or ""))

    @functools.cached_property
    def size(self) -> int:
        """The body's length in bytes, known without rebuilding a compact one."""
        added = 0
        request: RecordedRequest = self
        while request.extended is not None and "size" not in request.__dict__:
            added += len(request.extended.add.encode("utf-8"))
            request = request.extended.base
        known = request.__dict__.get("size")
        return added + (known if known is not None else len(request.stored_body or b""))

    def json(self) -> Any:
        """The body parsed as JSON, or None when it is not JSON."""
        return _json_or_none(self.body)


@dataclass(frozen=True, slots=True)
class Appended:
    """A request (compact, or plain) that appends items to its base request's conversation list and
    changes nothing else: readers continue the base's conversation with the items, never rebuilding or
    parsing the whole body."""

    base: RecordedRequest
    items: list[Any]


class PlainGrowth:
    """Finds, once for a whole file, which plain request bodies are an earlier body with items appended
    to its conversation list (each request of a session repeats the one before): readers then take what
    such a request adds from its items alone, never parsing the whole conversation it repeats again."""

    def __init__(self, interactions: list[RecordedInteraction]) -> None:
        self._interactions = interactions
        self._found = False

    def find(self) -> None:
        """Sets each plain request's `appended` (None when it appends to none)."""
        if self._found:
            return
        self._found = True
        compactor = Compactor()
        for interaction in self._interactions:
            request = interaction.request
            if interaction.codec is None or request.extended is not None or request.stored_body is None:
                continue
            text = request.stored_body.decode("utf-8", errors="replace")
            growth = compactor.grows(interaction.index, request.method, request.path, text)
            appended = None
            if growth is not None:
                extension, items = growth
                appended = Appended(self._interactions[extension.base].request, items)
            request.__dict__["appended"] = appended


@dataclass(frozen=True, slots=True)
class RecordedResponse:
    """A recorded response; `body` is decompressed."""

    status: int
    reason: str
    headers: Headers
    body: bytes
    stored_size: int = 0
    """The body's size as stored in the cassette (compressed, when it was)."""
    compressed: bool = False
    """Whether the body was stored compressed."""

    @property
    def is_event_stream(self) -> bool:
        """Whether the body is server-sent events."""
        content_type = ",".join(self.headers.get("content-type", []))
        return "text/event-stream" in content_type or self.body.lstrip().startswith(b"data:")

    def json(self) -> Any:
        """The body parsed as JSON, or None when it is not JSON."""
        return _json_or_none(self.body)

    def events(self) -> list[Any]:
        """The JSON payload of each `data:` event of a stream, without the closing `[DONE]`."""
        payloads = []
        for line in sse_lines(self.body.decode("utf-8", errors="replace")):
            if line.startswith("data:"):
                data = line[5:].strip()
                if data and data != "[DONE]":
                    payloads.append(loads(data))
        return payloads


@dataclass(frozen=True, slots=True)
class RecordedInteraction:
    """One request and its response."""

    index: int
    request: RecordedRequest
    response: RecordedResponse

    def calls(self, endpoint: str) -> bool:
        """Whether this is a POST to `endpoint` (`/chat/completions`, `/responses`) of any host: OpenAI's,
        Azure's or a compatible one."""
        return self.request.method == "POST" and self.request.path.rstrip("/").endswith(endpoint)

    @property
    def codec(self) -> Codec | None:
        """The codec of the API this interaction calls (a POST to Chat Completions or the Responses API, of
        any host), or None when it is no model call."""
        return codec_for(self.request.path) if self.request.method == "POST" else None

    @property
    def is_model_call(self) -> bool:
        """Whether this is a POST to Chat Completions or the Responses API."""
        return self.codec is not None


@dataclass(frozen=True, slots=True)
class Cassette:
    """A cassette's interactions and, when sim recorded it, its `sim:` block."""

    path: Path
    interactions: tuple[RecordedInteraction, ...]
    sim: Mapping[str, Any] | None = field(default=None)
    version: Any = 1
    """The format version vcrpy writes last (`1`); a file without it was cut short or not vcrpy's."""
    compact: bool = False
    """Whether request bodies may extend earlier ones (`sim compact`); `sim expand` writes them in full."""


MAX_CASSETTE_BYTES = 512 * 1024 * 1024
"""The largest cassette file read (four times a plain 1,000-turn session; parsed, a file takes several
times its size; `sim compact` writes long sessions tens of times smaller)."""


def load_data(path: Path) -> Any:
    """A cassette file's data as YAML gives it (limits checked), for tools that rewrite the file."""
    try:
        text = read_text(path, MAX_CASSETTE_BYTES, "a cassette")
    except FileRefused as error:
        raise CassetteError(str(error)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise CassetteError(f"{path}: cannot read: {error}") from error
    with collector_paused():
        return _load(path, text)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused: reading builds hundreds of thousands of acyclic objects, and
    each full collection would walk all of them again (reading a 4,000-turn cassette took 3 times as long)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_cassette(path: Path | str) -> Cassette:
    """Read any vcrpy cassette; `CassetteError` saying where when it cannot be read."""
    with collector_paused():
        return _read_cassette(Path(path))


def _read_cassette(path: Path) -> Cassette:
    data = load_data(path)
    if not isinstance(data, Mapping) or not isinstance(data.get("interactions"), list):
        raise CassetteError(f"{path}: not a vcrpy cassette (no `interactions` list)")
    interactions: list[RecordedInteraction] = []
    rebuilder = Rebuilder(lambda index: interactions[index].request.written)
    growth = PlainGrowth(interactions)
    for index, raw in enumerate(data["interactions"]):
        try:
            interactions.append(_interaction(path, index, raw, interactions, rebuilder, growth))
        except BodyTooLarge as error:
            raise CassetteError(f"{path}: interaction {index}: {error}") from None
        except (KeyError, TypeError, ValueError, OSError, EOFError) as error:
            raise CassetteError(f"{path}: interaction {index}: cannot read it: {error}") from None
    sim = data.get("sim")
    compact = isinstance(sim, Mapping) and sim.get("compact") is True
    if isinstance(sim, Mapping):  # `compact` says how the file is written, not how the session was recorded
        sim = {key: value for key, value in sim.items() if key != "compact"} or None
    return Cassette(
        path, tuple(interactions), sim if isinstance(sim, Mapping) else None, data.get("version"), compact
    )


def _load(path: Path, text: str) -> Any:
    """The document's data, after the limits on nesting and alias expansion were checked on its nodes."""
    loader = _CassetteLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        if may_alias(text):
            check_limits(root)
        return loader.construct_document(root)  # python tags are read as data, never run
    except (YamlTooLarge, yaml.YAMLError) as error:
        raise CassetteError(yaml_problem(path, error, text)) from None
    except RecursionError:
        raise CassetteError(f"{path}: nested deeper than can be read") from None
    finally:
        loader.dispose()


def _mapping(raw: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise TypeError(f"`{what}` must be a mapping, not {type(raw).__name__}")
    return raw


def _extended(
    path: Path,
    index: int,
    reference: Mapping[str, Any],
    earlier: list[RecordedInteraction],
    rebuilder: Rebuilder,
) -> Extended:
    """A compact body's reference, checked: an earlier interaction with a text body, an offset in it."""

    def length_of(base: int) -> int | None:
        request = earlier[base].request
        return None if request.stored_body is None and request.extended is None else request.characters

    checked = checked_reference(index, reference, length_of)
    request, at, add = earlier[checked.base].request, checked.at, checked.add
    tail: str | None
    if request.size + len(add) > MAX_BODY_BYTES:  # a chain of references must not rebuild into a bomb
        raise BodyTooLarge("rebuilds")
    if request.extended is None:
        tail = (request.text or "")[at:]
    elif at == request.extended.at + len(request.extended.add):
        tail = request.extended.tail
    else:
        tail = None
    return Extended(index, request, checked.base, at, add, tail, rebuilder, path)


def _interaction(
    path: Path,
    index: int,
    raw: Any,
    earlier: list[RecordedInteraction],
    rebuilder: Rebuilder,
    growth: PlainGrowth,
) -> RecordedInteraction:
    raw = _mapping(raw, "interactions[]")
    request = _mapping(raw.get("request"), "request")
    response = _mapping(raw.get("response"), "response")
    if "uri" not in request:
        raise ValueError("the request has no `uri`")
    body = request.get("body")
    if "parsed_body" in request:
        body = request["parsed_body"]
    compact = isinstance(body, Mapping) and "extends" in body
    extended = (
        _extended(path, index, body, earlier, rebuilder) if compact and isinstance(body, Mapping) else None
    )
    status = response.get("status", {})
    response_body = (
        body_bytes(response["parsed_body"] if "parsed_body" in response else response.get("body")) or b""
    )
    return RecordedInteraction(
        index,
        RecordedRequest(
            method=str(request.get("method", "GET")).upper(),
            uri=str(request["uri"]),
            headers=_headers(request.get("headers")),
            stored_body=None if extended else body_bytes(body),
            extended=extended,
            plain_growth=growth,
        ),
        RecordedResponse(
            status=int(status.get("code", 200)) if isinstance(status, Mapping) else int(status),
            reason=str(status.get("message", "")) if isinstance(status, Mapping) else "",
            headers=_headers(response.get("headers")),
            body=(body_text := decompress(response_body)),
            stored_size=len(response_body),
            compressed=body_text != response_body,
        ),
    )


def _json_or_none(body: bytes | None) -> Any:
    if not body:
        return None
    try:
        return loads(body)
    except ValueError:
        return None


_INTERACTIONS = b"\ninteractions:"
_PIECE = 1 << 20


def looks_like_cassette(path: Path) -> bool:
    """Whether a YAML file is a cassette (it has a top-level `interactions:`) rather than a scenario, its
    first `MAX_CASSETTE_BYTES` read a piece at a time; a larger file is taken for one (whose reader refuses
    it), what is no regular file for none (the scenario's reader refuses it)."""
    try:
        with opened(path) as file:
            if os.fstat(file.fileno()).st_size > MAX_CASSETTE_BYTES:
                return True
            tail, left = b"\n", MAX_CASSETTE_BYTES
            while left > 0 and (piece := file.read(min(_PIECE, left))):
                if _INTERACTIONS in tail + piece:
                    return True
                tail, left = piece[1 - len(_INTERACTIONS) :], left - len(piece)
    except (OSError, FileRefused):
        return False
    return False
