"""Compact cassettes: a request body written as the earlier request of its conversation that it extends,
plus only what it adds, so that a session's cassette grows with the session, not with its square.

A body is compacted when it is an earlier request's body with items appended to its conversation list
(`messages` for Chat Completions, `input` for the Responses API), text otherwise unchanged. It is then
written as

    body:
      extends: 3        # the interaction whose request body it extends
      at: 5321          # where in that body the addition goes (a character offset)
      add: |-           # the text added: the new items, one per line as the file lays them out
        ,
            {"role":"assistant",...},
            {"role":"tool",...}

and rebuilt as `base[:at] + add + base[at:]`, byte for byte. Anything else (a handoff that changes the
instructions, a request that drops messages, a body that is not JSON) stays written in full. Compacting
and expanding work on the file's data, so `expand(compact(x))` is `x` for any cassette sim writes.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sim.core.json_text import loads
from sim.wire.registry import CODECS

LISTS = tuple(codec.conversation for codec in CODECS.values())
"""The keys of a conversation's list, per API."""
FRONTIER = 16
"""Earlier requests per route that a new one is compared with."""

COMPACT_MARK = re.compile(r"^  compact: true$", re.MULTILINE)
"""How a compact file says so in its `sim:` block (cheap to look for before reading the file)."""
ONLY_COMPACT = re.compile(rb"sim:[ \t]*\r?\n  compact: true[ \t]*\r?(?:\n(?![ \t])|\Z)")
"""A `sim:` block that says only that the file is compact: the block `sim compact` (or `--compact`) gives a
cassette `sim record` did not write, which it leaves anyone's (no session, nothing for `sim replay`)."""
_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class Extension:
    """How a body extends an earlier one: `base[:at] + add + base[at:]`."""

    base: int
    at: int
    add: str

    def data(self) -> dict[str, Any]:
        """As the file writes it."""
        return {"extends": self.base, "at": self.at, "add": self.add}


def is_extension(body: Any) -> bool:
    """Whether a request's `body` value, as read from a file, is a compact reference."""
    return isinstance(body, Mapping) and "extends" in body


def list_end(text: str) -> int | None:
    """Where the last item of a JSON object's conversation list ends (just after it), when the object has
    a non-empty `messages` or `input` list; each top-level value is parsed once, at C speed."""
    position = _SPACE.match(text, 0).end()  # type: ignore[union-attr]
    if text[position : position + 1] != "{":
        return None
    position += 1
    found = None
    try:
        while True:
            position = _SPACE.match(text, position).end()  # type: ignore[union-attr]
            if text[position : position + 1] == "}":
                return found
            key, position = _DECODER.raw_decode(text, position)
            position = _SPACE.match(text, position).end()  # type: ignore[union-attr]
            if not isinstance(key, str) or text[position : position + 1] != ":":
                return None
            position = _SPACE.match(text, position + 1).end()  # type: ignore[union-attr]
            value, end = _DECODER.raw_decode(text, position)
            if key in LISTS and isinstance(value, list) and value and found is None:
                found = len(text[: end - 1].rstrip())
            position = _SPACE.match(text, end).end()  # type: ignore[union-attr]
            if text[position : position + 1] == ",":
                position += 1
            elif text[position : position + 1] != "}":
                return None
    except (ValueError, RecursionError):
        return None


def appended_items(add: str) -> list[Any] | None:
    """The items of `add` when it is `, item, item...` (list items following an existing one), else None."""
    stripped = add.strip()
    if not stripped.startswith(","):
        return None
    try:
        items = loads(f"[{stripped[1:]}]")
    except (ValueError, RecursionError):
        return None
    return items if isinstance(items, list) and items else None


@dataclass(frozen=True, slots=True)
class _Open:
    index: int
    head: str
    """The body up to where its list's last item ends."""
    tail: str
    """The rest of the body."""


