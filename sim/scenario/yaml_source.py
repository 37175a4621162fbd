"""YAML read into plain data that remembers the line and column of every key and value."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sim.core.errors import ScenarioError
from sim.scenario.user_files import FileRefused, read_text

try:
    from yaml import CSafeLoader as YamlLoader
except ImportError:  # PyYAML built without libyaml
    from yaml import SafeLoader as YamlLoader  # type: ignore[assignment]
"""PyYAML's safe loader, the C one when libyaml is there."""

_C_LOADER = YamlLoader.__name__.startswith("C")

__all__ = [
    "DataPath",
    "Position",
    "YamlDocument",
    "YamlLoader",
    "YamlTooLarge",
    "check_limits",
    "read_yaml",
    "yaml_problem",
]

DataPath = tuple[str | int, ...]
"""Where a value sits in the document: keys and list indexes from the root."""


@dataclass(frozen=True, slots=True, order=True)
class Position:
    """A 1-based line and column."""

    line: int
    column: int

    @classmethod
    def of(cls, node: yaml.Node) -> Position:
        """Where `node` starts."""
        return cls(node.start_mark.line + 1, node.start_mark.column + 1)


@dataclass(slots=True)
class YamlDocument:
    """A document's data, and where each value (and each mapping key) was written."""

    path: Path
    data: Any
    values: dict[DataPath, Position] = field(default_factory=dict)
    keys: dict[DataPath, Position] = field(default_factory=dict)

    def position(self, at: DataPath, *, key: bool = False) -> Position:
        """Where the value at `at` (or its key) was written, else its nearest written parent."""
        table = self.keys if key else self.values
        while at not in table and at not in self.values and at:
            at = at[:-1]
        return table.get(at) or self.values.get(at) or Position(1, 1)

    def where(self, at: DataPath, *, key: bool = False) -> str:
        """`file:line:column` of the value at `at` (or of its key)."""
        position = self.position(at, key=key)
        return f"{self.path}:{position.line}:{position.column}"

    def fail(self, at: DataPath, message: str, *, key: bool = False) -> ScenarioError:
        """A `ScenarioError` that says where and what."""
        return ScenarioError(f"{self.where(at, key=key)}: {message}")


MAX_SCENARIO_BYTES = 8 * 1024 * 1024
"""The largest scenario file read (parsed, a file takes tens of times its size in memory)."""

MAX_YAML_DEPTH = 128
"""The deepest nesting of mappings and sequences accepted in a scenario or cassette."""

MAX_ALIAS_EXPANSION = 100_000
"""How many nodes aliases (`*name`) may add when expanded: a "billion laughs" file adds billions."""


class YamlTooLarge(ValueError):
    """A document past a limit (alias expansion, nesting), with where it was found."""

    def __init__(self, message: str, position: Position) -> None:
        super().__init__(message)
        self.position = position


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def check_limits(root: yaml.Node) -> None:
    """`YamlTooLarge` when aliases would expand `root` past `MAX_ALIAS_EXPANSION` nodes, when it nests
    deeper than `MAX_YAML_DEPTH`, or when an alias refers to a node holding it. One pass over the
    composed nodes, each once (an alias is the same node again), before anything is built."""
    size: dict[int, int] = {}
    height: dict[int, int] = {}
    open_nodes: set[int] = set()
    pending: list[tuple[yaml.Node, bool]] = [(root, False)]
    while pending:
        node, finished = pending.pop()
        key = id(node)
        if finished:
            children = _children(node)
            size[key] = 1 + sum(size[id(child)] for child in children)
            height[key] = 1 + max((height[id(child)] for child in children), default=0)
            open_nodes.discard(key)
            if height[key] > MAX_YAML_DEPTH:
                raise YamlTooLarge(f"nested deeper than {MAX_YAML_DEPTH} levels", Position.of(node))
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise YamlTooLarge(
                "an alias refers to a node that holds it (a recursive alias)", Position.of(node)
            )
        open_nodes.add(key)
        pending.append((node, True))
        pending.extend((child, False) for child in _children(node) if id(child) not in size)
    added = size[id(root)] - len(size)
    if added > MAX_ALIAS_EXPANSION:
        raise YamlTooLarge(
            f"aliases expand to {added:,} more nodes (at most {MAX_ALIAS_EXPANSION:,}): refused",
            Position.of(root),
        )


_BEFORE_ANCHOR = frozenset(" \t\r\n[{,-:")


def may_alias(text: str) -> bool:
    """Whether `text` may define an anchor (`&name`), without which no alias can expand: a cheap filter
    that lets large files skip the walk of `check_limits` (a false alarm only costs that walk). Only the
    places holding `&` are looked at, so a long file without one costs one scan at C speed."""
    at = text.find("&")
    while at != -1:
        if (at == 0 or text[at - 1] in _BEFORE_ANCHOR) and text[at + 1 : at + 2].strip():
            return True
        at = text.find("&", at + 1)
    return False


