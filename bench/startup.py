"""Startup: how long the front ends take to begin (`sim --version`, `sim --help`, `sim show` of a bundled
cassette, a pytest start with and without the plugin) and each top-level unit of `sim` to import, as
medians of fresh interpreters, each against `python -c pass` started the same way. Goals: `sim --version`
and `sim --help` within 0.25 s, `sim show` within 0.5 s, the plugin adding at most 0.1 s to a pytest
start in a project that uses none of sim.

`sim` runs as its console script does (`from sim.cli import main`), in the interpreter running the bench
(a version manager's shim in front of it is no part of sim). pytest runs on a folder of its own with one
trivial test and no configuration, as in a project with sim installed but unused, its plugins' automatic
loading off (other plugins installed here, hypothesis's above all, take seconds and vary by more than the
goal): once with sim's plugin alone, once with none; what the plugin adds is the median of each run's
difference.

`--against DIR` measures another checkout of sim in the same run (say the release before, checked out with
`git worktree add`), through `PYTHONPATH`, each run of it right after the same run of this checkout, so
that both see the same load of a shared machine.

Run: python bench/startup.py [--runs 11] [--against DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASSETTE = "cassettes/echo-42.yaml"
SIM = "import sys; from sim.cli import main; sys.argv[0] = 'sim'; sys.exit(main())"
PLUGIN = "sim.pytest_plugin"
"""The plugin's module (pyproject.toml, `pytest11`), loaded by name with automatic loading off."""
WITH_PLUGIN = f"pytest --co -q -p {PLUGIN}"
WITHOUT_PLUGIN = "pytest --co -q, no plugin"
GOALS = {"sim --version": 0.25, "sim --help": 0.25, f"sim show {CASSETTE}": 0.5}
PLUGIN_GOAL = 0.1
"""The most the plugin may add to a pytest start (seconds)."""


@dataclass(frozen=True)
class Case:
    """One thing started: its name in the table, its arguments after the interpreter, where it runs
    (`None`: in the checkout measured), and what it adds to the environment."""

    name: str
    args: tuple[str, ...]
    cwd: Path | None = None
    environment: tuple[tuple[str, str], ...] = ()


@dataclass
class Timings:
    """Each case's wall times in one checkout; `failed` holds why a case could not run there."""

    seconds: dict[str, list[float]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)

    def median(self, name: str) -> float | None:
        times = self.seconds.get(name)
        return statistics.median(times) if times and name not in self.failed else None


def units(tree: Path) -> list[str]:
    """The top-level packages and modules of `sim` in a checkout: `sim`, `sim.cli`, `sim.player`, ..."""
    found = ["sim"]
    for path in sorted((tree / "sim").iterdir()):
        if (path / "__init__.py").is_file():
            found.append(f"sim.{path.name}")
        elif path.suffix == ".py" and path.name != "__init__.py":
            found.append(f"sim.{path.stem}")
    return found


def cases(trees: list[Path], project: Path) -> list[Case]:
    """What is timed, `python -c pass` first (the reference), then the front ends, then each unit's import
    (those of every checkout measured, a unit missing from one shown as missing there)."""
    pytest = ("-m", "pytest", "--co", "-q", "-p", "no:cacheprovider")
    alone = (("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1"),)
    imports = sorted({unit for tree in trees for unit in units(tree)}, key=lambda u: (u != "sim", u))
    return [
        Case("python -c pass", ("-c", "pass")),
        Case("sim --version", ("-c", SIM, "--version")),
        Case("sim --help", ("-c", SIM, "--help")),
        Case(f"sim show {CASSETTE}", ("-c", SIM, "show", CASSETTE)),
        Case(WITH_PLUGIN, (*pytest, "-p", PLUGIN), project, alone),
        Case(WITHOUT_PLUGIN, pytest, project, alone),
        *(Case(f"import {unit}", ("-c", f"import {unit}")) for unit in imports),
    ]


