"""Hostile compact cassettes: what `sim show`, `check`, `convert` and `expand` take on small files that
reference one large request many times (seconds and peak resident memory of each command, and how it
ended). Each should end in bounded time and memory, in one line when it refuses.

- `branches`: 5,000 requests, each the first one's body with one more message appended, written as sim
  writes appended items (read from what each adds, never rebuilt); the first body is 1 MiB.
- `inserted`: the same, each addition inserted inside the body rather than after its last item, so that
  a reader must rebuild each body (5 GB in all: refused past the 1 GiB a file may rebuild into).
- `small`: `branches` with a 1 KB first body (reading 5,000 conversations that each branch from one).

`--source DIR` runs another checkout's `sim` (e.g. the previous release) for reference rows.

Run: python bench/hostile.py [--count 5000] [--source DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

COMPLETION = json.dumps(
    {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}
)


def references(count: int, size: int, *, appended: bool) -> str:
    """A compact cassette: one request of `size` characters, then `count` that each extend it."""
    base = '{\n  "model":"m",\n  "messages":[\n    ' + json.dumps({"role": "user", "content": "x" * size})
    base += "\n  ]\n}"
    at = len(base) - (len("\n  ]\n}") if appended else 4)

    def interaction(body: object) -> dict[str, object]:
        return {
            "request": {"body": body, "headers": {}, "method": "POST",
                        "uri": "https://api.openai.com/v1/chat/completions"},
            "response": {"body": {"string": COMPLETION}, "headers": {},
                         "status": {"code": 200, "message": "OK"}},
        }  # fmt: skip

    items = [interaction(base)]
    for number in range(1, count + 1):
        add = ",\n    " + json.dumps({"role": "user", "content": f"branch {number}"})
        items.append(interaction({"extends": 0, "at": at, "add": add}))
    data = {"interactions": items, "version": 1, "sim": {"compact": True}}
    return yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), width=10**9)


def run(command: list[str], folder: Path, source: Path | None) -> tuple[float, float, str]:
    """Seconds, peak RSS in MB, and the command's last line on stderr (or its exit code)."""
    environment = dict(os.environ)
    if source is not None:
        environment["PYTHONPATH"] = str(source)
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as told:
        process = subprocess.Popen(
            [sys.executable, "-m", "sim.cli", *command], cwd=folder, env=environment,
            stdout=told, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        told.seek(0)
        lines = told.read().splitlines()
    refused = [line.split(": ", 1)[-1] for line in lines if "rebuild to more than" in line]
    said = "a traceback" if any("Traceback" in line for line in lines) else (refused or [""])[0]
    return (
        seconds,
        usage.ru_maxrss / 1024,
        f"exit {os.waitstatus_to_exitcode(status)}" + (f": {said}" if said else ""),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--source", type=Path, help="another checkout whose `sim` to run")
    options = parser.parse_args()
    files = {
        "branches": references(options.count, 1024 * 1024, appended=True),
        "inserted": references(options.count, 1024 * 1024, appended=False),
        "small": references(options.count, 1000, appended=True),
    }
    print("| file | MB | command | seconds | peak RSS MB | ended |")
    print("|---|---:|---|---:|---:|---|")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for label, text in files.items():
            path = folder / f"{label}.yaml"
            path.write_text(text)
            for command in ("show", "check", "convert", "expand"):
                arguments = {
                    "convert": ["convert", path.name, "-o", f"out-{label}/s.yaml"],
                    "expand": ["expand", f"copy-{label}.yaml"],
                }.get(command, [command, path.name])
                if command == "expand":
                    shutil.copy(path, folder / f"copy-{label}.yaml")
                (folder / f"out-{label}").mkdir(exist_ok=True)
                seconds, rss, ended = run(arguments, folder, options.source)
                size = len(text) / 1e6
                print(
                    f"| {label} | {size:.1f} | {command} | {seconds:.1f} | {rss:.0f} | {ended} |", flush=True
                )
                shutil.rmtree(folder / f"out-{label}", ignore_errors=True)
                (folder / f"copy-{label}.yaml").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
