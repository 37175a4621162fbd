"""pytest plugin: each scenario file under `--sim-scenarios=DIR` (ini `sim_scenarios`) is a test, and so is
each cassette `sim record` wrote under `--sim-cassettes=DIR` (ini `sim_cassettes`), replayed offline;
`@pytest.mark.sim_cassette` records or replays a test's own traffic.

Folders named on the command line are always collected. Folders named in the ini file are collected
when pytest chooses what to run (no paths given) or a given path lies in them, so `pytest tests/x.py`
stays narrow.

Loading the plugin loads nothing of sim's simulator, vcrpy or the reports: each is imported when a sim
test is collected or run, so a pytest session that uses none of sim pays only for this module.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Iterator
from dataclasses import asdict, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pytest

from sim.cassette.record_modes import RECORD_MODES

if TYPE_CHECKING:
    from sim.cassette.replay import ReplayReport
    from sim.player import PlayReport

_ROOTS = pytest.StashKey[tuple[Path, ...]]()
_CASSETTE_ROOTS = pytest.StashKey[tuple[Path, ...]]()
_CALL_FAILED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--sim-scenarios=DIR` (repeatable), the ini option `sim_scenarios`, and `--sim-record=MODE`."""
    parser.getgroup("sim").addoption(
        "--sim-record",
        choices=RECORD_MODES,
        default="none",
        help="cassettes of @pytest.mark.sim_cassette tests: none replays only (the default, no network),"
        " once records a cassette that does not exist yet, new_episodes records the requests a cassette"
        " lacks, all records every one again; a recording keeps only what the run sent, and runs without"
        " pytest-xdist's workers (-n 0)",
    )
    parser.getgroup("sim").addoption(
        "--sim-scenarios",
        action="append",
        default=[],
        metavar="DIR",
        help="collect every scenario file (*.yaml, *.yml) under DIR as a test",
    )
    parser.addini("sim_scenarios", type="paths", default=[], help="folders of scenario files to collect")
    parser.getgroup("sim").addoption(
        "--sim-cassettes",
        action="append",
        default=[],
        metavar="DIR",
        help="collect every cassette recorded by sim record (*.yaml, *.yml) under DIR as a test replaying it",
    )
    parser.addini("sim_cassettes", type="paths", default=[], help="folders of cassettes to replay as tests")
    parser.getgroup("sim").addoption(
        "--sim-report",
        metavar="FILE.html",
        default=None,
        help="write one self-contained HTML page of the scenario and cassette items run",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker; remember the scenario folders and make sure pytest walks them."""
    config.addinivalue_line(
        "markers",
        "sim_cassette(path=None): record or replay the test's HTTP traffic in a cassette"
        " (default: cassettes/<module>/<test>.yaml beside the test module)",
    )
    if (mode := config.getoption("sim_record")) != "none" and _distributed(config):
        raise pytest.UsageError(
            f"--sim-record={mode} records in one process: add -n 0 (pytest-xdist's workers would share the"
            " endpoint, and a scripted one such as `sim serve --cycle` answers them in turn: replies swap)"
        )
    if (report := config.getoption("sim_report")) is not None:
        config.pluginmanager.register(ReportWriter(Path(report)), "sim-report")
    walked: list[Path] = []
    for name, key in (("sim_scenarios", _ROOTS), ("sim_cassettes", _CASSETTE_ROOTS)):
        named = [(config.invocation_params.dir / p).resolve() for p in config.getoption(name)]
        configured = [Path(p).resolve() for p in config.getini(name)]
        config.stash[key] = tuple(dict.fromkeys([*named, *configured]))
        walked += named if config.args_source == pytest.Config.ArgsSource.ARGS else [*named, *configured]
    for root in dict.fromkeys(walked):
        if str(root) not in config.args:
            config.args.append(str(root))


def _distributed(config: pytest.Config) -> bool:
    """Whether pytest-xdist spreads this run over workers (asked of the controller, which starts them)."""
    return not hasattr(config, "workerinput") and getattr(config.option, "dist", "no") != "no"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A YAML file under a cassette folder becomes a `CassetteFile` when it has a `sim:` block (what
    `sim record` writes; the marker's own cassettes and other YAML there are left alone), one under a
    scenario folder a `ScenarioFile`."""
    cassette_roots = parent.config.stash.get(_CASSETTE_ROOTS, ())
    scenario_roots = parent.config.stash.get(_ROOTS, ())
    if not cassette_roots and not scenario_roots:
        return None  # a session naming no folder of sim's: nothing of sim is loaded
    from sim.scenario.loader import SCENARIO_SUFFIXES

    if file_path.suffix not in SCENARIO_SUFFIXES:
        return None
    parents = file_path.resolve().parents
    if any(root in parents for root in cassette_roots):
        from sim.cassette.replay import has_sim_block

        return CassetteFile.from_parent(parent, path=file_path) if has_sim_block(file_path) else None
    if any(root in parents for root in scenario_roots):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class RunFailed(Exception):
    """A scenario or cassette item's run did not do what its file says."""

    def __init__(self, report: PlayReport | ReplayReport) -> None:
        super().__init__(report.problems)
        self.report = report


class _FileItem(pytest.Item):
    """One file run as one test; fails with each problem, then the transcript."""

    kind: ClassVar[str]
    failed: ClassVar[str]

    def run(self) -> PlayReport | ReplayReport:
        """Run the file and report how it went."""
        raise NotImplementedError  # each kind of file says how it runs

    def runtest(self) -> None:
        """Run the file; fail when its report has problems."""
        report = self.run()
        lines = [{**asdict(line), "kind": line.kind.value} for line in report.transcript]  # plain, to travel
        self.user_properties.append((_SECTION, {"kind": self.kind, **asdict(report), "transcript": lines}))
        if not report.passed:
            raise RunFailed(report)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        """The problems, then the transcript."""
        if isinstance(excinfo.value, RunFailed):
            report = excinfo.value.report
            lines = [f"{self.kind} {report.path} {self.failed}:", *(f"  {p}" for p in report.problems)]
            if report.transcript:
                lines += ["transcript:", *(f"  {line.text}" for line in report.transcript)]
            return "\n".join(lines)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the test comes from."""
        return self.path, 0, f"{self.kind} {self.name}"


class ScenarioItem(_FileItem):
    """Plays one scenario file through the real loop; fails with each differing field."""

    kind, failed = "scenario", "failed"

    def run(self) -> PlayReport:
        """Play the file."""
        import asyncio

        from sim.player import play_file

        return asyncio.run(play_file(self.path))


class CassetteItem(_FileItem):
    """Replays one cassette offline (the real loop and SDK adapter, either API); fails with the divergence
    and the transcript."""

    kind, failed = "cassette", "replayed differently"

    def run(self) -> ReplayReport:
        """Replay the cassette."""
        import asyncio

        from sim.cassette.replay import replay_file

        return asyncio.run(replay_file(self.path))


class OneTestFile(pytest.File):
    """A scenario or cassette file; it holds one test, named after the file."""

    item: ClassVar[type[_FileItem]]

    def collect(self) -> list[pytest.Item]:
        """The file's one test."""
        return [self.item.from_parent(self, name=self.path.stem)]


class ScenarioFile(OneTestFile):
    """A scenario file, played."""

    item = ScenarioItem


class CassetteFile(OneTestFile):
    """A cassette recorded by `sim record`, replayed."""

    item = CassetteItem


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Remember whether the test itself failed (a cassette it left unplayed is then no news); a failure
    for want of a recording is told in sim's words, not vcrpy's."""
    report = yield
    if report.when == "call":
        item.stash[_CALL_FAILED] = report.failed
        if report.failed and "vcr" in sys.modules:  # only a loaded vcrpy raises vcrpy's error
            from sim.cassette.vcr_support import missing_recording, missing_recording_in

            missing = missing_recording_in(call.excinfo.value if call.excinfo else None)
            if missing is not None:
                report.longrepr = missing_recording(missing)
    return report


_SECTION = "sim_report_section"
PLACEHOLDER_KEY = "sk-sim-placeholder-replaying-offline"
"""The `OPENAI_API_KEY` a replayed test has when none is set: it reaches no network and no file."""


class ReportWriter:
    """Keeps each scenario or cassette item's run (test reports reach the controller with their user
    properties, even under xdist) and writes the `--sim-report` page when the session ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.runs: list[dict[str, Any]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep the run an item attached to its report."""
        for name, value in report.user_properties:
            if name == _SECTION and report.when == "call" and isinstance(value, dict):
                self.runs.append(value)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write the page, on the controller only."""
        if hasattr(session.config, "workerinput"):
            return
        from sim.cassette.replay import ReplayReport
        from sim.pages import played, replayed, write_page
        from sim.player import PlayReport

        plays = [PlayReport(**_fields(PlayReport, run)) for run in self.runs if run["kind"] == "scenario"]
        replays = [
            ReplayReport(**_fields(ReplayReport, run)) for run in self.runs if run["kind"] == "cassette"
        ]
        page = played(plays, "pytest: sim scenarios and cassettes")
        cassettes = replayed(replays)
        page.sections += cassettes.sections
        page.outcomes.update(cassettes.outcomes)
        page.error_codes.update(cassettes.error_codes)
        page.seconds += cassettes.seconds
        write_page(self.path, page)


def _fields(kind: type[Any], data: dict[str, Any]) -> dict[str, Any]:
    """The fields of the dataclass `kind` in `data`, lists (as they travel) back to tuples, the transcript's
    lines back to `Line`s."""
    from sim.core.transcript import Line, LineKind

    names = {f.name for f in fields(kind)}
    found = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in names}
    found["transcript"] = tuple(
        Line(**{**line, "kind": LineKind(line["kind"])}) for line in found.get("transcript", ())
    )
    return found


