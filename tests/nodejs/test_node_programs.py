"""Node `openai` loops (tests/programs_node/) run as real processes against sim: the careful ones served a
scenario and a cassette recorded from them, and fuzzed; the buggy ones found, shrunk, and their saved runs
replayed. The npm package comes from `tests.node` (skipped, saying why, where Node is absent)."""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
import time
from pathlib import Path

import pytest

from sim.cassette.reader import read_cassette
from tests import node
from tests.host.processes import MARKED_KEY, ROOT, SIM, served
from tests.node import FALLBACK_PACKAGE, PROGRAMS, NodePrograms, install, package_for

WEATHER = PROGRAMS / "weather.yaml"
CAREFUL = [("careful_chat.mjs",), ("careful_chat.mjs", "--stream"), ("careful_responses.mjs",),
           ("careful_responses.mjs", "--stream")]  # fmt: skip
"""The careful loops, each API's, streamed (the SDK's stream helpers) and not."""
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


def fake_tools(folder: Path, npm: str) -> str:
    """A PATH holding a `node` that says it is v22.1.0 and an `npm` that runs the shell code `npm`."""
    folder.mkdir()
    for name, code in (("node", "echo v22.1.0"), ("npm", npm)):
        (folder / name).write_text(f"#!/bin/sh\n{code}\n")
        (folder / name).chmod(0o755)
    return str(folder)


def test_a_failed_install_says_why_in_one_line_without_its_noise(tmp_path: Path) -> None:
    """Offline, npm fails after its retries: the tests skip with its words, on one line and bounded."""
    noise = "\\033[31mnpm error\\033[0m code ENOTFOUND\\n" + "npm error network request failed\\n" * 200
    path = fake_tools(tmp_path / "bin", f"printf '{noise}' >&2; exit 1")
    reason = install(tmp_path / "programs", path=path)
    assert reason.startswith("npm install openai@7 failed (exit 1): ")
    assert "npm error\\x1b[0m code ENOTFOUND npm error network" in reason
    assert reason.isprintable() and len(reason) < 400


