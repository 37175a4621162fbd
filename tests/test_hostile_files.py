"""Hostile files through every command that reads them: a clear one-line error (or finding), bounded time
and memory, never a traceback or a hang. Each command runs as a real process with a memory cap, so a
regression fails here instead of taking the machine."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SIM = [sys.executable, "-m", "sim.cli"]
MEMORY_CAP = 1536 * 1024 * 1024

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="caps memory with POSIX rlimits")


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def sim(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SIM, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=_capped,
    )


def laughs(depth: int = 12) -> str:
    """A "billion laughs" alias bomb: each level is ten references to the one before."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, depth):
        refs = ", ".join([f"*l{level - 1}"] * 10)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


USER = {"messages": [{"role": "user", "content": "hi"}]}
REPLY = {
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}]
}


def cassette_text(request_body: str | None = None) -> str:
    request = {
        "method": "POST",
        "uri": "https://api.openai.com/v1/chat/completions",
        "headers": {},
        "body": request_body or json.dumps(USER),
    }
    response = {
        "status": {"code": 200, "message": "OK"},
        "headers": {},
        "body": {"string": json.dumps(REPLY)},
    }
    return yaml.safe_dump({"interactions": [{"request": request, "response": response}], "version": 1})


def one_clear_line(done: subprocess.CompletedProcess[str], path: Path, *expected: str) -> None:
    output = done.stdout + done.stderr
    assert done.returncode in (1, 2), output
    assert "Traceback" not in output and "Error:" not in output.replace("YAML", ""), output
    lines = [line for line in output.splitlines() if str(path) in line and all(e in line for e in expected)]
    assert lines, output


COMMANDS = ["show", "check", "convert", "replay", "play"]
PLAYED_CASSETTE = "a cassette (it has `interactions:`), not a scenario"


def about_cassette(command: str, *expected: str) -> tuple[str, ...]:
    """What a command says of a broken cassette: `sim play` first says it is not a scenario."""
    return (PLAYED_CASSETTE,) if command == "play" else expected


def run(command: str, path: Path) -> subprocess.CompletedProcess[str]:
    if command == "convert":
        return sim("convert", path, "-o", path.with_name("out.yaml"), "--force")
    return sim(command, path)


@pytest.mark.parametrize("command", COMMANDS)
def test_an_alias_bomb_in_a_scenario_is_refused(tmp_path: Path, command: str) -> None:
    path = tmp_path / "laughs.yaml"
    path.write_text(laughs() + "prompt: p\nreplies: [{content: ok}]\n")
    if command in ("show", "check", "play"):
        one_clear_line(run(command, path), path, "aliases expand to")


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("where", ["body", "header"])
def test_an_alias_bomb_in_a_cassette_is_refused(tmp_path: Path, command: str, where: str) -> None:
    header = "*l11" if where == "header" else "[a]"
    body = "*l11" if where == "body" else json.dumps(json.dumps(USER))
    path = tmp_path / "cassette.yaml"
    path.write_text(
        laughs()
        + "interactions:\n- request:\n    method: POST\n    uri: https://api.openai.com/v1/chat/completions\n"
        + f"    headers: {{x-laugh: {header}}}\n    body: {body}\n"
        + "  response:\n    status: {code: 200, message: OK}\n    headers: {}\n"
        + f"    body: {{string: {json.dumps(json.dumps(REPLY))}}}\nversion: 1\n"
    )
    one_clear_line(run(command, path), path, "aliases expand to")


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("a: &a [*a]\nprompt: p\nreplies: [{content: ok}]\n")
    one_clear_line(sim("check", path), path, "recursive alias")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_gzip_bomb_names_the_interaction(tmp_path: Path, command: str) -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b"\0" * (1024 * 1024)
    packed = b"".join(packer.compress(zeros) for _ in range(80)) + packer.flush()  # 80 MiB of zeros
    data = yaml.safe_load(cassette_text())
    data["interactions"][0]["response"]["body"]["string"] = packed
    path = tmp_path / "gzip.yaml"
    path.write_text(yaml.safe_dump(data))
    expected = about_cassette(command, "interaction 0", "decompresses to more than 64 MiB")
    one_clear_line(run(command, path), path, *expected)


