"""The README and the docs work as written: every Python block runs, every YAML block is a scenario that
loads, every `sim` command in a shell block parses (its command and options exist), the sample output of
a fuzz campaign is what the campaign prints, and the docs build with `mkdocs build --strict`."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from sim.cli import app
from sim.scenario import load_scenario
from tests.host.processes import SIM, served

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(language: str) -> list[tuple[str, int, str]]:
    """Each fenced block of `language` in the pages: `(page, line, text)`."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in re.finditer(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M):
            found.append(
                (page.relative_to(ROOT).as_posix(), text.count("\n", 0, match.start()) + 1, match[1])
            )
    return found


def named(found: list[tuple[str, int, str]]) -> list[str]:
    return [f"{page}:{line}" for page, line, _ in found]


PYTHON, YAML, BASH = blocks("python"), blocks("yaml"), blocks("bash")
FILES = blocks(r'yaml title="[^"]+"')
"""YAML files that are not scenarios (a CI workflow): they must parse, and the `sim` commands they run too."""


def test_opens_with_the_install_and_test_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    first, second = re.findall(r"```bash\n(.*?)```", readme, flags=re.S)[:2]
    assert first.strip().startswith("pip install -e . && ")
    assert second.strip() == 'pip install -e ".[dev]" && pytest'
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith(second.strip())
    assert len(readme.splitlines()) <= 120  # what a newcomer needs first; the rest is in docs/


