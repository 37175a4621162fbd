"""Scenario throughput: 1,000 scenario files played in one process, split into loading and running.

The files are the bundled scenarios, copied round-robin under new names into a temporary folder.
"Loading" is reading, parsing (PyYAML's C loader when installed) and validating; "running" is the real
loop against the scripted world plus the expectation checks. For reference, the same files are also
parsed with a bare `yaml.load` in the same run; and the HTML report of the whole run (what `sim play
--report` adds) is built and written after each pass. Medians of `--repeats` passes.

Run: python bench/play_many.py [--files 1000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from sim.pages import played, write_page
from sim.player import PlayReport, play_file
from sim.scenario import scenario_files
from sim.scenario.yaml_source import YamlLoader

BUNDLED = Path(__file__).resolve().parents[1] / "scenarios"


def make_files(folder: Path, count: int) -> list[Path]:
    sources = sorted(BUNDLED.glob("*.yaml"))
    for index in range(count):
        source = sources[index % len(sources)]
        shutil.copyfile(source, folder / f"{index:04d}-{source.name}")
    return scenario_files([folder])


async def play_all(files: list[Path]) -> tuple[float, float, int, list[PlayReport]]:
    load = run = 0.0
    failed = 0
    reports = []
    for path in files:
        report = await play_file(path)
        load += report.load_seconds
        run += report.run_seconds
        failed += not report.passed
        reports.append(report)
    return load, run, failed, reports


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        files = make_files(Path(temporary), options.files)
        walls, loads, runs, bare, reporting = [], [], [], [], []
        for _ in range(options.repeats):
            started = time.perf_counter()
            load, run, failed, reports = asyncio.run(play_all(files))
            walls.append(time.perf_counter() - started)
            started = time.perf_counter()
            write_page(Path(temporary) / "report.html", played(reports))
            reporting.append(time.perf_counter() - started)
            loads.append(load)
            runs.append(run)
            assert failed == 0, f"{failed} scenarios failed"
            started = time.perf_counter()
            for path in files:
                yaml.load(path.read_text(), Loader=YamlLoader)
            bare.append(time.perf_counter() - started)
    wall = statistics.median(walls)
    print(f"loader: {YamlLoader.__name__}; {len(files)} files; medians of {options.repeats} passes")
    print("| measure | value |")
    print("|---|---:|")
    print(f"| files/s (load + run) | {len(files) / wall:,.0f} |")
    print(f"| µs per file, loading | {statistics.median(loads) / len(files) * 1e6:,.0f} |")
    print(f"| µs per file, running | {statistics.median(runs) / len(files) * 1e6:,.0f} |")
    print(f"| µs per file, bare yaml.load (reference) | {statistics.median(bare) / len(files) * 1e6:,.0f} |")
    report = statistics.median(reporting)
    print(f"| µs per file, writing the HTML report | {report / len(files) * 1e6:,.0f} |")
    print(f"| the report's cost, against playing | {report / wall:.1%} |")


if __name__ == "__main__":
    main()
