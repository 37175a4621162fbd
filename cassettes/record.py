"""Re-record the bundled cassettes: `sim record` (live loop, real shell) against `sim serve` (a scenario).

Each cassette here was made by this script: a simulator serves a bundled scenario on 127.0.0.1, and
`sim record` runs the real loop against it in an empty workspace, so the commands really run. Each
session is recorded over Chat Completions (`cassettes/`) and over the Responses API
(`cassettes/responses/`, parallel-calls chained through `previous_response_id`).

Run from the repository root: python cassettes/record.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIM = [sys.executable, "-m", "sim.cli"]

RECORDINGS = {
    "echo-42": ("echo-42.yaml", "Run `echo 42` and tell me the result.", ["--approve", "always"]),
    "approval-denied": (
        "approval-denied.yaml",
        "Clean the build folder, then list what is left.",
        ["--approve", "never"],
    ),
    "parallel-calls": (
        "parallel-calls.yaml",
        "What is in this folder, and which Python is installed?",
        ["--approve", "always"],
    ),
    "max-turns": (
        "max-turns.yaml",
        "Wait until the deploy finishes.",
        ["--approve", "always", "--max-turns", "3"],
    ),
}


RESPONSES = {
    name: ["--api", "responses", *(["--chain"] if name == "parallel-calls" else [])] for name in RECORDINGS
}
"""How each session is recorded again over the Responses API."""


def record(name: str, scenario: str, prompt: str, options: list[str], folder: Path) -> None:
    server = subprocess.Popen(
        [*SIM, "serve", str(ROOT / "scenarios" / scenario), "--port", "0", "--once", "--quiet"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip().removeprefix("OPENAI_BASE_URL=")
        with tempfile.TemporaryDirectory() as workspace:
            env = {
                **os.environ,
                "OPENAI_BASE_URL": base_url,
                "OPENAI_API_KEY": "sk-bundled",
                "OPENAI_MODEL": "sim-model",
            }
            subprocess.run(
                [*SIM, "record", str(folder / f"{name}.yaml"), "--prompt", prompt, "--force",
                 "--workspace", workspace, *options],
                env=env,
                timeout=120,
                check=False,
            )  # fmt: skip
        server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()


if __name__ == "__main__":
    for name, (scenario, prompt, options) in RECORDINGS.items():
        record(name, scenario, prompt, options, ROOT / "cassettes")
        record(name, scenario, prompt, [*options, *RESPONSES[name]], ROOT / "cassettes" / "responses")
