"""Scenario files: the YAML format people write, its loader, the scripted world (`sim.player` plays them).

The names below load their modules when first used: what needs only a module of the package (reading a
user's file safely, `sim.scenario.user_files`, which every command does first) comes without the loader
and the schema."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim.scenario.loader import load_scenario, scenario_files
    from sim.scenario.schema import Scenario

__all__ = ["Scenario", "load_scenario", "scenario_files"]

_HOMES = {"Scenario": "sim.scenario.schema", "load_scenario": "sim.scenario.loader",
          "scenario_files": "sim.scenario.loader"}  # fmt: skip
"""The module each public name comes from."""


def __getattr__(name: str) -> Any:
    """A public name, loaded from its module on first use (then kept here)."""
    if name in _HOMES:
        value = globals()[name] = getattr(import_module(_HOMES[name]), name)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