@pytest.mark.parametrize("command", ["show", "check", "play"])
def test_a_scenario_nested_500_deep_is_refused(tmp_path: Path, command: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("prompt: p\nreplies: [{content: ok}]\nx: " + "[" * 500 + "]" * 500 + "\n")
    one_clear_line(run(command, path), path, "nested deeper than 128 levels")


@pytest.mark.parametrize("command", ["show", "check", "convert"])
def test_a_cassette_body_nested_990_deep_is_unreadable_not_a_crash(tmp_path: Path, command: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(cassette_text(request_body='{"messages":' + "[" * 990 + "]" * 990 + "}"))
    done = run(command, path)
    assert "Traceback" not in done.stdout + done.stderr
    if command == "check":
        assert done.returncode == 1
        assert "request cannot be read: request body is not a JSON object" in done.stdout


@pytest.mark.parametrize("command", ["show", "check", "convert", "replay"])
def test_a_parsed_body_nested_990_deep_is_one_line(tmp_path: Path, command: str) -> None:
    """`parsed_body` (a YAML mapping, as pydantic-ai's serializer writes bodies) in block style nests as
    deep as the file likes; it is refused before anything walks it recursively."""
    path = tmp_path / "deep.yaml"
    request = (
        "- request:\n    method: POST\n    uri: https://api.openai.com/v1/chat/completions\n"
        "    body:\n      parsed_body:\n        messages:\n        - " + "- " * 990 + "x\n"
    )
    response = "  response:\n    status: {code: 200, message: OK}\n    body: {string: '{}'}\n"
    path.write_text(f"interactions:\n{request}{response}version: 1\n")
    one_clear_line(run(command, path), path, "interaction 0", "nested deeper than 128 levels")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_raw_control_character_gives_its_position(tmp_path: Path, command: str) -> None:
    path = tmp_path / "control.yaml"
    text = cassette_text().replace("hi", "h\x07i", 1)
    path.write_text(text)
    before = text[: text.index("\x07")]
    line, column = before.count("\n") + 1, len(before) - before.rfind("\n")
    one_clear_line(
        run(command, path), path, f":{line}:{column}: YAML syntax: control characters are not allowed"
    )


BROKEN: dict[str, Callable[[dict], None]] = {
    "request null": lambda d: d["interactions"][0].update(request=None),
    "response text": lambda d: d["interactions"][0].update(response="x"),
    "no uri": lambda d: d["interactions"][0]["request"].pop("uri"),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_interactions_of_the_wrong_shape(tmp_path: Path, command: str, broken: str) -> None:
    data = yaml.safe_load(cassette_text())
    BROKEN[broken](data)
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    one_clear_line(run(command, path), path, *about_cassette(command, "interaction 0"))


def bundled(tmp_path: Path, change: Callable[[dict], None]) -> Path:
    data = yaml.safe_load((ROOT / "cassettes" / "echo-42.yaml").read_text())
    change(data)
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["sim"].update(max_turns=-1), "max_turns: Input should be greater than 0"),
        (lambda d: d["sim"].update(system_prompt=""), "system_prompt: String should have at least 1"),
        (lambda d: d["sim"]["tools"][0].update(name="no spaces allowed"), "invalid tool name"),
    ],
    ids=["max_turns", "system_prompt", "tool name"],
)  # fmt: skip
def test_check_refuses_what_replay_refuses(
    tmp_path: Path, change: Callable[[dict], None], expected: str
) -> None:
    path = bundled(tmp_path, change)
    replayed, checked = sim("replay", path), sim("check", path)
    one_clear_line(replayed, path, expected)
    one_clear_line(checked, path, "serious", expected)


def test_check_refuses_a_cut_cassette(tmp_path: Path) -> None:
    text = (ROOT / "cassettes" / "echo-42.yaml").read_text()
    lines = text.splitlines(keepends=True)
    cut = tmp_path / "cut.yaml"
    cut.write_text("".join(lines[: len(lines) * 3 // 4]))
    done = sim("check", cut)
    assert done.returncode == 1, done.stdout
    assert "no `version: 1` at its end" in done.stdout or "YAML syntax" in done.stdout


def test_check_refuses_an_empty_cassette(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("interactions: []\nversion: 1\n")
    done = sim("check", path)
    assert done.returncode == 1
    assert "serious: no interactions recorded" in done.stdout


def test_a_scenario_file_past_the_size_limit_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    reply = "  - content: " + "x" * 100 + "\n"
    path.write_text("prompt: p\nreplies:\n" + reply * (9 * 1024 * 1024 // len(reply)))
    for command in ("play", "check", "show"):
        one_clear_line(sim(command, path), path, "is more than a scenario file may hold (8 MiB)")


@pytest.mark.parametrize("command", ["show", "check", "convert", "replay"])
def test_a_cassette_nested_900_deep_in_yaml_is_read_or_refused_never_a_crash(
    tmp_path: Path, command: str
) -> None:
    """Cassettes skip the node walk unless they define an anchor; deep nesting must still never crash."""
    path = tmp_path / "deep.yaml"
    path.write_text(cassette_text().replace("headers: {}", "headers: {x: " + "[" * 900 + "]" * 900 + "}", 1))
    done = run(command, path)
    output = done.stdout + done.stderr
    assert "Traceback" not in output and "Error:" not in output.replace("YAML", ""), output
    assert done.returncode in (0, 1, 2)
