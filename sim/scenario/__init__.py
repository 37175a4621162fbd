"""Scenario files: the YAML format people write, its loader, the scripted world, and the player."""

from sim.scenario.loader import load_scenario, scenario_files
from sim.scenario.player import PlayReport, play_file, play_scenario
from sim.scenario.schema import Scenario

__all__ = ["PlayReport", "Scenario", "load_scenario", "play_file", "play_scenario", "scenario_files"]
