"""What starting a front end loads, in a fresh interpreter: `import sim` nothing of the core until one of its
names is used; the pytest plugin nothing of sim's command line, simulator, vcrpy or reports in a project
that uses none of sim; `sim --version` and `sim --help` none of the libraries the commands' work needs
(each command imports those when it runs). Times are measured by `bench/startup.py`, not here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import sim

ROOT = Path(sim.__file__).resolve().parents[1]
WORK = {"vcr", "hypothesis", "jinja2", "openai", "sim.player", "sim.pages", "sim.reports.html",
        "sim.core.loop"}  # fmt: skip
"""What no start of a front end loads: the simulator's and the reports' libraries, and sim's own work."""


def loaded(code: str, cwd: Path = ROOT) -> set[str]:
    """The modules a fresh interpreter holds after `code` (which may exit)."""
    wrapped = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: sys.stderr.write('MODULES ' + json.dumps(sorted(sys.modules)) + '\\n'))\n"
        + code
    )
    done = subprocess.run(
        [sys.executable, "-c", wrapped], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    line = next((x for x in done.stderr.splitlines() if x.startswith("MODULES ")), None)
    assert line is not None, done.stderr
    return set(json.loads(line.removeprefix("MODULES ")))


def test_importing_sim_loads_no_core_until_a_name_is_used() -> None:
    assert not {name for name in loaded("import sim") if name.startswith("sim.")}
    used = loaded("from sim import AgentRunner")
    assert {"sim.core.loop", "pydantic"} <= used


def test_each_public_name_of_sim_is_the_one_its_module_defines() -> None:
    from sim.core import loop, messages
    from sim.tools import shell

    assert [getattr(sim, name) for name in sim.__all__]
    assert sim.AgentRunner is loop.AgentRunner
    assert sim.ToolCall is messages.ToolCall
    assert sim.shell_tool is shell.shell_tool
    for missing in ("nothing", "core_loop"):
        with pytest.raises(AttributeError, match=missing):
            getattr(sim, missing)


def test_the_pytest_plugin_loads_nothing_of_sim_but_itself_and_its_options() -> None:
    found = {name for name in loaded("import sim.pytest_plugin") if name.startswith("sim")}
    assert found == {"sim", "sim.pytest_plugin", "sim.cassette", "sim.cassette.record_modes"}


def test_a_pytest_session_using_none_of_sim_loads_none_of_it(tmp_path: Path) -> None:
    """The plugin's hooks run on every file and test of any project: they load nothing until a folder of
    sim's is named or a sim test fails."""
    (tmp_path / "test_theirs.py").write_text(
        "def test_passes():\n    pass\n\ndef test_fails():\n    assert 0\n"
    )
    found = loaded(
        "import pytest\nsys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'sim.pytest_plugin',"
        " '-p', 'no:xdist', '-p', 'no:hypothesispytest', '.']))",  # plugins loading libraries of WORK
        tmp_path,
    )
    assert "sim.pytest_plugin" in found
    assert not found & (WORK | {"sim.cli", "sim.scenario", "sim.cassette.replay", "sim.cassette.vcr_support"})


def test_sim_version_and_help_load_none_of_the_commands_work() -> None:
    for option in ("--version", "--help"):
        found = loaded(f"from sim.cli import main\nsys.argv[:] = ['sim', '{option}']\nmain()")
        assert "sim.cli.files" in found and "typer" in found
        assert not found & WORK, option


def test_sim_show_of_a_cassette_loads_no_simulator_and_no_report_engine() -> None:
    show = "sys.argv[:] = ['sim', 'show', 'cassettes/echo-42.yaml']"
    found = loaded(f"from sim.cli import main\n{show}\nmain()")
    assert "sim.cassette.outline" in found
    page = {"sim.pages", "sim.reports.html"}  # their plain data: Jinja2 waits for a page to render
    assert not found & (WORK - page)


def test_reading_a_users_file_safely_needs_no_scenario_loader() -> None:
    found = loaded("import sim.scenario.user_files")
    assert not found & {"sim.scenario.loader", "sim.scenario.schema", "pydantic", "yaml"}
