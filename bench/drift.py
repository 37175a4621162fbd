"""Drift overhead: what `sim drift` adds to each request beyond the upstream's own time.

Sessions of 100 and 1,000 turns are recorded with `sim record` against `sim serve` (as `bench/replay.py`
records them), over Chat Completions and the Responses API, and each is also compacted (`sim compact`).
Each is then asked again with `drift_file` of a simulator playing the same scenario, in this process (an
httpx2 ASGI transport): the upstream's own time is what each `post` to it took, measured around the
call; sim's overhead is the rest of the run (reading the cassette, rebuilding each request, reading and
comparing each reply), per request. Medians of `--repeats` runs.

Run: python bench/drift.py [--turns 100 1000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
from pathlib import Path

import httpx2
from replay import compacted, record, scenario  # bench/replay.py's (this script's folder is on the path)

from sim.drift.compare import Drift
from sim.drift.session import UpstreamConnection, drift_file
from sim.scenario import load_scenario
from sim.scenario.answerer import scenario_host


def overhead(cassette: Path, source: Path) -> tuple[float, float, int]:
    """Per request: sim's own milliseconds and the upstream's, and the requests made."""
    served = scenario_host(load_scenario(source))

    async def run() -> tuple[float, float, int]:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=served.app)) as http:
            result = await drift_file(cassette, UpstreamConnection("http://sim.test/v1", {}, http))
        assert result.worst is Drift.same and result.requests > 1, result
        own = (result.seconds - result.upstream_seconds) / result.requests
        return own * 1000, result.upstream_seconds / result.requests * 1000, result.requests

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    print("| API | turns | cassette | sim's overhead per request | the upstream's time per request |")
    print("|---|---:|---|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for api in ("chat", "responses"):
            for turns in options.turns:
                plain = record(turns, Path(folder), api)
                source = Path(folder) / f"long-{turns}.yaml"
                source.write_text(scenario(turns))
                for form, cassette in (("plain", plain), ("compact", compacted(plain))):
                    runs = [overhead(cassette, source) for _ in range(options.repeats)]
                    own = statistics.median(r[0] for r in runs)
                    upstream = statistics.median(r[1] for r in runs)
                    print(f"| {api} | {turns:,} | {form} | {own:.2f} ms | {upstream:.2f} ms |")


if __name__ == "__main__":
    main()
