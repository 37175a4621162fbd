"""Compact cassettes: every body rebuilt byte for byte, `expand(compact(x))` is `x` for what sim writes,
everything reads the compact form (replay, show, check, convert, serve, the marker and cassette items),
requests that rewrite history stay in full, and broken references get one line."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from sim.cassette import compact, replay
from sim.cassette.compact import compact_data, expand_data
from sim.cassette.reader import load_data, read_cassette
from sim.cassette.replay import replay_cassette
from sim.cassette.writer import to_yaml
from sim.cli import app, files
from sim.core.errors import CassetteError
from tests.cassette.hosted import answers_its_recording
from tests.commands import in_process
from tests.corpus import needs_corpus, real_cassettes

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = sorted((ROOT / "cassettes").rglob("*.yaml"))


def compacted(original: Path, folder: Path) -> Path:
    path = folder / f"compact-{original.parent.name}-{original.name}"
    path.write_text(to_yaml(compact_data(load_data(original))))
    return path


@pytest.mark.parametrize("original", BUNDLED, ids=lambda p: str(p.relative_to(ROOT)))
def test_bundled_cassettes_round_trip_byte_for_byte_and_replay(tmp_path: Path, original: Path) -> None:
    path = compacted(original, tmp_path)
    plain, compact = read_cassette(original), read_cassette(path)
    assert compact.compact and not plain.compact and compact.sim == plain.sim
    assert [i.request.body for i in compact.interactions] == [i.request.body for i in plain.interactions]
    chained = bool(plain.sim and plain.sim.get("chain"))  # each request sends only what is new: nothing to do
    assert any(i.request.extended for i in compact.interactions) is not chained
    assert (path.stat().st_size < original.stat().st_size) is not chained
    assert to_yaml(expand_data(load_data(path))) == original.read_text()
    report = asyncio.run(replay_cassette(path))
    assert report.passed, report.problems


@needs_corpus
@pytest.mark.parametrize("folder", ["", "responses"])
def test_every_real_cassette_rebuilds_each_body_and_expands_to_the_same_data(
    tmp_path: Path, folder: str
) -> None:
    paths = real_cassettes(folder)
    assert paths
    extended = 0
    for original in paths:
        path = compacted(original, tmp_path)
        plain, compact = read_cassette(original), read_cassette(path)
        for before, after in zip(plain.interactions, compact.interactions, strict=True):
            assert after.request.body == before.request.body, (original.name, before.index)
            assert after.response.body == before.response.body
            extended += after.request.extended is not None
        data = load_data(original)
        assert expand_data(load_data(path)) == {**data, **({"sim": data["sim"]} if "sim" in data else {})}
        asyncio.run(answers_its_recording(path, repeat=False))
    assert extended > 0  # the corpus's conversations did extend


def _conversation(*bodies: dict[str, Any]) -> dict[str, Any]:
    interactions = [
        {"request": {"body": to_yaml_body(body), "headers": {}, "method": "POST",
                     "uri": "https://api.openai.com/v1/chat/completions"},
         "response": {"body": {"string": "{}"}, "headers": {}, "status": {"code": 200, "message": "OK"}}}
        for body in bodies
    ]  # fmt: skip
    return {"interactions": interactions, "version": 1}


def to_yaml_body(body: dict[str, Any]) -> str:
    from sim.cassette.writer import json_lines

    return json_lines(body)


def message(role: str, content: str) -> dict[str, str]:
    return {"role": role, "content": content}


def test_requests_that_rewrite_history_stay_in_full() -> None:
    system, user = message("system", "Be brief."), message("user", "Hi")
    reply, again = message("assistant", "Hello"), message("user", "And?")
    data = _conversation(
        {"model": "m", "messages": [system, user]},
        {"model": "m", "messages": [system, user, reply, again]},  # extends 0
        {
            "model": "m",
            "messages": [message("system", "Be long."), user, reply, again],
        },  # changed instructions
        {"model": "m", "messages": [system, again]},  # dropped messages
        {"model": "m", "messages": [system, user, reply, again, reply]},  # extends 1 (still on the frontier)
        {"model": "other", "messages": [system, user, reply, again, reply, again]},  # another model: in full
    )
    bodies = [i["request"]["body"] for i in compact_data(data)["interactions"]]
    assert [b["extends"] if isinstance(b, dict) else None for b in bodies] == [None, 0, None, None, 1, None]
    assert expand_data(compact_data(data)) == {**data, "interactions": data["interactions"]}


@pytest.mark.parametrize(
    ("reference", "said"),
    [
        ({"extends": 5, "at": 1, "add": ",{}"}, "`extends` must name an earlier interaction"),
        ({"extends": "0", "at": 1, "add": ",{}"}, "`extends` must name an earlier interaction"),
        ({"extends": 0, "at": 10**9, "add": ",{}"}, "`at` must be an offset"),
        ({"extends": 0, "at": 1, "add": ["x"]}, "`at` must be an offset"),
    ],
)
def test_a_broken_reference_is_one_line_naming_the_interaction(
    tmp_path: Path, reference: dict[str, Any], said: str
) -> None:
    data = _conversation({"model": "m", "messages": [message("user", "Hi")]}, {"model": "m", "messages": []})
    data["interactions"][1]["request"]["body"] = reference
    path = tmp_path / "broken.yaml"
    path.write_text(to_yaml(data))
    with pytest.raises(CassetteError, match=f"interaction 1: .*{said[:20]}"):
        read_cassette(path)
    done = in_process("expand", path)
    assert done.returncode == 1 and said in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_at_counts_characters_not_bytes(tmp_path: Path) -> None:
    """An offset past the base body's characters (but within its UTF-8 bytes) is refused, not cut mid-text."""
    data = _conversation({"model": "m", "messages": [message("user", "héllo wörld ünïcödé")]}, {"model": "m"})
    base = data["interactions"][0]["request"]["body"]
    assert len(base.encode()) > len(base) + 5
    data["interactions"][1]["request"]["body"] = {"extends": 0, "at": len(base) + 3, "add": ",{}"}
    path = tmp_path / "offset.yaml"
    path.write_text(to_yaml(data))
    with pytest.raises(CassetteError, match=r"interaction 1: .*`at` must be an offset"):
        read_cassette(path)
    data["interactions"][1]["request"]["body"] = {"extends": 0, "at": len(base) - 2, "add": ",{}"}
    path.write_text(to_yaml(data))
    assert read_cassette(path).interactions[1].request.text == base[:-2] + ",{}" + base[-2:]


