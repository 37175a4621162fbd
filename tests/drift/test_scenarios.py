"""A scenario as the recording it stands for: played through the real loop and SDK against its own simulator,
without the latency it scripts (drift asks the live model; the scripted waits stand for nobody)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import yaml

from sim.cassette.reader import read_cassette
from sim.drift.scenarios import recording_of
from sim.scenario.schema import MAX_LATENCY

ROOT = Path(__file__).resolve().parents[2]


def test_a_scenario_that_scripts_the_longest_latency_is_recorded_without_waiting(tmp_path: Path) -> None:
    scenario = yaml.safe_load((ROOT / "scenarios" / "echo-42.yaml").read_text())
    scenario["latency"] = {"first_byte": MAX_LATENCY, "between_chunks": MAX_LATENCY}
    scenario["replies"][1]["latency"] = {"first_byte": MAX_LATENCY}
    slow = tmp_path / "slow.yaml"
    slow.write_text(yaml.safe_dump(scenario, sort_keys=False))
    cassette = tmp_path / "recording.yaml"
    started = time.perf_counter()
    asyncio.run(asyncio.wait_for(recording_of(slow, cassette), timeout=10))  # a bound, not a measure
    assert time.perf_counter() - started < MAX_LATENCY
    assert [interaction.response.status for interaction in read_cassette(cassette).interactions] == [200, 200]
