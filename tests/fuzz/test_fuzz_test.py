"""`sim.fuzz.fuzz_test`: a campaign as a hypothesis test in a user's own suite, collected and run by a
real pytest process spread over two workers by pytest-xdist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sim.core.errors import ConfigurationError
from sim.fuzz import fuzz_test
from tests.fuzz import targets

ROOT = Path(__file__).resolve().parents[2]
SUITE = """
from sim.fuzz import fuzz_test
from tests.fuzz import targets

test_careful = fuzz_test(targets.careful, examples=12)
test_drops_invalid_json = fuzz_test(targets.drops_invalid_json, examples=60)
test_never_asks = fuzz_test(targets.never_asks, examples=5)
test_careful_hostile_allowed = fuzz_test(targets.crashes_on_non_objects, profile="api", examples=12)
"""


def test_campaigns_run_as_tests_in_a_users_suite(tmp_path: Path) -> None:
    """Run under pytest-xdist, as this suite runs: the campaigns are collected, spread over two workers and
    each passes or fails with its findings."""
    (tmp_path / "test_agents.py").write_text(SUITE)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "test_agents.py", "-q", "-p", "no:cacheprovider", "-n", "2"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "2 failed, 2 passed" in said
    assert "pairing: request 2: invalid request: missing tool results" in said
    assert "the replies, as a scenario `sim serve` plays:" in said
    assert "returned without sending a request: nothing was tested" in said


def test_a_target_that_does_not_fit_fails_at_collection() -> None:
    with pytest.raises(ConfigurationError, match="must take"):
        fuzz_test(targets.wrong_signature)
    assert fuzz_test(targets.careful).__name__ == "test_fuzz_careful"