class Compactor:
    """Finds, request by request, the earlier request each one extends: the newest of a bounded frontier
    of earlier requests on the same method and path."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, str], deque[_Open]] = {}

    def add(self, index: int, method: str, path: str, text: str) -> Extension | None:
        """The extension `text` is of an earlier request, if any; `text` joins the frontier either way."""
        growth = self.grows(index, method, path, text)
        return None if growth is None else growth[0]

    def grows(self, index: int, method: str, path: str, text: str) -> tuple[Extension, list[Any]] | None:
        """`add`, with the items the extension appends, as JSON."""
        frontier = self._open.setdefault((method.upper(), path.rstrip("/")), deque(maxlen=FRONTIER))
        for earlier in reversed(frontier):
            grows = len(text) > len(earlier.head) + len(earlier.tail)
            if grows and text.startswith(earlier.head) and text.endswith(earlier.tail):
                add = text[len(earlier.head) : len(text) - len(earlier.tail)]
                if (items := appended_items(add)) is not None:
                    frontier.append(_Open(index, earlier.head + add, earlier.tail))
                    return Extension(earlier.index, len(earlier.head), add), items
        end = list_end(text)
        if end is not None:
            frontier.append(_Open(index, text[:end], text[end:]))
        return None


def _request(interaction: Any) -> tuple[Mapping[str, Any] | None, Any]:
    """An interaction's request mapping and its body value, when it has a request."""
    request = interaction.get("request") if isinstance(interaction, Mapping) else None
    return (request, request.get("body")) if isinstance(request, Mapping) else (None, None)


def compacted(interactions: Iterable[Any]) -> Iterator[Any]:
    """Interactions as the file writes them, each request body that extends an earlier one written as an
    `Extension`; one at a time (only the bounded frontier of earlier bodies is held)."""
    compactor = Compactor()
    for index, interaction in enumerate(interactions):
        request, body = _request(interaction)
        if request is not None and isinstance(body, str):
            extension = compactor.add(
                index, str(request.get("method", "")), urlsplit(str(request.get("uri") or "")).path, body
            )
            if extension is not None:
                interaction = {**interaction, "request": {**request, "body": extension.data()}}
        yield interaction


def compact_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """A cassette's data with each request body that extends an earlier one written as an `Extension`,
    and `compact: true` in its `sim:` block."""
    interactions = list(compacted(data.get("interactions") or []))
    sim = dict(data.get("sim") or {})
    sim["compact"] = True
    return {**data, "interactions": interactions, "sim": sim}


MAX_REBUILT_BYTES = 1024 * 1024 * 1024
"""The most text all compact bodies of one file may rebuild into, together (a small file of references to
one big body must not rebuild into gigabytes); readers that need no whole body rebuild none."""
KEPT_BYTES = 64 * 1024 * 1024
"""Rebuilt bodies kept for the next ones to extend (the newest first), in characters."""


class TooMuchRebuilt(ValueError):
    """Compact bodies that rebuild into more than their limit in all."""

    def __init__(self, index: int, limit: int) -> None:
        size = f"{limit // 1024**3} GiB" if limit % 1024**3 == 0 else f"{limit // 1024**2} MiB"
        super().__init__(
            f"interaction {index}: the compact request bodies rebuild to more than {size} in all"
        )


