"""`sim drift --rerecord DIR`: refused up front, in one line, where it would overwrite an input or any file
without `--force`, or write two inputs to one name; written only after the results are printed, and only
for files whose questions were all answered (an error storm re-records nothing and says why); a write that
fails after the run is one line after the results (exit 2). The live model is `sim serve` playing a
scenario, in process."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from typer.testing import Result

from sim.cli import drifting
from sim.scenario.answerer import scenario_host
from sim.scenario.schema import Scenario
from tests.drift.live import drift as drift_in_process
from tests.filesystems import fill

ROOT = Path(__file__).resolve().parents[2]
ECHO = ROOT / "cassettes" / "echo-42.yaml"
KEY = "sk-rerecord-marked-key-0123456789abcdef"
ANOTHER_TOOL = {"tool_calls": [{"id": "call_1", "name": "read_file", "arguments": {"path": "x"}}]}
STORM = {"error": {"status": 429, "message": "Rate limit reached", "type": "rate_limit_error"}}


class Live:
    """The "live" model: every request answered with `reply`; how many transports were made."""

    def __init__(self, reply: dict[str, Any]) -> None:
        scenario = {"name": "live", "prompt": "anything", "tools": ["shell"], "replies": [reply]}
        self.simulator = scenario_host(Scenario.model_validate(scenario), cycle=True)
        self.clients = 0

    def transport(self) -> httpx2.AsyncBaseTransport:
        self.clients += 1
        return httpx2.ASGITransport(app=self.simulator.app)


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch) -> Live:
    """A live model whose every reply calls another tool than the recordings: each file breaks at turn 1."""
    model = Live(ANOTHER_TOOL)
    monkeypatch.setattr(drifting, "transport_factory", model.transport)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return model


def drift(*args: str | Path) -> Result:
    """`sim drift` at drift's own concurrency."""
    return drift_in_process(*args, concurrency=None)


def copies(folder: Path, *names: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copy(ECHO, folder / name)) for name in names]


def refused(done: Result, *said: str) -> None:
    """Exit 2 with one line saying all of `said`, before anything was asked."""
    assert done.exit_code == 2, done.output
    assert len(done.output.strip().splitlines()) == 1 and done.output.startswith("error: "), done.output
    assert all(words in done.output for words in said), done.output


def test_rerecording_into_the_source_folder_is_refused_and_the_originals_kept(
    live: Live, tmp_path: Path
) -> None:
    originals = copies(tmp_path / "cassettes", "a.yaml", "b.yaml")
    done = drift(tmp_path / "cassettes", "--rerecord", tmp_path / "cassettes")
    refused(done, "--rerecord", "would overwrite", "the input", "--force")
    assert all(path.read_bytes() == ECHO.read_bytes() for path in originals) and live.clients == 0


def test_an_existing_file_is_overwritten_only_with_force(live: Live, tmp_path: Path) -> None:
    (given,) = copies(tmp_path / "in", "a.yaml")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "a.yaml").write_text("mine\n")
    refused(drift(given, "--rerecord", fresh), f"would overwrite {fresh / 'a.yaml'}", "--force")
    assert (fresh / "a.yaml").read_text() == "mine\n" and live.clients == 0
    done = drift(given, "--rerecord", fresh, "--force")
    assert done.exit_code == 1, done.output
    written = yaml.safe_load((fresh / "a.yaml").read_text())
    assert "read_file" in written["interactions"][0]["response"]["body"]["string"]


def test_two_inputs_of_one_name_are_refused(live: Live, tmp_path: Path) -> None:
    (first,) = copies(tmp_path / "one", "same.yaml")
    (second,) = copies(tmp_path / "two", "same.yaml")
    refused(drift(first, second, "--rerecord", tmp_path / "fresh"), str(first), str(second), "same.yaml")
    assert live.clients == 0 and not (tmp_path / "fresh").exists()


def test_files_of_one_name_in_a_folder_given_keep_their_places_below_it(live: Live, tmp_path: Path) -> None:
    """As `sim drift cassettes/ --rerecord fresh/` meets `x.yaml` and `responses/x.yaml`."""
    copies(tmp_path / "in", "same.yaml")
    copies(tmp_path / "in" / "responses", "same.yaml")
    done = drift(tmp_path / "in", "--rerecord", tmp_path / "fresh")
    assert done.exit_code == 1, done.output  # breaking drift, each file re-recorded in its place
    for written in (tmp_path / "fresh" / "same.yaml", tmp_path / "fresh" / "responses" / "same.yaml"):
        assert "read_file" in written.read_text()


def test_a_rerecord_path_that_is_a_file_is_refused(live: Live, tmp_path: Path) -> None:
    (given,) = copies(tmp_path / "in", "a.yaml")
    refused(drift(given, "--rerecord", given), "--rerecord", "not a folder")
    assert given.read_bytes() == ECHO.read_bytes() and live.clients == 0


def test_a_read_only_folder_is_refused_before_anything_is_asked(live: Live, read_only_dir: Path) -> None:
    refused(drift(ECHO, "--rerecord", read_only_dir), str(read_only_dir), "cannot write")
    assert live.clients == 0


def test_a_full_disk_is_one_line_after_the_results(live: Live, small_disk: Path) -> None:
    fill(small_disk)
    done = drift(ECHO, "--rerecord", small_disk)
    assert done.exit_code == 2, done.output
    lines = done.output.splitlines()
    (error,) = [line for line in lines if line.startswith("error: ")]
    assert str(small_disk / "echo-42.yaml") in error and "Traceback" not in done.output
    assert lines.index(error) > next(n for n, line in enumerate(lines) if line.startswith("1 file"))
    assert [path.name for path in small_disk.iterdir()] == [".filler"]


def test_an_error_storm_rerecords_nothing_and_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    storm = Live(STORM)
    monkeypatch.setattr(drifting, "transport_factory", storm.transport)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    fresh = tmp_path / "fresh"
    responses = Path(
        shutil.copy(ROOT / "cassettes" / "responses" / "echo-42.yaml", tmp_path / "responses.yaml")
    )
    done = drift(ECHO, responses, "--rerecord", fresh)
    assert done.exit_code == 1, done.output
    assert list(fresh.glob("*")) == [] and "needs a real re-recording" not in done.output
    assert done.output.count("not re-recorded") == 2 and "HTTP 429: Rate limit reached" in done.output


def test_the_results_are_printed_before_anything_is_written(live: Live, tmp_path: Path) -> None:
    done = drift(ECHO, "--rerecord", tmp_path / "fresh", "--report", tmp_path / "drift.html")
    assert done.exit_code == 1, done.output
    lines = done.output.splitlines()
    summary = next(n for n, line in enumerate(lines) if line.startswith("1 file"))
    wrote = next(n for n, line in enumerate(lines) if line.startswith("wrote "))
    assert summary < wrote and f"needs a real re-recording with your program: {ECHO}" in lines[wrote + 1 :]
