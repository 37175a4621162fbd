"""`sim record` against `sim serve` (real processes on 127.0.0.1, bounded and stopped here), then replay."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from sim.cassette.reader import read_cassette
from sim.cassette.replay import replay_cassette
from tests.commands import in_a_process, in_process
from tests.corpus import needs_corpus, real_cassettes
from tests.host import processes
from tests.host.processes import SIM

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-RECOGNISABLE-key-5f2a9c7e31d4"
ORG = "org-RECOGNISABLEorg9f8e7d6c"
PROJECT = "proj_RECOGNISABLEproj1a2b3c4d"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX signals")


@contextmanager
def served(scenario: Path) -> Iterator[str]:
    """`sim serve SCENARIO` on a port, its base URL; interrupted at the end (a graceful shutdown)."""
    with processes.served(scenario, graceful=True) as (_, base_url):
        yield base_url


def environment(base_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": KEY,
        "OPENAI_MODEL": "sim-model",
        "OPENAI_ORG_ID": ORG,
        "OPENAI_PROJECT_ID": PROJECT,
    }


def record(
    base_url: str, cassette: Path, workspace: Path, prompt: str, *options: str
) -> subprocess.CompletedProcess[str]:
    return in_a_process(
        "record", cassette, "--prompt", prompt, "--workspace", workspace, *options, env=environment(base_url)
    )


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("api", [[], ["--api", "responses"], ["--api", "responses", "--chain"]],
                         ids=["chat", "responses", "responses-chained"])  # fmt: skip
def test_record_then_replay_offline_with_no_secret_written(
    tmp_path: Path, stream: bool, api: list[str]
) -> None:
    cassette = tmp_path / "echo.yaml"
    with served(ROOT / "scenarios" / "echo-42.yaml") as base_url:
        options = ["--approve", "always", *(["--stream"] if stream else []), *api]
        done = record(base_url, cassette, tmp_path, "Run `echo 42` and tell me the result.", *options)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("The command printed 42.")
    text = cassette.read_text()
    for secret in (KEY, ORG, PROJECT, KEY[3:], ORG[4:], PROJECT[5:]):
        assert secret not in text
    assert "authorization" not in text.lower()
    data = yaml.safe_load(text)
    assert data["sim"]["outcome"] == "completed"
    assert data["sim"]["stream"] is stream
    assert (data["sim"]["api"], data["sim"]["chain"]) == ("responses" if api else "chat", "--chain" in api)
    if "--chain" in api:
        assert '"previous_response_id":"resp_sim000001"' in data["interactions"][1]["request"]["body"]
    assert data["interactions"][0]["request"]["body"].startswith("{\n  ")  # readable, not base64 gzip
    report = asyncio.run(replay_cassette(cassette))  # the server is gone: replay is offline
    assert report.problems == ()
    assert (report.outcome, report.final_text, report.turns) == ("completed", "The command printed 42.", 2)


def test_an_existing_cassette_is_kept_without_force(tmp_path: Path) -> None:
    cassette = tmp_path / "kept.yaml"
    cassette.write_text("previous")
    done = record("http://127.0.0.1:9/v1", cassette, tmp_path, "hi")
    assert done.returncode == 2
    assert "use --force" in done.stderr
    assert cassette.read_text() == "previous"


@pytest.mark.parametrize("previous", [None, "the previous cassette\n"], ids=["new", "existing"])
def test_killing_the_recorder_mid_session_leaves_no_partial_file(
    tmp_path: Path, previous: str | None
) -> None:
    slow = tmp_path / "slow.yaml"
    slow.write_text("prompt: p\nlatency: {first_byte: 30}\nreplies:\n  - content: too late\n")
    cassette = tmp_path / "out" / "session.yaml"
    if previous is not None:
        cassette.parent.mkdir()
        cassette.write_text(previous)
    with served(slow) as base_url:
        recorder = subprocess.Popen(
            [*SIM, "record", str(cassette), "--prompt", "p", "--force"],
            env=environment(base_url),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(2)  # the request is in flight, waiting on the slow reply
        assert recorder.poll() is None
        recorder.kill()
        recorder.wait(timeout=10)
    if previous is None:
        assert not cassette.exists()
    else:
        assert cassette.read_text() == previous
    left = [p for p in (tmp_path / "out").glob("*") if p != cassette] if cassette.parent.exists() else []
    assert [p.name for p in left] in ([], ["session.yaml.journal"])  # a journal held from the start
    assert all(len(p.read_text().splitlines()) == 1 for p in left)  # with no exchange in it


def test_killing_the_recorder_keeps_each_finished_exchange_for_sim_recover(tmp_path: Path) -> None:
    slow = tmp_path / "slow.yaml"
    slow.write_text(
        "prompt: p\nreplies:\n"
        "  - tool_calls: [{id: call_1, name: shell, arguments: {command: echo one}}]\n"
        "  - tool_calls: [{id: call_2, name: shell, arguments: {command: echo two}}]\n"
        "  - content: too late\n    latency: {first_byte: 30}\n"
    )
    cassette = tmp_path / "session.yaml"
    journal = tmp_path / "session.yaml.journal"
    with served(slow) as base_url:
        recorder = subprocess.Popen(
            [*SIM, "record", str(cassette), "--prompt", "p", "--approve", "always", "--stream",
             "--workspace", str(tmp_path)],
            env=environment(base_url), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
            not journal.exists() or len(journal.read_text().splitlines()) < 3
        ):
            time.sleep(0.05)  # two turns answered; the third waits on the slow reply
        recorder.kill()
        recorder.wait(timeout=10)
        again = record(base_url, cassette, tmp_path, "p")
    assert not cassette.exists()
    text = journal.read_text()
    assert len(text.splitlines()) == 3
    for secret in (KEY, ORG, PROJECT):
        assert secret not in text
    assert again.returncode == 1 and f"sim recover {journal}" in again.stderr
    done = in_a_process("recover", journal, "--compact")
    assert done.returncode == 0, done.stderr
    assert not journal.exists()
    interactions = read_cassette(cassette).interactions
    assert len(interactions) == 2 and interactions[1].request.extended is not None
    assert b"call_2" in interactions[1].response.body
    sent = json.loads(interactions[1].request.body or b"")["messages"]
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "one"}


def test_replay_runs_no_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from sim.tools.subprocess_runner import SubprocessRunner

    async def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("replay must not run a command")

    monkeypatch.setattr(SubprocessRunner, "run", refuse)
    for path in sorted((ROOT / "cassettes").rglob("*.yaml")):
        report = asyncio.run(replay_cassette(path))
        assert report.problems == (), path.name


def edited(tmp_path: Path, change: object) -> Path:
    data = yaml.safe_load((ROOT / "cassettes" / "echo-42.yaml").read_text())
    change(data)  # type: ignore[operator]
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_changed_system_prompt_names_the_turn_and_the_path(tmp_path: Path) -> None:
    path = edited(tmp_path, lambda d: d["sim"].update(system_prompt="Be terse."))
    report = asyncio.run(replay_cassette(path))
    assert report.problems[0] == (
        'turn 1: messages[0].content: recorded "You are a coding agent. Use tools when needed, inspect their'
        ' results, and answer accurately." != now "Be terse."'
    )
    assert not report.passed


def test_a_changed_recorded_reply_is_found_at_the_next_turn(tmp_path: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        reply = data["interactions"][0]["response"]["body"]["string"]
        data["interactions"][0]["response"]["body"]["string"] = reply.replace("echo 42", "echo 43")

    report = asyncio.run(replay_cassette(edited(tmp_path, change)))
    assert report.problems[0] == (
        'turn 2: messages[2].tool_calls[0].function.arguments: recorded "{\\"command\\":\\"echo 42\\"}"'
        ' != now "{\\"command\\":\\"echo 43\\"}"'
    )


def test_a_partly_played_cassette_fails(tmp_path: Path) -> None:
    path = edited(tmp_path, lambda d: d["interactions"].append(d["interactions"][0]))
    report = asyncio.run(replay_cassette(path))
    assert report.problems == ("cassette only partly played: 1 of 3 interactions never requested",)


@needs_corpus
def test_a_cassette_not_recorded_by_sim_cannot_be_replayed() -> None:
    from sim import CassetteError

    foreign = next(p for p in real_cassettes() if p.name.startswith("magentic"))
    with pytest.raises(CassetteError, match="no sim: block"):
        asyncio.run(replay_cassette(foreign))


def test_replay_cli_over_the_bundled_cassettes() -> None:
    done = in_process("replay", ROOT / "cassettes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("8 passed, 0 failed")  # four sessions, over each API


def test_replay_cli_fails_on_a_mismatch(tmp_path: Path) -> None:
    path = edited(tmp_path, lambda d: d["sim"].update(prompt="Something else."))
    done = in_process("replay", path)
    assert done.returncode == 1
    recorded = "Run `echo 42` and tell me the result."
    assert f'turn 1: messages[1].content: recorded "{recorded}" != now "Something else."' in done.stdout


def test_a_streamed_reply_echoing_the_secrets_is_recorded_without_them(tmp_path: Path) -> None:
    said = f"Your key is {KEY}\n{ORG}\n{PROJECT}"  # pieces of eight characters: no chunk holds a whole one
    echo = tmp_path / "echo-key.yaml"
    echo.write_text(yaml.safe_dump({"prompt": "p", "replies": [{"content": said}]}))
    cassette = tmp_path / "streamed.yaml"
    with served(echo) as base_url:
        done = record(base_url, cassette, tmp_path, "What is my key?", "--stream", "--approve", "never")
    assert done.returncode == 0, done.stderr
    text = cassette.read_text()
    for secret in (KEY, ORG, PROJECT, KEY[3:], ORG[4:], PROJECT[5:]):
        assert secret not in text
    check = in_process("check", cassette)
    assert check.returncode == 0, check.stdout


@pytest.mark.parametrize("key", ["42", "x", "sim"])
def test_a_key_too_short_to_scrub_is_refused_before_the_session(tmp_path: Path, key: str) -> None:
    """The refused recording and the one after it run in process, asking `sim serve` on a port over HTTP as
    they would ask any model: the second gets the script's first reply, so the first asked nothing."""
    cassette = tmp_path / "short.yaml"
    with served(ROOT / "scenarios" / "echo-42.yaml") as base_url:
        done = in_process(
            "record", cassette, "--prompt", "p", "--approve", "always",
            env={**environment(base_url), "OPENAI_API_KEY": key},
        )  # fmt: skip
        served_before = in_process(  # the script is untouched: its first reply is still there
            "record", tmp_path / "ok.yaml", "--prompt", "Run `echo 42` and tell me the result.",
            "--approve", "always", env=environment(base_url),
        )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: OPENAI_API_KEY has {len(key)} characters")
    assert not cassette.exists()
    assert served_before.returncode == 0, served_before.stderr