def run_once(case: Case, tree: Path, timings: Timings) -> None:
    """Start the case once in `tree`'s sim and keep its wall time (or why it failed)."""
    if case.name in timings.failed:
        return
    environment = {**os.environ, "PYTHONPATH": str(tree), **dict(case.environment)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *case.args],
        cwd=case.cwd or tree,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[-1]
        timings.failed[case.name] = last
        return
    timings.seconds.setdefault(case.name, []).append(seconds)


def shown(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.3f}"


def ratio(seconds: float | None, reference: float | None) -> str:
    return "-" if seconds is None or not reference else f"{seconds / reference:.1f}x"


def table(all_cases: list[Case], this: Timings, before: Timings | None) -> list[str]:
    """The table in Markdown: each case's median, and its ratio to `python -c pass` (and the same for the
    checkout measured against, with this one's time as a share of it)."""
    reference = this.median("python -c pass")
    head = "| started | s | vs `python -c pass` |"
    rule = "|---|---:|---:|"
    if before is not None:
        head += " before, s | before, vs `python -c pass` | this / before |"
        rule += "---:|---:|---:|"
    lines = [head, rule]
    then = before.median("python -c pass") if before is not None else None
    for case in all_cases:
        now = this.median(case.name)
        row = f"| {case.name} | {shown(now)} | {ratio(now, reference)} |"
        if before is not None:
            old = before.median(case.name)
            share = "-" if now is None or not old else f"{now / old:.2f}"
            row += f" {shown(old)} | {ratio(old, then)} | {share} |"
        lines.append(row)
    return lines


def goals(timings: Timings, label: str) -> list[str]:
    """Each goal against `timings`: the figure, the bound, met or missed."""
    lines = []
    for name, bound in GOALS.items():
        seconds = timings.median(name)
        verdict = "-" if seconds is None else "met" if seconds <= bound else "missed"
        lines.append(f"{label}: {name}: {shown(seconds)} s (goal {bound} s): {verdict}")
    loaded, bare = timings.seconds.get(WITH_PLUGIN, []), timings.seconds.get(WITHOUT_PLUGIN, [])
    if loaded and len(loaded) == len(bare):
        # each run's difference (the two started one after the other), so a burst of load moves one pair
        added = statistics.median(a - b for a, b in zip(loaded, bare, strict=True))
        verdict = "met" if added <= PLUGIN_GOAL else "missed"
        lines.append(
            f"{label}: the plugin adds {added:.3f} s to a pytest start (goal {PLUGIN_GOAL} s): {verdict}"
        )
    return lines


def machine() -> str:
    load = os.getloadavg() if hasattr(os, "getloadavg") else ()
    return (
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()},"
        f" {os.cpu_count()} cores, load average {', '.join(f'{x:.2f}' for x in load)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=11, help="Fresh interpreters per case and checkout.")
    parser.add_argument("--against", type=Path, help="Another checkout of sim, measured in the same run.")
    options = parser.parse_args()
    trees = [ROOT] + ([options.against.resolve()] if options.against else [])
    for tree in trees:
        if not (tree / "sim" / "__init__.py").is_file():
            parser.error(f"{tree}: no sim package there")
    print(f"before: {machine()}")
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder)
        (project / "test_nothing.py").write_text("def test_nothing() -> None:\n    pass\n")
        all_cases = cases(trees, project)
        timings = [Timings() for _ in trees]
        for _ in range(options.runs):
            for case in all_cases:
                for tree, measured in zip(trees, timings, strict=True):
                    run_once(case, tree, measured)
    print(f"after: {machine()}")
    this, before = timings[0], timings[1] if len(timings) > 1 else None
    print(
        f"\nmedians of {options.runs} runs; this checkout: {ROOT}"
        + (f"; before: {trees[1]}" if before else "")
    )
    print("\n".join(table(all_cases, this, before)))
    print()
    print("\n".join(goals(this, "this")))
    if before is not None:
        print("\n".join(goals(before, "before")))
    for label, measured in zip(("this", "before"), timings, strict=False):
        for name, why in measured.failed.items():
            print(f"{label}: {name}: not measured: {why}")


if __name__ == "__main__":
    main()
