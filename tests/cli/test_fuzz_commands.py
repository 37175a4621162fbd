"""The two fuzz commands: `sim fuzz --target` takes only what fuzzing someone's loop takes and `sim
fuzz-loop` only what fuzzing ours takes; `sim fuzz` without a loop is one line naming both ways; each
prints one JSON shape, the one `docs/fuzzing.md` lists; and their help is built without hypothesis."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.commands import invoke

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "fuzzing.md"
CAREFUL = "tests.fuzz.targets:careful"


def documented_fields(command: str) -> list[str]:
    """The fields of the `--json` table under the heading that names `command`, in their order."""
    text = DOCS.read_text(encoding="utf-8")
    start = text.index(f"### `{command} --json`")
    section = text[start : text.find("\n#", start + 1)]
    return re.findall(r"^\| `(\w+)` \|", section, flags=re.M)


@pytest.mark.parametrize("args", [[], ["--examples", "5"], ["--replay", "x.yaml"], ["--profile", "api"]])
def test_sim_fuzz_without_a_target_says_what_to_give_in_one_line(args: list[str]) -> None:
    done = invoke("fuzz", *args)
    assert done.exit_code == 2
    (line,) = done.output.splitlines()
    assert line.startswith("error: give --target MODULE:FUNC") and "`sim fuzz-loop`" in line, line


@pytest.mark.parametrize(
    ("command", "option"),
    [
        ("fuzz-loop", ["--target", CAREFUL]),
        ("fuzz-loop", ["--profile", "hostile"]),
        ("fuzz-loop", ["--replay", "x.yaml"]),
        ("fuzz-loop", ["--bound", "5"]),
        ("fuzz-loop", ["--run-seconds", "5"]),
        ("fuzz-loop", ["--allow", "ValueError"]),
        ("fuzz", ["--via", "sdk"]),
    ],
)
def test_each_command_refuses_the_other_ones_options(command: str, option: list[str]) -> None:
    extra = ["--target", CAREFUL] if command == "fuzz" else []
    done = invoke(command, *extra, *option, "--examples", "1")
    assert done.exit_code == 2
    assert f"No such option: {option[0]}" in done.output


def test_a_target_campaign_and_a_replay_print_the_documented_shape(tmp_path: Path) -> None:
    fields = documented_fields("sim fuzz")
    campaign = invoke("fuzz", "--target", CAREFUL, "--examples", "5", "--json")
    assert campaign.exit_code == 0, campaign.output
    summary: dict[str, Any] = json.loads(campaign.stdout)
    assert list(summary) == fields
    assert summary["runs"] == 5 and summary["not_simulated"] == 0 and summary["unhonoured_tools"] == []
    run = tmp_path / "run.yaml"
    run.write_text("prompt: Please help me with this.\nreplies:\n  - content: Sunny, 21 degrees.\n")
    replay = invoke("fuzz", "--target", CAREFUL, "--replay", str(run), "--json")
    assert replay.exit_code == 0, replay.output
    replayed: dict[str, Any] = json.loads(replay.stdout)
    assert list(replayed) == fields
    assert (replayed["runs"], replayed["requests"], replayed["raised"], replayed["violations"]) == (
        1,
        1,
        {},
        [],
    )
    assert replayed["round_trips"] is None and replayed["saved"] is None


def test_our_loops_campaign_prints_the_documented_shape(tmp_path: Path) -> None:
    done = invoke("fuzz-loop", "--examples", "5", "--json", "--save", str(tmp_path))
    assert done.exit_code == 0, done.output
    assert list(json.loads(done.stdout)) == documented_fields("sim fuzz-loop")


def test_the_help_is_built_without_hypothesis() -> None:
    """The fuzz commands alone, in a fresh interpreter: the package's other commands are left out (they
    are not this module's to keep light)."""
    program = """
import sys, types
from pathlib import Path
import sim
package = types.ModuleType("sim.cli")
package.__path__ = [str(Path(sim.__file__).parent / "cli")]
sys.modules["sim.cli"] = package
import typer
from typer.testing import CliRunner
from sim.cli.fuzzing import fuzz, fuzz_loop
app = typer.Typer()
app.command()(fuzz)
app.command()(fuzz_loop)
for name in ("fuzz", "fuzz-loop"):
    assert CliRunner().invoke(app, [name, "--help"]).exit_code == 0, name
print(sorted(name for name in sys.modules if name.startswith(("hypothesis", "sim.fuzz."))))
"""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "['sim.fuzz.terms']", done.stdout + done.stderr
