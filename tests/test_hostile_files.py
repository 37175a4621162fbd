"""Hostile files through every command that reads them: a clear one-line error (or finding), bounded time
and memory, never a traceback or a hang. Each case runs the command in this process (typer's `CliRunner`);
one file that could take memory, the stack or a blocked read is read again by a real `sim` process per
command, under a memory cap, to show the process ends the same way."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.commands import in_process
from tests.hangs import within
from tests.host.processes import SIM
from tests.scripts import cassette_text, chat_interaction

ROOT = Path(__file__).resolve().parents[1]
MEMORY_CAP = 1536 * 1024 * 1024
API_KEY = "sk-hostile-files-test"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="caps memory with POSIX rlimits")


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def sim(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`sim ARGS` in a real process of its own, its address space capped and its time bounded."""
    return subprocess.run(
        [*SIM, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=_capped,
        env={**os.environ, "OPENAI_API_KEY": API_KEY},
    )


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The key commands that call a model read, for the commands run in this process."""
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)


def _address_space() -> int | None:
    """Bytes of address space this process holds now, where the system says (Linux)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pages * resource.getpagesize()


@contextlib.contextmanager
def memory_capped() -> Iterator[None]:
    """This process may take `MEMORY_CAP` more address space while the block runs: a file that would take
    the machine's memory fails the test with a `MemoryError` instead (the soft limit is raised back after)."""
    in_use = _address_space()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if in_use is None:
        yield
        return
    cap = in_use + MEMORY_CAP
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def guarded(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`sim ARGS` in this process, under the memory cap and a time limit (a hang is a failure)."""
    with within(60, "sim " + " ".join(map(str, args))), memory_capped():
        return in_process(*args)


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


def run(
    command: str, path: Path, how: Callable[..., subprocess.CompletedProcess[str]] = guarded
) -> subprocess.CompletedProcess[str]:
    """`sim COMMAND PATH`, in this process under the memory cap unless `how` says otherwise."""
    if command == "convert":
        return how("convert", path, "-o", path.with_name("out.yaml"), "--force")
    return how(command, path)


def scenario_bomb(tmp_path: Path) -> Path:
    path = tmp_path / "laughs.yaml"
    path.write_text(laughs() + "prompt: p\nreplies: [{content: ok}]\n")
    return path


def cassette_bomb(tmp_path: Path, where: str) -> Path:
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
    return path


def recursive_alias(tmp_path: Path) -> Path:
    path = tmp_path / "loop.yaml"
    path.write_text("a: &a [*a]\nprompt: p\nreplies: [{content: ok}]\n")
    return path


def gzip_bomb(tmp_path: Path) -> Path:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b"\0" * (1024 * 1024)
    packed = b"".join(packer.compress(zeros) for _ in range(80)) + packer.flush()  # 80 MiB of zeros
    data = yaml.safe_load(cassette_text(chat_interaction(USER, REPLY)))
    data["interactions"][0]["response"]["body"]["string"] = packed
    path = tmp_path / "gzip.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def deep_scenario(tmp_path: Path) -> Path:
    path = tmp_path / "deep.yaml"
    path.write_text("prompt: p\nreplies: [{content: ok}]\nx: " + "[" * 500 + "]" * 500 + "\n")
    return path


def deep_parsed_body(tmp_path: Path) -> Path:
    path = tmp_path / "deep.yaml"
    request = (
        "- request:\n    method: POST\n    uri: https://api.openai.com/v1/chat/completions\n"
        "    body:\n      parsed_body:\n        messages:\n        - " + "- " * 990 + "x\n"
    )
    response = "  response:\n    status: {code: 200, message: OK}\n    body: {string: '{}'}\n"
    path.write_text(f"interactions:\n{request}{response}version: 1\n")
    return path


@pytest.mark.parametrize("command", COMMANDS)
def test_an_alias_bomb_in_a_scenario_is_refused(tmp_path: Path, command: str) -> None:
    path = scenario_bomb(tmp_path)
    if command in ("show", "check", "play"):
        one_clear_line(run(command, path), path, "aliases expand to")


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("where", ["body", "header"])
def test_an_alias_bomb_in_a_cassette_is_refused(tmp_path: Path, command: str, where: str) -> None:
    path = cassette_bomb(tmp_path, where)
    one_clear_line(run(command, path), path, "aliases expand to")


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    path = recursive_alias(tmp_path)
    one_clear_line(guarded("check", path), path, "recursive alias")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_gzip_bomb_names_the_interaction(tmp_path: Path, command: str) -> None:
    path = gzip_bomb(tmp_path)
    expected = about_cassette(command, "interaction 0", "decompresses to more than 64 MiB")
    one_clear_line(run(command, path), path, *expected)


@pytest.mark.parametrize("command", ["show", "check", "play"])
def test_a_scenario_nested_500_deep_is_refused(tmp_path: Path, command: str) -> None:
    path = deep_scenario(tmp_path)
    one_clear_line(run(command, path), path, "nested deeper than 128 levels")


@pytest.mark.parametrize("command", ["show", "check", "convert"])
def test_a_cassette_body_nested_990_deep_is_unreadable_not_a_crash(tmp_path: Path, command: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(cassette_text(chat_interaction('{"messages":' + "[" * 990 + "]" * 990 + "}", REPLY)))
    done = run(command, path)
    assert "Traceback" not in done.stdout + done.stderr
    if command == "check":
        assert done.returncode == 1
        assert "request cannot be read: request body is not a JSON object" in done.stdout


@pytest.mark.parametrize("command", ["show", "check", "convert", "replay"])
def test_a_parsed_body_nested_990_deep_is_one_line(tmp_path: Path, command: str) -> None:
    """`parsed_body` (a YAML mapping, as pydantic-ai's serializer writes bodies) in block style nests as
    deep as the file likes; it is refused before anything walks it recursively."""
    path = deep_parsed_body(tmp_path)
    one_clear_line(run(command, path), path, "interaction 0", "nested deeper than 128 levels")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_raw_control_character_gives_its_position(tmp_path: Path, command: str) -> None:
    path = tmp_path / "control.yaml"
    text = cassette_text(chat_interaction(USER, REPLY)).replace("hi", "h\x07i", 1)
    path.write_text(text)
    before = text[: text.index("\x07")]
    line, column = before.count("\n") + 1, len(before) - before.rfind("\n")
    said = f":{line}:{column}: YAML syntax: control characters are not allowed"
    one_clear_line(run(command, path, in_process), path, said)


BROKEN: dict[str, Callable[[dict[str, Any]], None]] = {
    "request null": lambda d: d["interactions"][0].update(request=None),
    "response text": lambda d: d["interactions"][0].update(response="x"),
    "no uri": lambda d: d["interactions"][0]["request"].pop("uri"),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_interactions_of_the_wrong_shape(tmp_path: Path, command: str, broken: str) -> None:
    data = yaml.safe_load(cassette_text(chat_interaction(USER, REPLY)))
    BROKEN[broken](data)
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    one_clear_line(run(command, path, in_process), path, *about_cassette(command, "interaction 0"))


def bundled(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
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
    tmp_path: Path, change: Callable[[dict[str, Any]], None], expected: str
) -> None:
    path = bundled(tmp_path, change)
    replayed, checked = in_process("replay", path), in_process("check", path)
    one_clear_line(replayed, path, expected)
    one_clear_line(checked, path, "serious", expected)


def test_check_refuses_a_cut_cassette(tmp_path: Path) -> None:
    text = (ROOT / "cassettes" / "echo-42.yaml").read_text()
    lines = text.splitlines(keepends=True)
    cut = tmp_path / "cut.yaml"
    cut.write_text("".join(lines[: len(lines) * 3 // 4]))
    done = in_process("check", cut)
    assert done.returncode == 1, done.stdout
    assert "no `version: 1` at its end" in done.stdout or "YAML syntax" in done.stdout


def test_check_refuses_an_empty_cassette(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("interactions: []\nversion: 1\n")
    done = in_process("check", path)
    assert done.returncode == 1
    assert "serious: no interactions recorded" in done.stdout


def test_a_scenario_file_past_the_size_limit_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    reply = "  - content: " + "x" * 100 + "\n"
    path.write_text("prompt: p\nreplies:\n" + reply * (9 * 1024 * 1024 // len(reply)))
    for command in ("play", "check", "show"):
        one_clear_line(in_process(command, path), path, "is more than a scenario file may hold (8 MiB)")


@pytest.mark.parametrize("command", ["show", "check", "convert", "replay"])
def test_a_cassette_nested_900_deep_in_yaml_is_read_or_refused_never_a_crash(
    tmp_path: Path, command: str
) -> None:
    """Cassettes skip the node walk unless they define an anchor; deep nesting must still never crash."""
    path = tmp_path / "deep.yaml"
    path.write_text(
        cassette_text(chat_interaction(USER, REPLY)).replace(
            "headers: {}", "headers: {x: " + "[" * 900 + "]" * 900 + "}", 1
        )
    )
    done = run(command, path)
    output = done.stdout + done.stderr
    assert "Traceback" not in output and "Error:" not in output.replace("YAML", ""), output
    assert done.returncode in (0, 1, 2)


READERS: dict[str, Callable[[Path], list[str | Path]]] = {
    "show": lambda path: ["show", path],
    "check": lambda path: ["check", path],
    "play": lambda path: ["play", path],
    "replay": lambda path: ["replay", path],
    "convert": lambda path: ["convert", path, "-o", path.with_name("out.yaml")],
    "serve": lambda path: ["serve", path, "--port", "0"],
    "drift": lambda path: ["drift", path, "--upstream", "http://127.0.0.1:9/v1"],
    "compact": lambda path: ["compact", path],
    "expand": lambda path: ["expand", path],
    "fuzz --replay": lambda path: ["fuzz", "--target", "examples.openai_loop:run_agent", "--replay", path],
}
"""Every command that reads a user's file, given `path`."""


def special(tmp_path: Path, kind: str) -> Path:
    """A path named like a YAML file that is no regular file: a FIFO, or a symlink to /dev/zero."""
    path = tmp_path / "x.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    return path


def sparse(tmp_path: Path) -> Path:
    """3 GiB that take no room on disk."""
    path = tmp_path / "huge.yaml"
    with path.open("wb") as file:
        file.truncate(3 * 1024**3)
    return path


def folder_of_specials(tmp_path: Path) -> Path:
    """A folder whose YAML names are all FIFOs or a symlink to /dev/zero, one of them a level down."""
    folder = tmp_path / "files"
    folder.mkdir()
    os.mkfifo(folder / "fifo.yaml")
    (folder / "zero.yaml").symlink_to("/dev/zero")
    (folder / "nested").mkdir()
    os.mkfifo(folder / "nested" / "deeper.yml")
    return folder


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
@pytest.mark.parametrize("command", sorted(READERS))
def test_what_is_no_regular_file_is_refused_at_once(tmp_path: Path, command: str, kind: str) -> None:
    """A FIFO hung every command that read it (waiting for a writer); a symlink to /dev/zero was read
    until a MemoryError, 1.35 GB later. Each is refused in one line, exit 2, before anything is read."""
    path = special(tmp_path, kind)
    what = "a FIFO" if kind == "fifo" else "a character device"
    with within(20, f"sim {command} on {kind}"):
        done = in_process(*READERS[command](path))
    one_clear_line(done, path, f"{path}: not a regular file ({what})")
    assert done.returncode == 2


@pytest.mark.parametrize("command", sorted(READERS))
def test_a_huge_sparse_file_is_refused_before_it_is_read(tmp_path: Path, command: str) -> None:
    """3 GiB that take no room on disk: refused from its size, past what a cassette may hold (or, for the
    commands that take only scenarios, a scenario)."""
    path = sparse(tmp_path)
    scenario = command in ("play", "fuzz --replay")
    limit = "a scenario file may hold (8 MiB)" if scenario else "a cassette may hold (512 MiB)"
    with within(20, f"sim {command} on a 3 GiB file"):
        done = in_process(*READERS[command](path))
    one_clear_line(done, path, f"3072.0 MiB is more than {limit}")


@pytest.mark.parametrize("command", ["play", "check", "replay", "drift"])
def test_a_folder_walk_leaves_out_what_is_no_regular_file(tmp_path: Path, command: str) -> None:
    folder = folder_of_specials(tmp_path)
    with within(20, f"sim {command} on a folder"):
        done = in_process(*READERS[command](folder))
    assert "Traceback" not in done.stderr
    assert done.returncode == 2 and "no YAML files" in done.stderr, done.stdout + done.stderr


SMOKE: dict[str, tuple[Callable[[Path], Path], str]] = {
    "show": (lambda tmp_path: cassette_bomb(tmp_path, "header"), "aliases expand to"),
    "check": (recursive_alias, "recursive alias"),
    "convert": (gzip_bomb, "decompresses to more than 64 MiB"),
    "replay": (deep_parsed_body, "nested deeper than 128 levels"),
    "play": (deep_scenario, "nested deeper than 128 levels"),
    "compact": (lambda tmp_path: special(tmp_path, "fifo"), "not a regular file (a FIFO)"),
    "expand": (lambda tmp_path: special(tmp_path, "/dev/zero"), "not a regular file (a character device)"),
    "serve": (sparse, "3072.0 MiB is more than a cassette may hold"),
    "drift": (folder_of_specials, "no YAML files"),
    "fuzz --replay": (sparse, "3072.0 MiB is more than a scenario file may hold"),
}
"""Per command, one hostile file (made in a given folder) and what the command says of it."""


@pytest.mark.parametrize("command", sorted(SMOKE))
def test_a_real_process_ends_as_the_command_does_in_process(tmp_path: Path, command: str) -> None:
    """The cases above run in process; a real `sim` process (capped, its own stack, a real blocking open)
    given one of the files ends the same: the same exit code and the same output on the same streams, the
    file's error said on one line."""
    make, said = SMOKE[command]
    path = make(tmp_path)
    args = READERS[command](path)
    real = sim(*args)
    one_clear_line(real, path, said)
    with within(20, f"sim {command} in process"):
        here = in_process(*args)
    assert (real.returncode, real.stdout, real.stderr) == (here.returncode, here.stdout, here.stderr)
    assert [said in line for line in (real.stdout + real.stderr).splitlines()].count(True) == 1