def test_a_long_chain_is_read_without_recursion(tmp_path: Path) -> None:
    messages = [message("user", "Start")]
    bodies = []
    turns = sys.getrecursionlimit() + 500  # deeper than a recursive reader could go
    for turn in range(turns):
        messages = [*messages, message("assistant", f"turn {turn}")]
        bodies.append({"model": "m", "messages": messages})
    data = compact_data(_conversation(*bodies))
    path = tmp_path / "long.yaml"
    path.write_text(to_yaml(data))
    last = read_cassette(path).interactions[-1].request
    assert last.size == len(to_yaml_body(bodies[-1]).encode())
    assert json.loads(last.body or b"")["messages"][-1]["content"] == f"turn {turns - 1}"


def test_a_divergence_in_a_compact_cassette_names_the_turn_and_the_path(tmp_path: Path) -> None:
    data = load_data(ROOT / "cassettes" / "echo-42.yaml")
    reply = data["interactions"][0]["response"]["body"]["string"]
    data["interactions"][0]["response"]["body"]["string"] = reply.replace("echo 42", "echo 43")
    path = tmp_path / "changed.yaml"
    path.write_text(to_yaml(compact_data(data)))
    report = asyncio.run(replay_cassette(path))
    assert report.problems[0].startswith("turn 2: messages[2].tool_calls[0].function.arguments: recorded")


def test_show_check_and_convert_read_the_compact_form(tmp_path: Path) -> None:
    path = compacted(ROOT / "cassettes" / "parallel-calls.yaml", tmp_path)
    for command in (
        ["show", str(path)],
        ["check", str(path)],
        ["convert", str(path), "-o", str(tmp_path / "s.yaml")],
    ):
        done = in_process(*command)
        assert done.returncode == 0, done.stdout + done.stderr
    assert yaml.safe_load((tmp_path / "s.yaml").read_text())["replies"]