def test_sessions_workers_asking_at_once_install_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest-xdist's workers all ask for the programs as they start: one installs, the others wait for
    it and take its answer (here, a reason to skip)."""
    calls: list[Path] = []

    def slow_install(folder: Path, path: str | None = None) -> str:
        calls.append(folder)
        time.sleep(0.3)
        return "npm install openai@7 failed (exit 1): offline"

    monkeypatch.setattr(node, "install", slow_install)
    said: list[str] = []

    def ask() -> None:
        try:
            node.installed(tmp_path)
        except pytest.skip.Exception as skipped:
            said.append(str(skipped.msg))

    askers = [threading.Thread(target=ask) for _ in range(4)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join(timeout=30)
    assert len(calls) == 1
    assert said == ["npm install openai@7 failed (exit 1): offline"] * 4


def test_the_package_is_one_that_node_can_run() -> None:
    assert package_for(22) == package_for(24) == "openai@7"
    assert package_for(20) == package_for(18) == FALLBACK_PACKAGE


def serve(file: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """`sim serve FILE --once -- COMMAND...` run to its end, on a free port."""
    return sim("serve", str(file), "--port", "0", "--once", "--grace", "0.1", "--", *command)


@pytest.mark.parametrize("loop", CAREFUL, ids=" ".join)
def test_a_careful_loop_passes_against_a_served_scenario(
    node_programs: NodePrograms, loop: tuple[str, ...]
) -> None:
    done = serve(WEATHER, *node_programs.command(*loop))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ANSWER
    assert "exited with 0; the served file's verdict: passed" in done.stderr


@pytest.mark.parametrize("loop", [CAREFUL[0], CAREFUL[3]], ids=" ".join)
def test_a_careful_loop_recorded_through_the_proxy_is_served_its_cassette(
    node_programs: NodePrograms, loop: tuple[str, ...], tmp_path: Path
) -> None:
    """Chat not streamed, and a Responses stream (recorded as it passed through the proxy)."""
    cassette = tmp_path / "node.yaml"
    with served(WEATHER, "--once", "--grace", "0.1") as (upstream, upstream_url):
        recording = ["proxy", str(cassette), "--upstream", upstream_url, "--port", "0", "--"]
        recorded = sim(*recording, *node_programs.command(*loop), environment={"OPENAI_API_KEY": MARKED_KEY})
        assert recorded.returncode == 0, recorded.stderr
        assert upstream.wait(timeout=20) == 0
    assert MARKED_KEY not in cassette.read_text()
    assert len(read_cassette(cassette).interactions) == 2
    again = serve(cassette, *node_programs.command(*loop))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == ANSWER
    assert "2 of 2 interactions played" in again.stderr


def fuzz(*args: str) -> subprocess.CompletedProcess[str]:
    """`sim fuzz ARGS...` run to its end."""
    return sim("fuzz", *args)


@pytest.mark.parametrize(
    ("loop", "workers"),
    [
        pytest.param(CAREFUL[1], "1", id="chat streamed"),
        pytest.param(CAREFUL[2], "2", id="responses, 2 workers"),
    ],
)
def test_a_careful_loop_passes_a_fuzz_campaign(
    node_programs: NodePrograms, loop: tuple[str, ...], workers: str
) -> None:
    """Chat streamed (the buggy loops' campaigns fuzz it not streamed), and the Responses loop, its
    campaign split between two workers as docs/ci.md runs it."""
    command = node_programs.command(*loop)
    done = fuzz("--examples", "10", "--workers", workers, "--", *command)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every invariant held" in done.stdout
    assert f"10 runs of {shlex.join(command)} (api profile)" in done.stdout


BUGS = {
    "forgets_tool_result.mjs": (1, ["! pairing: request ", "invalid request: missing tool results for ids"]),
    "crashes_on_null_content.mjs": (0, [
        "! crash: request 1 got {'tool_calls': ", "the program ended with exit code 1",
        "TypeError: Cannot read properties of null (reading 'trim')",
    ]),
    "treats_length_as_done.mjs": (6, [
        "! crash: request 1 got {'content': '{', 'finish_reason': 'length'}", "SyntaxError",
    ]),
    "never_stops.mjs": (0, ["! request_after_final: request 2 came after the final answer to request 1"]),
}  # fmt: skip
"""Each buggy loop, the seed that finds it in a few runs, and what the finding says."""


def found_and_replayed(programs: NodePrograms, loop: str, saved: Path, *options: str) -> None:
    """`sim fuzz OPTIONS... -- node LOOP` finds the loop's bug, shrinks it and saves it under `saved`; the
    command its finding prints to replay it fails as the loop did."""
    seed, said = BUGS[loop]
    command = programs.command(loop)
    done = fuzz("--examples", "40", "--seed", str(seed), "--save", str(saved), *options, "--", *command)
    assert done.returncode == 1, done.stdout + done.stderr
    for words in said:
        assert words in done.stdout
    (file,) = saved.glob("*.yaml")
    replay = shlex.split(f"sim serve {file} --once -- {shlex.join(command)}")
    assert f"(to reproduce it: {shlex.join(replay)})" in done.stdout
    again = sim(*replay[1:3], "--port", "0", *replay[3:])
    assert again.returncode != 0, again.stdout + again.stderr


@pytest.mark.parametrize("loop", sorted(set(BUGS) - {"crashes_on_null_content.mjs"}))
def test_a_buggy_loop_is_found_shrunk_and_replayed_by_the_command_it_prints(
    node_programs: NodePrograms, loop: str, tmp_path: Path
) -> None:
    found_and_replayed(node_programs, loop, tmp_path / "failures")


def test_a_failure_kept_in_the_database_is_run_first_by_the_next_campaign(
    node_programs: NodePrograms, tmp_path: Path
) -> None:
    """The loop that crashes on `content: null`, found as the others are, with `--database` carried to the
    next campaign as docs/ci.md's workflow carries it from one CI run to the next: the next campaign, with
    another seed and one example (which alone passes: hypothesis tries the simplest replies first), fails
    at once."""
    command = node_programs.command("crashes_on_null_content.mjs")
    database = tmp_path / "fuzz-db"
    one = ["--examples", "1", "--seed", "7", "--save", str(tmp_path / "again")]
    alone = fuzz(*one, "--", *command)
    assert alone.returncode == 0, alone.stdout + alone.stderr
    found_and_replayed(node_programs, "crashes_on_null_content.mjs", tmp_path / "failures", "--database",
                       str(database))  # fmt: skip
    assert any(database.rglob("*")), "the failing run was not kept"
    again = fuzz(*one, "--database", str(database), "--", *command)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "TypeError: Cannot read properties of null (reading 'trim')" in again.stdout