def yaml_problem(path: Path, error: yaml.YAMLError | YamlTooLarge, text: str) -> str:
    """`file:line:column: what` for any error PyYAML raises, or a document past the limits."""
    if isinstance(error, YamlTooLarge):
        return f"{path}:{error.position.line}:{error.position.column}: {error}"
    if isinstance(error, yaml.MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = error.problem or "invalid YAML"
        context = error.context_mark
        if error.context and problem.startswith("but "):
            problem = f"{error.context} {problem}"
        elif error.context and context and context is not mark:
            problem += f" ({error.context} at line {context.line + 1}, column {context.column + 1})"
        return f"{where}: YAML syntax: {problem}"
    if isinstance(error, yaml.reader.ReaderError) and isinstance(error.position, int):
        # libyaml counts the offset in UTF-8 bytes, PyYAML's own reader in characters
        data = text.encode("utf-8") if _C_LOADER else text
        start = data.rfind(b"\n" if _C_LOADER else "\n", 0, error.position) + 1  # type: ignore[arg-type]
        line = data.count(b"\n" if _C_LOADER else "\n", 0, start) + 1  # type: ignore[arg-type]
        before = data[start : error.position]
        column = len(before.decode("utf-8", errors="ignore") if isinstance(before, bytes) else before) + 1
        code = error.character if isinstance(error.character, int) else ord(error.character)
        return f"{path}:{line}:{column}: YAML syntax: {error.reason} (character {code:#04x})"
    return f"{path}: YAML syntax: {str(error).splitlines()[0] if str(error) else type(error).__name__}"


def read_yaml(path: Path) -> YamlDocument:
    """Parse one YAML document; syntax errors, duplicate keys, multiple documents, files past the limits
    (size, nesting, alias expansion) and what is no regular file (a FIFO) are `ScenarioError`s saying
    where."""
    try:
        text = read_text(path, MAX_SCENARIO_BYTES, "a scenario file")
    except FileRefused as error:
        raise ScenarioError(str(error)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(f"{path}: cannot read: {error}") from error
    loader = YamlLoader(text)
    try:
        root = loader.get_single_node()
        document = YamlDocument(path, None)
        if root is not None:
            if may_alias(text):  # without an anchor nothing can expand, and `_build` bounds the depth
                check_limits(root)
            document.data = _build(loader, root, (), document)
        return document
    except (YamlTooLarge, yaml.YAMLError) as error:
        raise ScenarioError(yaml_problem(path, error, text)) from None
    finally:
        loader.dispose()


class _Spelled:
    """A number that remembers how the file spelled it, and gives that spelling as its text."""

    spelling: str

    def __str__(self) -> str:
        return self.spelling


class SpelledInt(_Spelled, int):
    """An unquoted integer: `010` is 8 where a number is wanted, and the text `010` (not `8`) where text
    is (pydantic makes text of numbers with `str`)."""


class SpelledFloat(_Spelled, float):
    """An unquoted float: `3.10` stays `3.10` as text."""


def _spelled(kind: type[SpelledInt] | type[SpelledFloat], value: float, spelling: str) -> Any:
    number = kind(value)
    number.spelling = spelling
    return number


def _scalar(loader: YamlLoader, node: yaml.Node) -> Any:
    value = loader.construct_object(node, deep=True)
    if isinstance(node, yaml.ScalarNode) and not node.style:  # written unquoted (libyaml says "")
        if type(value) is int:
            return _spelled(SpelledInt, value, node.value)
        if type(value) is float:
            return _spelled(SpelledFloat, value, node.value)
    return value


def _build(loader: YamlLoader, node: yaml.Node, at: DataPath, document: YamlDocument) -> Any:
    if len(at) >= MAX_YAML_DEPTH:
        raise YamlTooLarge(f"nested deeper than {MAX_YAML_DEPTH} levels", Position.of(node))
    document.values[at] = Position.of(node)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        mapping: dict[Hashable, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(loader, key_node)
            if not isinstance(key, str | int | bool | float) and key is not None:
                raise document.fail(at, "mapping keys must be plain scalars")
            if key in mapping:
                raise ScenarioError(
                    f"{document.path}:{Position.of(key_node).line}:{Position.of(key_node).column}:"
                    f" duplicate key '{key}'"
                )
            child = (*at, str(key))
            document.keys[child] = Position.of(key_node)
            mapping[key] = _build(loader, value_node, child, document)
        return mapping
    if isinstance(node, yaml.SequenceNode):
        return [_build(loader, item, (*at, index), document) for index, item in enumerate(node.value)]
    return _scalar(loader, node)