def test_the_marker_and_cassette_items_read_compact_cassettes(tmp_path: Path) -> None:
    (tmp_path / "cassettes" / "test_weather").mkdir(parents=True)
    (tmp_path / "test_weather.py").write_text(
        (ROOT / "examples" / "frameworks" / "test_weather.py").read_text()
    )
    for original in (ROOT / "examples" / "frameworks" / "cassettes" / "test_weather").glob("*.yaml"):
        target = tmp_path / "cassettes" / "test_weather" / original.name
        target.write_text(to_yaml(compact_data(load_data(original))))
    items = tmp_path / "items"
    items.mkdir()
    for original in BUNDLED[:2]:
        compacted(original, items)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "test_weather.py", "-q", "-p", "no:cacheprovider", "--rootdir",
         str(tmp_path), "--sim-cassettes", str(items)],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "8 passed" in done.stdout


def test_references_that_rebuild_into_a_bomb_are_refused(tmp_path: Path) -> None:
    data = _conversation({"model": "m", "messages": [message("user", "Hi")]})
    first = data["interactions"][0]
    at = len(first["request"]["body"]) - 4
    add = ",\n    " + json.dumps(message("user", "x" * 1_000_000))
    for index in range(1, 80):  # each adds 1 MB to the one before: the last would be 79 MB
        body = {"extends": index - 1, "at": at, "add": add}
        data["interactions"].append({**first, "request": {**first["request"], "body": body}})
        at += len(add)
    path = tmp_path / "bomb.yaml"
    path.write_text(to_yaml(data))
    with pytest.raises(CassetteError, match=r"interaction 6\d: the body rebuilds to more than 64 MiB"):
        read_cassette(path)


def many_references(count: int, size: int, *, appended: bool, system: str | None = None) -> dict[str, Any]:
    """One request of `size` characters, then `count` requests that each extend it by one more message:
    written as sim writes appended items (`appended`), or inserted elsewhere, which only a rebuild reads."""
    messages = [message("user", "x" * size)] if system is None else [message("system", system)]
    data = _conversation({"model": "m", "messages": messages})
    first = data["interactions"][0]
    first["response"]["body"]["string"] = json.dumps(
        {
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
            ]
        }
    )
    body = first["request"]["body"]
    at = len(body) - (len("\n  ]\n}") if appended else 4)
    for number in range(1, count + 1):
        add = ",\n    " + json.dumps(message("user", f"branch {number}"))
        data["interactions"].append(
            {**first, "request": {**first["request"], "body": {"extends": 0, "at": at, "add": add}}}
        )
    data["sim"] = {"compact": True}
    return data


@pytest.mark.parametrize("command", ["show", "check", "convert", "expand"])
def test_references_that_rebuild_into_too_much_in_all_are_one_line_in_every_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Each body is within the per-body limit; together they pass the file's limit (lowered here from
    1 GiB so that the test rebuilds 64 MiB, not gigabytes)."""
    monkeypatch.setattr(compact, "MAX_REBUILT_BYTES", 64 * 1024 * 1024)
    path = tmp_path / "references.yaml"
    path.write_text(to_yaml(many_references(100, 1024 * 1024, appended=False)))
    before = path.read_bytes()
    arguments = [command, str(path)] + (["-o", str(tmp_path / "s.yaml")] if command == "convert" else [])
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    told = [line for line in result.output.splitlines() if "rebuild to" in line]
    assert told == [f"{path}: interaction 64: the compact request bodies rebuild to more than 64 MiB in all"]
    assert "Traceback" not in result.output
    assert path.read_bytes() == before and not (tmp_path / "s.yaml").exists()


def test_references_sim_writes_are_read_from_their_items_without_rebuilding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same file written as sim writes appended items: show and check read each branch from what it
    adds, so the file's limit is never reached (a limit of one body is enough)."""
    monkeypatch.setattr(compact, "MAX_REBUILT_BYTES", 1024 * 1024)
    path = tmp_path / "references.yaml"
    path.write_text(to_yaml(many_references(100, 1024 * 1024, appended=True)))
    for command in ("show", "check"):
        result = CliRunner().invoke(app, [command, str(path)])
        assert result.exit_code == 0, result.output
    assert "in 100 conversations" in CliRunner().invoke(app, ["show", str(path)]).output


