"""YAML read into plain data that remembers the line and column of every key and value."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sim.core.errors import ScenarioError

try:
    from yaml import CSafeLoader as YamlLoader
except ImportError:  # PyYAML built without libyaml
    from yaml import SafeLoader as YamlLoader  # type: ignore[assignment]
"""PyYAML's safe loader, the C one when libyaml is there."""

__all__ = ["DataPath", "Position", "YamlDocument", "YamlLoader", "read_yaml"]

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


def read_yaml(path: Path) -> YamlDocument:
    """Parse one YAML document; syntax errors, duplicate keys and multiple documents are `ScenarioError`s."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(f"{path}: cannot read: {error}") from error
    loader = YamlLoader(text)
    try:
        root = loader.get_single_node()
        document = YamlDocument(path, None)
        if root is not None:
            document.data = _build(loader, root, (), document)
        return document
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = error.problem or "invalid YAML"
        context = error.context_mark
        if error.context and problem.startswith("but "):
            problem = f"{error.context} {problem}"
        elif error.context and context and context is not mark:
            problem += f" ({error.context} at line {context.line + 1}, column {context.column + 1})"
        raise ScenarioError(f"{where}: YAML syntax: {problem}") from error
    except yaml.YAMLError as error:
        raise ScenarioError(f"{path}: YAML syntax: {error}") from error
    finally:
        loader.dispose()


def _build(loader: YamlLoader, node: yaml.Node, at: DataPath, document: YamlDocument) -> Any:
    document.values[at] = Position.of(node)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        mapping: dict[Hashable, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
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
    return loader.construct_object(node, deep=True)
