"""`sim fuzz --target` as a user meets it: the signature checked first, campaigns that tested nothing
failing, a saved failing run replayed in one command, async targets leaving nothing open, `--allow`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sim.cli import app
from sim.core.errors import ConfigurationError
from sim.fuzz import target as target_module
from sim.fuzz.findings import TargetCampaign, TargetRun, allowed
from sim.fuzz.target import fuzz_target, load_target, target_of
from sim.fuzz.terms import Profile
from tests.commands import in_a_process
from tests.fuzz import targets
from tests.host.processes import SIM
from tests.process_table import alive, children

ROOT = Path(__file__).resolve().parents[2]


def fuzz(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return in_a_process("fuzz", *args, cwd=cwd, timeout=300)


def test_the_signature_is_checked_before_the_campaign() -> None:
    assert target_of(targets.careful).takes_prompt
    assert not target_of(targets.without_prompt).takes_prompt
    assert target_of(targets.careful_async).is_async
    with pytest.raises(ConfigurationError, match=r"must take \(client\) or \(client, prompt\)"):
        target_of(targets.wrong_signature)
    done = fuzz("--target", "tests.fuzz.targets:wrong_signature")
    assert done.returncode == 2
    assert (
        len(done.stderr.strip().splitlines()) == 1 and "must take (client) or (client, prompt)" in done.stderr
    )
    for spec in ("nomodule", "no_such_module:run", "tests.fuzz.targets:missing"):
        assert fuzz("--target", spec).returncode == 2, spec


@pytest.mark.parametrize(("raises", "said"), [("RuntimeError('no API key')", "RuntimeError: no API key"),
                                              ("SystemExit(1)", "SystemExit: 1")])  # fmt: skip
def test_a_target_whose_module_fails_to_import_is_one_line(
    raises: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fails_on_import.py").write_text(f"raise {raises}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "fails_on_import", raising=False)
    with pytest.raises(ConfigurationError) as refused:
        load_target("fails_on_import:run")
    assert str(refused.value) == f"cannot load the target fails_on_import:run: importing it raised {said}"


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("never_asks", "the target never sent a request in 1 runs, so nothing was tested"),
        ("raises_at_once", "the target raised RuntimeError in every run (1) before sending a request"),
    ],
)
def test_a_campaign_that_tested_nothing_fails_saying_so(target: str, said: str) -> None:
    done = fuzz("--target", f"tests.fuzz.targets:{target}", "--examples", "20")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"! nothing was tested: {said}" in done.stdout
    assert "every invariant held" not in done.stdout


def test_a_failing_run_is_saved_and_replayed_in_one_command(tmp_path: Path) -> None:
    saved = tmp_path / "failures"
    done = fuzz("--target", "tests.fuzz.targets:drops_invalid_json", "--examples", "60", "--save", str(saved))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "! pairing: request 2: invalid request: missing tool results" in done.stdout
    (file,) = saved.glob("fuzz-target-seed-0.yaml")
    assert f"--replay {file}" in done.stdout
    again = fuzz("--target", "tests.fuzz.targets:drops_invalid_json", "--replay", str(file))
    assert again.returncode == 1
    assert "! pairing: request 2: invalid request: missing tool results" in again.stdout
    fixed = fuzz("--target", "tests.fuzz.targets:careful", "--replay", str(file))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "every invariant held" in fixed.stdout


def test_a_passing_campaign_reports_its_counts_as_json() -> None:
    """The target prints (with `print`, and straight to file 1), as libraries do: the JSON is sim's own."""
    done = fuzz("--target", "tests.fuzz.targets:chatty", "--examples", "30", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "a banner on standard output" in done.stderr and "one written to file 1" in done.stderr
    summary = json.loads(done.stdout)
    assert summary["runs"] == 30 and summary["requests"] > 30 and summary["round_trips"] > 0
    assert summary["violations"] == [] and summary["nothing_tested"] is None


def test_an_async_target_gets_an_async_client_closed_after_each_run() -> None:
    done = fuzz("--target", "tests.fuzz.targets:careful_async", "--examples", "40")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every invariant held" in done.stdout
    for leak in ("Event loop is closed", "Unclosed", "Traceback"):
        assert leak not in done.stderr


def test_allowed_exceptions_are_counted_not_crashes() -> None:
    class ModelGaveUp(ValueError):
        """A loop's documented way to stop."""

    assert allowed(ModelGaveUp(), ("ValueError",))
    assert allowed(ModelGaveUp(), ("ModelGaveUp",))
    assert not allowed(ModelGaveUp(), ("KeyError",))
    # seed 6: at seeds 0 and 1 the hostile profile's duplicate call ids (a pairing finding) come first
    crashing = fuzz_target(targets.crashes_on_non_objects, examples=60, seed=6, profile=Profile.hostile)
    assert {v.invariant for v in crashing.violations} == {"crash"}
    tolerated = fuzz_target(
        targets.crashes_on_non_objects,
        examples=60,
        seed=6,
        profile=Profile.hostile,
        allow=("AttributeError",),
    )
    assert "crash" not in {v.invariant for v in tolerated.violations}  # (duplicate ids remain a finding)
    assert tolerated.raised["AttributeError"] > 0


def test_options_that_do_not_fit_our_own_loop_are_usage_errors() -> None:
    assert fuzz("--profile", "api").returncode == 2
    assert fuzz("--replay", "x.yaml").returncode == 2
    assert fuzz("--target", "tests.fuzz.targets:careful", "--bound", "0").returncode == 2


def test_the_report_of_a_failing_campaign_shows_its_run_escaped(tmp_path: Path) -> None:
    page = tmp_path / "fuzz.html"
    done = fuzz(
        "--target", "tests.fuzz.targets:drops_invalid_json", "--examples", "60", "--save", str(tmp_path),
        "--report", str(page),
    )  # fmt: skip
    assert done.returncode == 1
    html = page.read_text()
    assert "pairing: request 2: invalid request: missing tool results" in html
    assert "request 1: {&#39;tool_calls&#39;" in html  # drawn text is escaped, as any untrusted text
    assert "sim fuzz --target tests.fuzz.targets:drops_invalid_json --replay" in html


@pytest.mark.parametrize("target", ["blocks_the_loop", "swallows_cancellation"])
def test_a_run_that_never_returns_is_abandoned_at_its_bound_and_replays_quietly(
    target: str, tmp_path: Path
) -> None:
    spec = f"tests.fuzz.targets:{target}"
    done = fuzz("--target", spec, "--examples", "2", "--run-seconds", "1", "--save", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "! runaway: the run did not return within 1 s" in done.stdout
    assert "Traceback" not in done.stderr
    (saved,) = tmp_path.glob("*.yaml")
    again = fuzz("--target", spec, "--replay", str(saved), "--run-seconds", "1")
    assert again.returncode == 1, again.stdout + again.stderr
    assert "! runaway: the run did not return within 1 s" in again.stdout
    for leak in ("Event loop is closed", "Traceback", "never retrieved"):
        assert leak not in again.stderr


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("exits", "the target called sys.exit(3)"),
        ("interrupts", "the target raised KeyboardInterrupt"),
        ("exits_async", "the target called sys.exit(0)"),
    ],
)
def test_a_target_that_exits_is_a_finding_not_a_pass(target: str, said: str, tmp_path: Path) -> None:
    done = fuzz("--target", f"tests.fuzz.targets:{target}", "--examples", "5", "--save", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "! crash: request 1 got " in done.stdout and said in done.stdout
    assert "every invariant held" not in done.stdout
    for leak in ("Event loop is closed", "Traceback", "never retrieved"):
        assert leak not in done.stderr


def test_a_tool_whose_valid_arguments_cannot_be_drawn_is_noted_in_the_summary(tmp_path: Path) -> None:
    campaign = fuzz_target(targets.offers_an_unmeetable_schema, examples=30, seed=0)
    assert campaign.violations == [] and campaign.unhonoured == {"get_code"}
    assert "valid arguments could not always be drawn for get_code" in (campaign.unhonoured_note() or "")
    shown = CliRunner().invoke(app, ["fuzz", "--target", "tests.fuzz.targets:offers_an_unmeetable_schema",
                                     "--examples", "20", "--save", str(tmp_path)])  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert "valid arguments could not always be drawn for get_code" in shown.output
    careful = fuzz_target(targets.careful, examples=20, seed=0)
    assert careful.unhonoured == set() and careful.unhonoured_note() is None


@pytest.mark.parametrize(("target", "how"), [("ends_the_process", "exit code 0"),
                                             ("kills_the_process", "signal SIGKILL")])  # fmt: skip
def test_a_target_that_ends_the_process_is_a_crash_never_a_pass(
    target: str, how: str, tmp_path: Path
) -> None:
    spec = f"tests.fuzz.targets:{target}"
    done = fuzz("--target", spec, "--examples", "5", "--save", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    said = f"the target ended sim's worker process ({how}): a loop must not end its caller's process"
    assert f"! crash: run 1: {said} (after request 1 got " in done.stdout, done.stdout
    assert "every invariant held" not in done.stdout and "Traceback" not in done.stderr
    if target == "ends_the_process":  # the run it ended in is saved, and replays to the same finding
        again = fuzz("--target", spec, "--replay", str(tmp_path / "fuzz-target-seed-0.yaml"))
        assert again.returncode == 1 and f"! crash: {said}" in again.stdout, again.stdout + again.stderr


def test_nothing_a_target_does_to_its_process_reaches_sim(tmp_path: Path) -> None:
    """A thread left running, a child left behind, another current folder, standard output closed: sim
    still ends after its verdict, saves where it was told, prints its JSON, and ends the child."""
    elsewhere, child_pid = tmp_path / "elsewhere", tmp_path / "child.pid"
    elsewhere.mkdir()
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "SIM_TEST_ELSEWHERE": str(elsewhere),
                   "SIM_TEST_CHILD_PID": str(child_pid)}  # fmt: skip
    command = [*SIM, "fuzz", "--target", "tests.fuzz.targets:misbehaves", "--examples", "60",
               "--save", "failures", "--json"]  # fmt: skip
    try:
        done = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        assert done.returncode == 1, done.stdout + done.stderr
        summary = json.loads(done.stdout)
        assert summary["saved"] == "failures/fuzz-target-seed-0.yaml" and summary["violations"]
        assert (tmp_path / summary["saved"]).is_file() and not list(elsewhere.iterdir())
        assert "Traceback" not in done.stderr
        assert not alive(int(child_pid.read_text()))
    finally:
        if child_pid.exists() and alive(pid := int(child_pid.read_text())):
            os.kill(pid, 9)


def test_a_failing_run_that_cannot_be_saved_is_one_line_and_the_verdict_stands(read_only_dir: Path) -> None:
    target = "tests.fuzz.targets:asks_after_the_answer"
    done = CliRunner().invoke(
        app, ["fuzz", "--target", target, "--examples", "60", "--save", str(read_only_dir)]
    )
    assert done.exit_code == 1 and not isinstance(done.exception, OSError), done.output
    assert "! request_after_final: " in done.output and "smallest failing run" not in done.output
    said = f"warning: cannot save the failing run in {read_only_dir}: Read-only file system"
    assert [line for line in done.output.splitlines() if "warning" in line] == [said]


@pytest.mark.parametrize(("signal_number", "returncode"), [(15, 143), (9, -9)])
def test_the_worker_ends_when_sim_is_ended(signal_number: int, returncode: int) -> None:
    """The worker has a session of its own (a signal to sim's process group does not reach it): SIGTERM
    ends it through sim, and the kernel kills it when sim is killed outright, mid-run (its target sleeps)."""
    command = [*SIM, "fuzz", "--target", "tests.fuzz.targets:sleeps", "--run-seconds", "600"]
    sim = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not (workers := children(sim.pid)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert workers, "no worker started"
        os.kill(sim.pid, signal_number)
        assert sim.wait(timeout=30) == returncode
        deadline = time.monotonic() + 10
        while any(alive(worker) for worker in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(worker) for worker in workers)
    finally:
        sim.kill()
        for worker in filter(alive, workers):
            os.kill(worker, 9)


REWORDED = [
    targets.drops_invalid_json,  # pairing: a request the API refuses
    targets.never_stops,  # runaway: past the bound
    targets.breaks_the_chain,  # pairing, over the Responses API
    targets.asks_for_two_choices_later,  # not simulated: no finding
    targets.careful,  # nothing
]


@pytest.mark.parametrize("loop", REWORDED, ids=[loop.__name__ for loop in REWORDED])
def test_the_verdicts_do_not_depend_on_how_problems_are_worded(
    loop: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def verdict(campaign: TargetCampaign) -> tuple[object, ...]:
        invariants = sorted({violation.invariant for violation in campaign.violations})
        return campaign.runs, campaign.requests, campaign.unsimulated, dict(campaign.raised), invariants

    plain = fuzz_target(loop, examples=30, seed=0)
    played = target_module.run_once

    def reworded(*arguments: Any, **options: Any) -> TargetRun:
        run = played(*arguments, **options)
        run.problems = [replace(p, message="reworded", said="reworded") for p in run.problems]
        return run

    monkeypatch.setattr(target_module, "run_once", reworded)
    again = fuzz_target(loop, examples=30, seed=0)
    assert verdict(again) == verdict(plain)
    if loop in (targets.drops_invalid_json, targets.never_stops):  # found from the run's problems
        assert plain.violations and "reworded" in {violation.detail for violation in again.violations}
    if loop is targets.asks_for_two_choices_later:
        assert plain.unsimulated and again.unsimulated_example == "reworded"
