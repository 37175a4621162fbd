"""Recording memory: a long session recorded live with `sim record` against `sim serve`, the recorder's
peak resident memory (from the kernel's accounting of the finished process) and the cassette it wrote.

`sim serve` plays a generated scenario whose model calls `echo N` each turn; `sim record --compact` runs the
real loop against it, over the Responses API chained through `previous_response_id` (each request sends
only its new items, as a long-running agent would) or over Chat Completions (each request sends the whole
history). Memory should follow the largest single exchange, not the session: compare the rows of one run.

`--source DIR` runs another checkout's `sim` (e.g. the previous release) for a reference row.

Run: python bench/record.py [--turns 1000 10000] [--api responses] [--source DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from replay import scenario


def record(turns: int, api: str, folder: Path, source: Path | None) -> tuple[float, float, float]:
    """Seconds, the recorder's peak RSS in MB, and the cassette's size in MB."""
    environment = dict(os.environ)
    if source is not None:
        environment["PYTHONPATH"] = str(source)
    sim = [sys.executable, "-m", "sim.cli"]
    script = folder / f"long-{turns}.yaml"
    script.write_text(scenario(turns))
    server = subprocess.Popen(
        [*sim, "serve", str(script), "--port", "0", "--once", "--quiet"], stdout=subprocess.PIPE, text=True,
        env=environment, cwd=folder,
    )  # fmt: skip
    cassette = folder / f"{api}-{turns}.yaml"
    api_options = ["--api", "responses", "--chain"] if api == "responses" else ["--api", "chat"]
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip().removeprefix("OPENAI_BASE_URL=")
        environment.update(OPENAI_BASE_URL=url, OPENAI_API_KEY="sk-bench-0123456789", OPENAI_MODEL="m")
        started = time.perf_counter()
        recorder = subprocess.Popen(
            [*sim, "record", str(cassette), "--prompt", "Count for me.", "--approve", "always", "--json",
             "--max-turns", str(turns), "--workspace", str(folder), "--compact", *api_options],
            env=environment, stdout=subprocess.DEVNULL, cwd=folder,
        )  # fmt: skip
        _, status, usage = os.wait4(recorder.pid, 0)
        seconds = time.perf_counter() - started
        if status != 0:
            raise SystemExit(f"sim record failed ({status}) at {turns} turns over {api}")
        server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
    return seconds, usage.ru_maxrss / 1024, cassette.stat().st_size / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--turns", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--api", nargs="+", default=["responses"], choices=["chat", "responses"])
    parser.add_argument("--source", type=Path, help="another checkout whose `sim` to run")
    options = parser.parse_args()
    print("| API | turns | seconds | recorder peak RSS | cassette (compact) |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for api in options.api:
            for turns in options.turns:
                seconds, rss, size = record(turns, api, Path(folder), options.source)
                print(f"| {api} | {turns:,} | {seconds:.1f} | {rss:.0f} MB | {size:.1f} MB |", flush=True)


if __name__ == "__main__":
    main()