@pytest.mark.parametrize("command", ["run", "record"])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_key_holding_a_line_break_is_never_shown(tmp_path: Path, command: str, as_json: bool) -> None:
    key = "sk-NEWLINE-key-abcdef\nx"
    target = [str(tmp_path / "c.yaml")] if command == "record" else []
    done = in_process(
        command, *target, "--prompt", "p", *(["--json"] if as_json else []),
        env={**environment("http://127.0.0.1:9/v1"), "OPENAI_API_KEY": key},
    )  # fmt: skip
    assert done.returncode == 2
    assert "NEWLINE" not in done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: OPENAI_API_KEY holds a space, a control character (a line break?) or a non-ASCII"
        " character, which no HTTP header can carry"
    ]


REUSED_IDS = """
name: reuse
prompt: Run two commands.
commands:
  - {command: echo one, output: one}
  - {command: echo two, output: two}
replies:
  - tool_calls: [{id: call_0, name: shell, arguments: {command: echo one}}]
  - tool_calls: [{id: call_0, name: shell, arguments: {command: echo two}}]
  - content: one then two
"""


def test_a_call_id_reused_on_a_later_turn_is_paired_by_turn(tmp_path: Path) -> None:
    """Some endpoints send `call_0` every turn: each turn's result belongs to that turn's call."""
    from sim.player import play_file
    from sim.scenario import load_scenario

    script = tmp_path / "reuse.yaml"
    script.write_text(REUSED_IDS)
    cassette = tmp_path / "reuse-cassette.yaml"
    with served(script) as base_url:
        done = record(base_url, cassette, tmp_path, "Run two commands.", "--approve", "always")
    assert done.returncode == 0, done.stderr
    report = asyncio.run(replay_cassette(cassette))
    assert report.problems == ()
    converted = tmp_path / "converted.yaml"
    converting = in_a_process("convert", cassette, "-o", converted)
    assert converting.returncode == 0, converting.stderr
    assert load_scenario(converted).results == {"call_0@1": "one", "call_0@2": "two"}
    played = asyncio.run(play_file(converted))
    assert played.problems == ()
    assert played.final_text == "one then two"


