"""Two checkouts of sim in one benchmark run: this one and another (say the release before), each started in
processes of its own through `PYTHONPATH`, their rounds alternated so that both meet the same load on the box.

Run from the other benchmarks (`--against DIR`); this script's folder is on their import path.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

THIS = Path(__file__).resolve().parents[1]
"""The checkout these benchmarks belong to."""


def launch(checkout: Path) -> dict[str, Any]:
    """`subprocess` keyword arguments under which `python -m sim.cli` or `import sim` loads `checkout`.

    The process also starts in `checkout`: `python -m` puts its working folder before `PYTHONPATH`.
    """
    return {"env": {**os.environ, "PYTHONPATH": str(checkout)}, "cwd": str(checkout)}


def checked(checkout: Path) -> Path:
    """`checkout`, resolved, once a process started with `launch` is seen to import its `sim` package."""
    checkout = checkout.resolve()
    found = subprocess.run(
        [sys.executable, "-c", "import sim; print(sim.__file__)"],
        capture_output=True, text=True, check=True, **launch(checkout),
    ).stdout.strip()  # fmt: skip
    if Path(found).resolve() != checkout / "sim" / "__init__.py":
        raise SystemExit(f"{checkout}: a process started there imports {found}, not this checkout's sim")
    return checkout


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process `pid` has used so far, from Linux's `/proc` (10 ms ticks).

    On a shared box a process's CPU time moves much less with the others' load than the wall clock does.
    """
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def in_turn(round_number: int) -> tuple[str, str]:
    """Which side goes first in a round: this checkout in even rounds, the other in odd ones."""
    return ("now", "before") if round_number % 2 == 0 else ("before", "now")


def paired_ratio(now: Sequence[float], before: Sequence[float]) -> float:
    """The median of the rounds' now/before ratios (each round measured both, one right after the other)."""
    return statistics.median(n / b for n, b in zip(now, before, strict=True))