def test_convert_refuses_to_write_more_than_its_limit_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 branches of one request with a 100 KB system prompt make 41 scenarios of 100 KB each (the
    first request, and each branch: a run of its own)."""
    monkeypatch.setattr(files, "MAX_CONVERTED_CHARS", 1024 * 1024)
    path = tmp_path / "branches.yaml"
    path.write_text(to_yaml(many_references(40, 0, appended=True, system="s" * 100_000)))
    result = CliRunner().invoke(app, ["convert", str(path), "-o", str(tmp_path / "s.yaml")])
    assert result.exit_code == 1
    assert f"{path}: its 41 conversations would make more than 1 MiB of scenarios; nothing written" in (
        result.output
    )
    assert not list(tmp_path.glob("s*.yaml"))
    monkeypatch.setattr(files, "MAX_CONVERTED_CHARS", 8 * 1024 * 1024)
    result = CliRunner().invoke(app, ["convert", str(path), "-o", str(tmp_path / "s.yaml")])
    assert result.exit_code == 0, result.output
    assert len(list(tmp_path.glob("s*.yaml"))) == 41


def _stays_foreign(pytester: pytest.Pytester, foreign: Path) -> None:
    """`sim compact` then `sim expand` of anyone's cassette, beside one `sim record` wrote, in a folder of
    cassette items: the foreign one is never an item (it has no session to replay), the other always is, and
    expanding gives the foreign one's data back with no `sim:` block."""
    folder = pytester.mkdir("recorded")
    original = load_data(foreign)
    (folder / "theirs.yaml").write_text(foreign.read_text())
    (folder / "ours.yaml").write_text((ROOT / "cassettes" / "echo-42.yaml").read_text())
    files = [str(folder / "theirs.yaml"), str(folder / "ours.yaml")]
    done = CliRunner().invoke(app, ["compact", *files])
    assert done.exit_code == 0, done.output
    assert read_cassette(folder / "theirs.yaml").compact and read_cassette(folder / "ours.yaml").compact
    result = pytester.runpytest("--sim-cassettes=recorded", "-v", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*recorded/ours.yaml::ours PASSED*"])
    assert "theirs.yaml" not in result.stdout.str()
    done = CliRunner().invoke(app, ["expand", *files])
    assert done.exit_code == 0, done.output
    assert load_data(folder / "theirs.yaml") == original and "sim" not in original


def test_anyone_s_cassette_stays_foreign_through_compact_and_expand(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    hi, hello = message("user", "Hi"), message("assistant", "Hello")
    data = _conversation(
        {"model": "m", "messages": [hi]}, {"model": "m", "messages": [hi, hello, message("user", "And?")]}
    )
    built = tmp_path / "built.yaml"
    built.write_text(yaml.safe_dump(data))
    _stays_foreign(pytester, built)


@needs_corpus
def test_a_real_cassette_stays_foreign_through_compact_and_expand(pytester: pytest.Pytester) -> None:
    (real,) = [path for path in real_cassettes() if path.name.startswith("pydantic-ai__")]
    _stays_foreign(pytester, real)


@pytest.mark.parametrize("chunk", [7, 1 << 20], ids=["small-reads", "one-read"])
@pytest.mark.parametrize(
    ("text", "session"),
    [
        ("interactions: []\nsim:\n  compact: true\nversion: 1\n", False),
        ("interactions: []\nversion: 1\nsim:\n  compact: true\n", False),
        ("interactions: []\nversion: 1\nsim:\r\n  compact: true", False),
        ("sim:\n  compact: true\ninteractions: []\n", False),
        ("interactions: []\nsim:\n  compact: true\n  prompt: hi\n", True),
        ("interactions: []\nsim:\n  prompt: hi\n  compact: true\n", True),
        ("interactions: []\nsim:\n  prompt: hi\n", True),
        ("interactions: []\nversion: 1\n", False),
    ],
    ids=["mark", "mark-last", "crlf", "mark-first", "compact-first", "compact-last", "session", "none"],
)
def test_a_sim_block_saying_only_compact_is_no_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, session: bool, chunk: int
) -> None:
    monkeypatch.setattr(replay, "_CHUNK", chunk)
    path = tmp_path / "cassette.yaml"
    path.write_text(text, newline="")
    assert replay.has_sim_block(path) is session
