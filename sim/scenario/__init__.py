"""Scenario files: the YAML format people write, its loader, the scripted world (`sim.player` plays them)."""

from sim.scenario.loader import load_scenario, scenario_files
from sim.scenario.schema import Scenario

__all__ = ["Scenario", "load_scenario", "scenario_files"]