@pytest.mark.parametrize("block", PYTHON, ids=named(PYTHON))
def test_python_blocks_run(
    block: tuple[str, int, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page, line, text = block
    monkeypatch.chdir(tmp_path)
    exec(compile("\n" * line + text, page, "exec"), {})


@pytest.mark.parametrize("block", YAML, ids=named(YAML))
def test_yaml_blocks_are_scenarios_that_load(block: tuple[str, int, str], tmp_path: Path) -> None:
    (tmp_path / "scenario.yaml").write_text(block[2])
    load_scenario(tmp_path / "scenario.yaml")


def test_the_scenario_guide_is_the_bundled_echo_42(tmp_path: Path) -> None:
    (text,) = [text for page, _, text in YAML if page == "docs/scenarios.md"]
    (tmp_path / "echo-42.yaml").write_text(text)
    assert load_scenario(tmp_path / "echo-42.yaml") == load_scenario(ROOT / "scenarios" / "echo-42.yaml")


def sim_commands(text: str) -> list[list[str]]:
    """Each `sim ...` command of a shell block (or a workflow's `run:` step), as its arguments after `sim`."""
    commands = []
    for line in text.replace("\\\n", " ").splitlines():
        line = re.sub(r"^\s*(- )?run: ", "", line)
        words = shlex.split(line, comments=True)
        while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):  # VARIABLE=value sim ...
            words.pop(0)
        for stop in ("|", "&&", ";", "&", ">", "2>&1"):
            words = words[: words.index(stop)] if stop in words else words
        if words[:1] == ["sim"]:
            commands.append(words[1:])
    return commands


COMMANDS = [(f"{page}:{line}", words) for page, line, text in BASH + FILES for words in sim_commands(text)]


@pytest.mark.parametrize("block", FILES, ids=named(FILES))
def test_yaml_files_shown_parse(block: tuple[str, int, str]) -> None:
    assert isinstance(yaml.safe_load(block[2]), dict)


OFFLINE = {"play", "check", "show", "replay"}
"""Commands that need no key, no network and write nothing: run as written where their files exist."""


def runs_as_written(words: list[str]) -> bool:
    paths = [word for word in words[1:] if word.endswith(("/", ".yaml", ".yml"))]
    return words[0] in OFFLINE and all((ROOT / path).exists() for path in paths) and "--report" not in words


@pytest.mark.parametrize(
    ("where", "words"), COMMANDS, ids=[f"{w} sim {' '.join(c)[:40]}" for w, c in COMMANDS]
)
def test_sim_commands_in_shell_blocks_parse(
    where: str, words: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its command and every option exist and take what they are given (`--help` right after the command
    stops it before it runs: click parses every word first); one that runs offline on the bundled files
    is run, and passes."""
    assert words, where
    done = CliRunner().invoke(app, [words[0], "--help", *words[1:]])
    assert done.exit_code == 0, f"{where}: sim {' '.join(words)}: {done.output}"
    if runs_as_written(words):
        monkeypatch.chdir(ROOT)
        ran = CliRunner().invoke(app, words)
        assert ran.exit_code == 0, f"{where}: sim {' '.join(words)}: {ran.output}"


LIVE = {"run", "record", "proxy", "drift"}
"""Commands that need a key and a live endpoint: run as written against `sim serve` standing in for it."""
LIVE_COMMANDS = [(where, words) for where, words in COMMANDS if words[0] in LIVE]
STAND_IN = """name: live-stand-in
description: Stands in for the live API of the docs' commands; every request gets one text answer.
prompt: anything
replies:
  - content: Python 3.11 is installed.
"""
PLACEHOLDER_KEY = "sk-docs-placeholder-0123456789"


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of `sim serve --cycle` answering every request of either API with one text."""
    scenario = tmp_path_factory.mktemp("stand-in") / "stand-in.yaml"
    scenario.write_text(STAND_IN)
    with served(scenario, "--cycle", "--quiet") as (_, base_url):
        yield base_url


def here(words: list[str], base_url: str) -> list[str]:
    """The command with the live upstream replaced by the stand-in (and a free port for a proxy)."""
    words = [
        base_url if before == "--upstream" else word
        for before, word in zip(["", *words], words, strict=False)
    ]
    if words[0] == "proxy":
        split = words.index("--") if "--" in words else len(words)
        words[split:split] = ["--port", "0"]
    return words


@pytest.mark.parametrize(
    ("where", "words"), LIVE_COMMANDS, ids=[f"{w} sim {' '.join(c)[:40]}" for w, c in LIVE_COMMANDS]
)
def test_live_commands_run_against_sim_serve(
    where: str, words: list[str], stand_in: str, tmp_path: Path
) -> None:
    """Each documented command that needs a key and an endpoint runs as written, in a fresh folder holding
    the bundled files, with the three settings the docs name and its upstream replaced by `sim serve`: it
    finishes with a verdict, not a usage or configuration error, and writes no key."""
    for bundled in ("examples", "scenarios"):
        (tmp_path / bundled).symlink_to(ROOT / bundled)
    shutil.copytree(ROOT / "cassettes", tmp_path / "cassettes")  # commands write into it
    environment = {**os.environ, "OPENAI_BASE_URL": stand_in, "OPENAI_API_KEY": PLACEHOLDER_KEY,
                   "OPENAI_MODEL": "gpt-4o-mini", "PYTHONPATH": str(ROOT)}  # fmt: skip
    done = subprocess.run(
        [*SIM, *here(words, stand_in)], cwd=tmp_path, env=environment, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    said = f"{where}: sim {' '.join(words)}: {done.stdout}{done.stderr}"
    assert done.returncode in ((0, 1) if words[0] == "drift" else (0,)), said
    bundled = {path.relative_to(ROOT) for path in (ROOT / "cassettes").rglob("*")}
    files = [Path(folder, name) for folder, _, names in os.walk(tmp_path) for name in names]
    written = [path for path in files if not path.is_symlink() and path.relative_to(tmp_path) not in bundled]
    assert words[0] not in ("record", "proxy") or written, said  # a recording
    assert all(PLACEHOLDER_KEY not in path.read_text(errors="replace") for path in written), said


def test_every_page_has_commands_checked() -> None:
    pages = {where.rsplit(":", 1)[0] for where, _ in COMMANDS}
    assert {"README.md", "docs/scenarios.md", "docs/serving.md", "docs/fuzzing.md", "docs/drift.md"} <= pages
    assert any(where.startswith("docs/drift.md") and words[0] == "drift" for where, words in COMMANDS)
    assert sum(runs_as_written(words) for _, words in COMMANDS) >= 4


def test_the_docs_build_strictly(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    assert mkdocs.exists(), "mkdocs is not installed; install the dev extras"
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "fuzzing" / "index.html").exists()