def cassette_path(request: pytest.FixtureRequest) -> Path:
    """The marker's path (relative to the test module's folder), or `cassettes/<module>/<test>.yaml` there."""
    folder = request.path.parent
    marker = request.node.get_closest_marker("sim_cassette")
    if marker is not None and marker.args:
        return folder / str(marker.args[0])
    name = request.node.name.replace("/", "_")
    return folder / "cassettes" / request.path.stem / f"{name}.yaml"


@pytest.fixture
def sim_cassette(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The test's HTTP traffic recorded to, or replayed from, its cassette (vcrpy's `Cassette`).

    With `--sim-record=none` (the default) nothing reaches the network, and a test that leaves some
    of its cassette unplayed fails. While the cassette is only replayed, a test run without
    `OPENAI_API_KEY` has `PLACEHOLDER_KEY` in its place (SDKs refuse to start without a key); a
    recording is run with the key as it is. Recording all again with a test that now sends nothing
    leaves an empty cassette.
    """
    mode = request.config.getoption("sim_record")
    path = cassette_path(request)
    replaying = mode == "none" or (mode == "once" and path.exists())
    from sim.cassette.vcr_support import sim_vcr

    recorder = sim_vcr(mode)  # before the placeholder: the key it scrubs is the one the user set
    with (
        recorder.use_cassette(str(path), allow_playback_repeats=False) as cassette,
        pytest.MonkeyPatch.context() as environment,
    ):
        if replaying and not os.environ.get("OPENAI_API_KEY"):
            environment.setenv("OPENAI_API_KEY", PLACEHOLDER_KEY)
        yield cassette
    failed = request.node.stash.get(_CALL_FAILED, False)
    if mode == "all" and not failed and not len(cassette) and path.exists():  # vcrpy saves nothing then
        recorder.persister.save_cassette(str(path), {"requests": [], "responses": []}, serializer=None)
    if replaying and not cassette.all_played and not failed:
        unused = len(cassette.data) - cassette.play_count
        pytest.fail(
            f"cassette {path} only partly played: {unused} of {len(cassette.data)} interactions unused"
            " (--sim-record=all records it again, keeping only what the test sends)"
        )


@pytest.fixture(autouse=True)
def _sim_cassette_marker(request: pytest.FixtureRequest) -> Any:
    """Tests marked `sim_cassette` get the cassette without asking for the fixture."""
    if request.node.get_closest_marker("sim_cassette") is not None:
        return request.getfixturevalue("sim_cassette")
    return None