def test_a_responses_divergence_names_the_turn_and_the_json_path(tmp_path: Path) -> None:
    cassette = tmp_path / "responses.yaml"
    with served(ROOT / "scenarios" / "echo-42.yaml") as base_url:
        prompt = "Run `echo 42` and tell me the result."
        done = record(base_url, cassette, tmp_path, prompt, "--approve", "always", "--api", "responses")
    assert done.returncode == 0, done.stderr
    data = yaml.safe_load(cassette.read_text())
    data["sim"]["prompt"] = "Something else."
    cassette.write_text(yaml.safe_dump(data, sort_keys=False))
    report = asyncio.run(replay_cassette(cassette))
    assert report.problems[0] == f'turn 1: input[0].content: recorded "{prompt}" != now "Something else."'


def test_the_ids_a_chain_sends_back_are_matched_as_recorded(tmp_path: Path) -> None:
    """A chained request is told apart from another chain's only by the ids it sends back: what it was
    served, which is what was recorded. A cassette whose responses no longer carry the ids its requests
    send back is caught, naming the id."""
    text = (ROOT / "cassettes" / "responses" / "parallel-calls.yaml").read_text()
    assert (
        asyncio.run(replay_cassette(ROOT / "cassettes" / "responses" / "parallel-calls.yaml")).problems == ()
    )
    data = yaml.safe_load(text)
    for interaction in data["interactions"]:  # responses that no longer say what the requests send back
        body = interaction["response"]["body"]["string"]
        interaction["response"]["body"]["string"] = body.replace("resp_sim", "resp_live")
    path = tmp_path / "again.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    problem = asyncio.run(replay_cassette(path)).problems[0]
    assert problem.startswith(
        'turn 2: previous_response_id: recorded "resp_sim000001" != now "resp_live000001"'
    )
    changed = yaml.safe_load(text)  # the client's own choices count too: a different model does not match
    changed["sim"]["model"] = "another-model"
    path.write_text(yaml.safe_dump(changed, sort_keys=False))
    assert (
        asyncio.run(replay_cassette(path)).problems[0]
        == 'turn 1: model: recorded "sim-model" != now "another-model"'
    )


@pytest.mark.parametrize("api", [[], ["--api", "responses"]], ids=["chat", "responses"])
def test_a_compact_recording_replays_and_holds_no_secret(tmp_path: Path, api: list[str]) -> None:
    cassette = tmp_path / "parallel.yaml"
    with served(ROOT / "scenarios" / "parallel-calls.yaml") as base_url:
        done = record(base_url, cassette, tmp_path, "What is in this folder, and which Python is installed?",
                      "--approve", "always", "--compact", *api)  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = cassette.read_text()
    assert all(secret not in text for secret in (KEY, ORG, PROJECT))
    data = yaml.safe_load(text)
    assert data["sim"]["compact"] is True
    assert data["interactions"][1]["request"]["body"]["extends"] == 0
    report = asyncio.run(replay_cassette(cassette))
    assert report.problems == () and report.outcome == "completed"