class Rebuilder:
    """Rebuilds compact bodies in full from `raw` (an interaction's body as written: text, a reference, or
    anything else for no text body), keeping the newest rebuilt (bounded) and counting the total against
    `limit` (`MAX_REBUILT_BYTES` by default); a body whose base was let go is rebuilt again along its chain,
    additions that each go right after the one before joined in one pass."""

    def __init__(self, raw: Callable[[int], Any], limit: int | None = None) -> None:
        self._raw = raw
        self._limit = MAX_REBUILT_BYTES if limit is None else limit
        self.total = 0
        self._kept: OrderedDict[int, str] = OrderedDict()
        self._kept_size = 0

    def text(self, index: int) -> str:
        """The full body of interaction `index`; `ValueError` saying what is wrong with a reference, and
        `TooMuchRebuilt` past the limit."""
        steps: list[tuple[int, Extension]] = []  # (the interaction built, how)
        at_index = index
        while at_index not in self._kept:
            body = self._raw(at_index)
            if isinstance(body, str):
                self._keep(at_index, body)
                break
            if not is_extension(body):
                raise ValueError(f"it extends interaction {at_index}, whose request has no text body")
            base, at, add = body.get("extends"), body.get("at"), body.get("add")
            if not isinstance(base, int) or isinstance(base, bool) or not 0 <= base < at_index:
                raise ValueError(f"`extends` must name an earlier interaction, not {base!r}")
            if not isinstance(at, int) or isinstance(at, bool) or not isinstance(add, str):
                raise ValueError(f"`at` must be an offset in the body of interaction {base}, and `add` text")
            steps.append((at_index, Extension(base, at, add)))
            at_index = base
        text = self._kept[at_index]
        steps.reverse()
        while steps:
            run = 1
            while run < len(steps) and steps[run][1].at == steps[run - 1][1].at + len(steps[run - 1][1].add):
                run += 1
            at = steps[0][1].at
            if not 0 <= at <= len(text):
                raise ValueError(f"`at` must be an offset in the body of interaction {steps[0][1].base}")
            text = text[:at] + "".join(step.add for _, step in steps[:run]) + text[at:]
            built = steps[run - 1][0]
            del steps[:run]
            self.total += len(text)
            if self.total > self._limit:
                raise TooMuchRebuilt(built, self._limit)
            self._keep(built, text)
        return text

    def _keep(self, index: int, text: str) -> None:
        self._kept[index] = text
        self._kept.move_to_end(index)
        self._kept_size += len(text)
        while self._kept_size > KEPT_BYTES and len(self._kept) > 1:
            _, dropped = self._kept.popitem(last=False)
            self._kept_size -= len(dropped)


def expanded(interactions: Sequence[Any]) -> Iterator[Any]:
    """The interactions with every compact body written in full again, one at a time (rebuilt bodies are
    let go as they are written); `ValueError` naming the interaction when a reference does not resolve,
    `TooMuchRebuilt` when they rebuild into too much."""

    def raw(index: int) -> Any:
        return _request(interactions[index])[1]

    rebuilder = Rebuilder(raw)
    for index, interaction in enumerate(interactions):
        request, body = _request(interaction)
        if request is not None and is_extension(body):
            try:
                text = rebuilder.text(index)
            except TooMuchRebuilt:
                raise
            except ValueError as error:  # a broken reference, named by the interaction it is in
                raise ValueError(f"interaction {index}: {error}") from None
            interaction = {**interaction, "request": {**request, "body": text}}
        yield interaction


def expanded_rest(data: Mapping[str, Any]) -> dict[str, Any]:
    """What an expanded cassette holds besides its interactions: the `sim:` block without `compact`."""
    rest = {key: value for key, value in data.items() if key != "interactions"}
    sim = {key: value for key, value in (data.get("sim") or {}).items() if key != "compact"}
    if sim:
        rest["sim"] = sim
    else:
        rest.pop("sim", None)
    return rest


def expand_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """A cassette's data with every compact body written in full again (the plain vcrpy form); `ValueError`
    naming the interaction when a reference does not resolve."""
    return {"interactions": list(expanded(data.get("interactions") or [])), **expanded_rest(data)}


def checked_reference(
    index: int, reference: Mapping[str, Any], length_of: Callable[[int], int | None]
) -> Extension:
    """A reference as read from a file, checked: an earlier interaction with a body (`length_of` gives its
    length, None when it has none), an offset in it, text to add; `ValueError` saying which is wrong."""
    base, at, add = reference.get("extends"), reference.get("at"), reference.get("add")
    if not isinstance(base, int) or isinstance(base, bool) or not 0 <= base < index:
        raise ValueError(f"`extends` must name an earlier interaction, not {base!r}")
    length = length_of(base)
    if length is None:
        raise ValueError(f"it extends interaction {base}, whose request has no text body")
    if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at <= length or not isinstance(add, str):
        raise ValueError(f"`at` must be an offset in the body of interaction {base}, and `add` text")
    return Extension(base, at, add)
