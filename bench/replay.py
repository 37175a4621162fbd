"""Replay speed: sessions of 100 and 1,000 turns recorded with `sim record` against `sim serve`, replayed,
over Chat Completions and over the Responses API (stateless: every request carries the whole input).

Recording (not timed): `sim serve` plays a generated scenario whose model calls `echo N` each turn,
`sim record` runs the real loop against it. Timed, medians of `--repeats` passes:
- `sim replay`: read the cassette, then the real loop and SDK adapter against the recorded interactions,
  each request matched by method, path and canonical JSON body;
- the reference, plain vcrpy on the same cassette in the same process: each recorded request asked of a
  vcrpy `Cassette` matching on the body (the canonical-JSON matcher), and positionally (method and path).

Then each recorded cassette compacted (`sim compact`) and replayed the same way. A 10,000-turn session
cannot be recorded plain (its requests would hold 12 GB), so its compact cassette is continued from the
recorded 100-turn one: the same interactions with the turn's numbers (call ids, commands, outputs,
server ids) counted on, every body exactly what the loop sends at that turn (the replay checks it).

With `--against DIR`, one more table: each cassette (plain and compact) replayed by this checkout and by
the one in DIR (say the release before), each replay in a process of its own (`PYTHONPATH`), the two
alternating round by round; each figure the best of `--best-of` replays in that process, medians of
`--repeats` rounds, and the median of the rounds' now/before ratios. `--against-only` measures only that.

Run: python bench/replay.py [--turns 100 1000] [--long 10000] [--repeats 3] [--api chat responses]
                            [--against DIR [--against-only] [--best-of 3]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import vcr
from checkouts import THIS, checked, in_turn, launch, paired_ratio  # bench/checkouts.py
from vcr.cassette import Cassette
from vcr.request import Request

from sim.cassette.compact import compact_data
from sim.cassette.reader import load_data, read_cassette
from sim.cassette.replay import replay_cassette
from sim.cassette.vcr_support import SimPersister, canonical_body
from sim.cassette.writer import to_yaml

SIM = [sys.executable, "-m", "sim.cli"]
VCR_REFERENCE_UP_TO = 100  # vcrpy's body matching is quadratic: above this it takes too long to wait for


def scenario(turns: int) -> str:
    lines = ["name: long", "prompt: Count for me.", "replies:"]
    lines += [
        f"  - tool_calls: [{{id: call_{i}, name: shell, arguments: {{command: echo {i}}}}}]"
        for i in range(turns - 1)
    ]
    lines.append("  - content: Done counting.")
    return "\n".join(lines) + "\n"


def record(turns: int, folder: Path, api: str, checkout: Path | None = None) -> Path:
    """A session of `turns` over `api` recorded in `folder` (by `checkout`'s sim if given, else this one)."""
    started = launch(checkout) if checkout is not None else {}
    source = folder / f"long-{turns}.yaml"
    source.write_text(scenario(turns))
    cassette = folder / f"cassette-{api}-{turns}.yaml"
    server = subprocess.Popen(
        [*SIM, "serve", str(source), "--port", "0", "--once", "--quiet"],
        stdout=subprocess.PIPE,
        text=True,
        **started,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip().removeprefix("OPENAI_BASE_URL=")
        env = {
            **started.get("env", os.environ),
            "OPENAI_BASE_URL": url,
            "OPENAI_API_KEY": "sk-bench",
            "OPENAI_MODEL": "sim-model",
        }
        subprocess.run(
            [*SIM, "record", str(cassette), "--prompt", "Count for me.", "--approve", "always", "--json",
             "--max-turns", str(turns), "--workspace", str(folder), "--api", api],
            env=env, check=True, stdout=subprocess.DEVNULL, timeout=3600, cwd=started.get("cwd"),
        )  # fmt: skip
        server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
    return cassette


def time_sim_replay(cassette: Path) -> tuple[float, float]:
    started = time.perf_counter()
    report = asyncio.run(replay_cassette(cassette))
    assert report.passed, report.problems
    return time.perf_counter() - started, report.interactions


def time_vcrpy(cassette: Path, match_on: tuple[str, ...]) -> float:
    """Seconds for a vcrpy `Cassette` to answer each recorded request, sent as the loop sends it (compact)."""
    recorded = [i.request for i in read_cassette(cassette).interactions]
    asked = [
        Request(r.method, r.uri, json.dumps(r.json(), ensure_ascii=False, separators=(",", ":")), {})
        for r in recorded
    ]
    loaded = Cassette.load(path=str(cassette), match_on=[vcr.matchers.method, vcr.matchers.path, *(
        [canonical_body] if "canonical_body" in match_on else [])], persister=SimPersister())  # fmt: skip
    started = time.perf_counter()
    for request in asked:
        loaded.play_response(request)
    return time.perf_counter() - started


def compacted(cassette: Path) -> Path:
    path = cassette.with_name(f"compact-{cassette.name}")
    path.write_text(to_yaml(compact_data(load_data(cassette))))
    return path


def _numbered(text: str, shift: int, calls: tuple[int, ...]) -> str:
    """`text` with the turn numbers in `calls` counted on by `shift` (ids, commands, outputs, server ids)."""
    for number in calls:
        now = number + shift
        for old, new in (
            (f'call_{number}"', f'call_{now}"'),
            (f'echo {number}\\"', f'echo {now}\\"'),
            (f'"output":"{number}"', f'"output":"{now}"'),
            (f'"content":"{number}"', f'"content":"{now}"'),
            (f"sim{number + 1:06d}", f"sim{now + 1:06d}"),
        ):
            text = text.replace(old, new)
    return text


def continued(compact_100: Path, turns: int) -> Path:
    """The recorded 100-turn compact session continued to `turns` turns."""
    data = load_data(compact_100)
    recorded = data["interactions"]
    middle, last = recorded[50], recorded[-1]
    interactions = recorded[:50]
    at = middle["request"]["body"]["at"]
    for turn in range(50, turns - 1):
        shift = turn - 50
        add = _numbered(middle["request"]["body"]["add"], shift, (49,))
        response = _numbered(middle["response"]["body"]["string"], shift, (50,))
        body = {"extends": turn - 1, "at": at, "add": add}
        request, answer = (
            {**middle["request"], "body": body},
            {**middle["response"], "body": {"string": response}},
        )
        interactions.append({**middle, "request": request, "response": answer})
        at += len(add)
    add = _numbered(last["request"]["body"]["add"], turns - 100, (98,))
    interactions.append(
        {**last, "request": {**last["request"], "body": {"extends": turns - 2, "at": at, "add": add}}}
    )
    sim = {**data["sim"], "turns": turns, "max_turns": turns}
    path = compact_100.with_name(f"continued-{turns}-{compact_100.name}")
    path.write_text(to_yaml({**data, "interactions": interactions, "sim": sim}))
    return path


REPLAY_IN_A_CHILD = """
import asyncio, sys, time
from pathlib import Path
from sim.cassette.replay import replay_cassette
wall = cpu = float("inf")
for _ in range(int(sys.argv[2])):
    started, used = time.perf_counter(), time.process_time()
    report = asyncio.run(replay_cassette(Path(sys.argv[1])))
    wall, cpu = min(wall, time.perf_counter() - started), min(cpu, time.process_time() - used)
    assert report.passed, report.problems
print(wall, cpu)
"""


def replayed_by(checkout: Path, cassette: Path, best_of: int) -> tuple[float, float]:
    """Seconds, wall and CPU: the best of `best_of` replays of `cassette` by `checkout`'s sim (a process)."""
    done = subprocess.run(
        [sys.executable, "-c", REPLAY_IN_A_CHILD, str(cassette), str(best_of)],
        capture_output=True, text=True, check=False, **launch(checkout),
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: replaying {cassette.name} failed:\n{done.stderr[-3000:]}")
    wall, cpu = done.stdout.split()[-2:]
    return float(wall), float(cpu)


def beside_rows(cassettes: list[tuple[str, Path]], against: Path, repeats: int, best_of: int) -> None:
    """Each cassette replayed by this checkout and by `against`, alternating, one process a replay."""
    print(
        f"\nbeside {against}: best of {best_of} replays a process, medians of {repeats} alternating rounds;"
    )
    print("now/before: the median of the rounds' ratios; CPU: the replaying process's own (user and system)")
    print("| cassette | before s | now s | now/before | before CPU s | now CPU s | CPU now/before |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, cassette in cassettes:
        walls: dict[str, list[float]] = {"now": [], "before": []}
        cpus: dict[str, list[float]] = {"now": [], "before": []}
        for round_number in range(repeats):
            for side in in_turn(round_number):
                wall, cpu = replayed_by(THIS if side == "now" else against, cassette, best_of)
                walls[side].append(wall)
                cpus[side].append(cpu)
        cells = []
        for measured in (walls, cpus):
            before, now = statistics.median(measured["before"]), statistics.median(measured["now"])
            cells += [
                f"{before:.3f}",
                f"{now:.3f}",
                f"{paired_ratio(measured['now'], measured['before']):.2f}x",
            ]
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


def compact_rows(api: str, cassettes: dict[int, Path], long: int, repeats: int) -> None:
    rates = {}
    rows = []
    forms = [(turns, "compact", compacted(path)) for turns, path in sorted(cassettes.items())]
    if long and 100 in cassettes:
        forms.append((long, "compact (continued)", continued(forms[0][2], long)))
    for turns, form, path in [(t, "plain", p) for t, p in sorted(cassettes.items())] + forms:
        runs = [time_sim_replay(path) for _ in range(repeats)]
        seconds = statistics.median(s for s, _ in runs)
        rate = runs[0][1] / seconds
        if form != "plain":
            rates[turns] = rate
        rows.append((turns, form, path.stat().st_size / 1e6, seconds, rate))
    for turns, form, size, seconds, rate in rows:
        versus = f"{rate / rates[100]:.2f}x" if form != "plain" and 100 in rates else ""
        print(f"| {api} | {turns:,} | {form} | {size:,.2f} | {seconds:.2f} | {rate:,.0f} | {versus} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--api", nargs="+", default=["chat", "responses"])
    parser.add_argument("--long", type=int, default=10_000)
    parser.add_argument("--compact-only", action="store_true", help="Only the plain/compact table.")
    parser.add_argument("--against", type=Path, help="Another checkout of sim, replaying beside this one.")
    parser.add_argument("--against-only", action="store_true", help="Only the table beside --against.")
    parser.add_argument("--best-of", type=int, default=3, help="Replays a process, beside --against.")
    options = parser.parse_args()
    if options.against_only and options.against is None:
        parser.error("--against-only needs --against DIR")
    against = checked(options.against) if options.against is not None else None
    if against is not None and options.against_only:
        with tempfile.TemporaryDirectory() as folder:
            beside_rows(
                recorded_forms(options, Path(folder), against), against, options.repeats, options.best_of
            )
        return
    columns = ["API", "turns", "cassette MB", "sim replay s", "sim replay interactions/s"]
    print("| " + " | ".join([*columns, "vcrpy body-matched /s", "vcrpy positional /s"]) + " |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        recorded = {
            (api, turns): record(turns, Path(folder), api) for api in options.api for turns in options.turns
        }
        for api, turns in ((api, turns) for api in options.api for turns in options.turns):
            if options.compact_only:
                break
            cassette = recorded[(api, turns)]
            size = cassette.stat().st_size / 1e6
            runs = [time_sim_replay(cassette) for _ in range(options.repeats)]
            seconds = statistics.median(s for s, _ in runs)
            interactions = runs[0][1]
            positional = statistics.median(
                time_vcrpy(cassette, ("method", "path")) for _ in range(options.repeats)
            )
            if turns <= VCR_REFERENCE_UP_TO:
                body = statistics.median(
                    time_vcrpy(cassette, ("canonical_body",)) for _ in range(options.repeats)
                )
                body_rate = f"{interactions / body:,.1f}"
            else:
                body_rate = "(not run: quadratic)"
            print(
                f"| {api} | {turns:,} | {size:,.1f} | {seconds:.2f} | {interactions / seconds:,.0f}"
                f" | {body_rate}"
                f" | {interactions / positional:,.0f} |"
            )
        print("\n| API | turns | form | cassette MB | sim replay s | interactions/s | rate vs compact 100 |")
        print("|---|---:|---|---:|---:|---:|---:|")
        for api in options.api:
            compact_rows(api, {turns: recorded[(api, turns)] for turns in options.turns}, options.long,
                         options.repeats)  # fmt: skip
        if against is not None:
            beside_rows(recorded_forms(options, Path(folder) / "beside", against), against, options.repeats,
                        options.best_of)  # fmt: skip


def forms_of(recorded: dict[tuple[str, int], Path]) -> list[tuple[str, Path]]:
    """Each recorded cassette, plain and compacted, with a label for the table beside another checkout."""
    forms = []
    for (api, turns), cassette in recorded.items():
        forms.append((f"{api}, {turns:,} turns, plain", cassette))
        forms.append((f"{api}, {turns:,} turns, compact", compacted(cassette)))
    return forms


def recorded_forms(options: argparse.Namespace, folder: Path, checkout: Path) -> list[tuple[str, Path]]:
    """The sessions of `--turns` over each of `--api` recorded in `folder` by `checkout`, plain and compacted.

    Recorded by the other checkout so that both can read them: a release reads the files of the ones before
    it, not always those of the ones after (the release before refuses this one's `max_tokens` in `sim:`).
    """
    folder.mkdir(exist_ok=True)
    recorded = {
        (api, turns): record(turns, folder, api, checkout) for api in options.api for turns in options.turns
    }
    return forms_of(recorded)


if __name__ == "__main__":
    main()
