"""Node `openai` loops (tests/programs_node/) run as real processes against sim: the careful ones served a
scenario and a cassette recorded from them, and fuzzed; the buggy ones found, shrunk, and their saved runs
replayed. The npm package comes from `tests.node` (skipped, saying why, where Node is absent)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sim.cassette.reader import read_cassette
from tests.host.processes import MARKED_KEY, ROOT, SIM, program, served
from tests.node import FALLBACK_PACKAGE, PROGRAMS, NodePrograms, install, package_for

WEATHER = PROGRAMS / "weather.yaml"
CAREFUL = ["careful_chat.mjs", "careful_responses.mjs"]
ANSWER = "Sunny in Paris and in Rome."


def sim(*args: str, environment: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`sim ARGS...` run to its end in a process of its own."""
    return subprocess.run(
        [*SIM, *args], capture_output=True, text=True, timeout=180, check=False, cwd=ROOT,
        env={**os.environ, **(environment or {})},
    )  # fmt: skip


def test_without_node_the_install_says_why_in_one_line(tmp_path: Path) -> None:
    nowhere = tmp_path / "empty-path"
    nowhere.mkdir()
    reason = install(tmp_path / "programs", path=str(nowhere))
    assert reason == "Node tests need node and npm on PATH (node is absent)"
    assert not (tmp_path / "programs").exists()


def test_the_package_is_one_that_node_can_run() -> None:
    assert package_for(22) == package_for(24) == "openai@7"
    assert package_for(20) == package_for(18) == FALLBACK_PACKAGE


@pytest.mark.parametrize("loop", CAREFUL)
def test_a_careful_loop_passes_against_a_served_scenario(node_programs: NodePrograms, loop: str) -> None:
    with served(WEATHER, "--once", "--grace", "0.1") as (server, base_url):
        done = program(base_url, *node_programs.command(loop))
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == ANSWER
        assert server.wait(timeout=20) == 0


@pytest.mark.parametrize("loop", CAREFUL)
def test_a_careful_loop_recorded_through_the_proxy_is_served_its_cassette(
    node_programs: NodePrograms, loop: str, tmp_path: Path
) -> None:
    cassette = tmp_path / "node.yaml"
    with served(WEATHER, "--once", "--grace", "0.1") as (upstream, upstream_url):
        recording = ["proxy", str(cassette), "--upstream", upstream_url, "--port", "0", "--"]
        recorded = sim(*recording, *node_programs.command(loop), environment={"OPENAI_API_KEY": MARKED_KEY})
        assert recorded.returncode == 0, recorded.stderr
        assert upstream.wait(timeout=20) == 0
    assert MARKED_KEY not in cassette.read_text()
    assert len(read_cassette(cassette).interactions) == 2
    with served(cassette, "--once", "--grace", "0.1") as (server, base_url):
        again = program(base_url, *node_programs.command(loop))
        assert again.returncode == 0, again.stderr
        assert again.stdout.strip() == ANSWER
        assert server.wait(timeout=20) == 0
