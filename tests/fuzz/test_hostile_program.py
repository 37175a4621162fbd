"""`sim fuzz -- COMMAND` and `sim serve FILE -- COMMAND` against a hostile user and a hostile program: a key
on the command line, or on the program's standard error, is written to no file and shown nowhere (the tail
of standard error is scrubbed where it is read, so --json, which holds the same findings, shows none).

The programs are `python -S -c` one-liners (no SDK: quick to start), each campaign one or two runs."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from sim.cassette.command_line import scrubbed_arguments, shown_command
from sim.cassette.secrets import REDACTED
from sim.fuzz.program import Command
from sim.fuzz.terms import BOUND, Profile
from sim.fuzz.worker import fuzz_target_in_worker
from tests.commands import in_process

ARGUMENT_KEY = "sk-proj-ArgumentKey0123456789abcdef"
PRINTED_KEY = "sk-proj-PrintedKey0123456789abcdef"
ENVIRONMENT_KEY = "an-environment-key-0123456789"
"""sim's own OPENAI_API_KEY: withheld from the program, which may still have read it elsewhere."""
ASKS_THEN_TELLS_ITS_KEY = (
    "import json, os, sys, urllib.request as u\n"
    "body = json.dumps({'model': 'm', 'messages': [{'role': 'user', 'content': 'hi'}]}).encode()\n"
    "u.urlopen(u.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions', data=body,"
    " headers={'Content-Type': 'application/json'}), timeout=30).read()\n"
    f"print('key {PRINTED_KEY}, Authorization: Bearer tok0123456789abcdef,', file=sys.stderr)\n"
    f"print('{ENVIRONMENT_KEY}', file=sys.stderr)\n"
    "sys.exit(1)\n"
)
SECRETS = (ARGUMENT_KEY, PRINTED_KEY, "tok0123456789abcdef", ENVIRONMENT_KEY)


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["app", "--api-key", "abc123"], ["app", "--api-key", REDACTED]),
        (["app", "--token=abc123", "-v"], ["app", f"--token={REDACTED}", "-v"]),
        (["app", "--password", "--verbose"], ["app", "--password", "--verbose"]),
        (["curl", "-H", "Authorization: Bearer abc"], ["curl", "-H", f"Authorization: {REDACTED}"]),
        (
            ["curl", "-H", "api-key: abc", "-H", "Accept: */*"],
            ["curl", "-H", f"api-key: {REDACTED}", "-H", "Accept: */*"],
        ),
        (["node", "app.mjs", f"key={ARGUMENT_KEY}"], ["node", "app.mjs", f"key={REDACTED}"]),
        (["python", "-S", "loop.py", "forgets-a-result"], ["python", "-S", "loop.py", "forgets-a-result"]),
    ],
)
def test_a_command_lines_credentials_are_replaced(argv: list[str], shown: list[str]) -> None:
    assert scrubbed_arguments(argv, None) == shown


def test_a_secret_of_sims_environment_is_replaced_wherever_it_stands_in_a_command() -> None:
    shown = shown_command(["app", f"--x={ENVIRONMENT_KEY}"], {"OPENAI_API_KEY": ENVIRONMENT_KEY})
    assert ENVIRONMENT_KEY not in shown and REDACTED in shown


def test_no_key_on_the_command_line_nor_on_the_programs_standard_error_is_written_or_shown(
    tmp_path: Path,
) -> None:
    report, saved = tmp_path / "report.html", tmp_path / "saved"
    command = [sys.executable, "-S", "-c", ASKS_THEN_TELLS_ITS_KEY, "--api-key", ARGUMENT_KEY, "\u202ecba"]
    done = in_process(
        "fuzz", "--examples", "1", "--report", report, "--save", saved, "--database", tmp_path / "db", "--",
        *command, env={"OPENAI_API_KEY": ENVIRONMENT_KEY},
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "! crash: " in done.stdout and f"key {REDACTED}" in done.stdout  # the tail is there, scrubbed
    assert "sim serve" in done.stdout and f"--api-key '{REDACTED}'" in done.stdout
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert report in written and any(path.suffix == ".yaml" for path in written)
    page = report.read_text()
    assert "sim fuzz -- " in page and "--once -- " in page  # a program's page says how to replay a program
    for secret in SECRETS:
        assert secret not in done.stdout + done.stderr
        for path in written:
            assert secret.encode() not in path.read_bytes(), path
    for path in (report, *saved.iterdir()):  # the bidi override written out, never turning text around
        assert "\u202e" not in path.read_text(), path


def test_sim_serve_shows_no_key_of_the_command_it_ran(tmp_path: Path) -> None:
    scenario = tmp_path / "one.yaml"
    scenario.write_text("name: one\nreplies:\n  - content: Hello.\n")
    command = [
        sys.executable,
        "-S",
        "-c",
        "import sys; sys.exit(3)",
        "-H",
        f"Authorization: Bearer {ARGUMENT_KEY}",
    ]
    done = in_process("serve", scenario, "--port", "0", "--once", "--", *command)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "exited with 3" in done.stderr and f"Authorization: {REDACTED}" in done.stderr
    assert ARGUMENT_KEY not in done.stdout + done.stderr


BUSY = """
import json, os, subprocess, sys, urllib.request as u
child = subprocess.Popen([sys.executable, "-S", "-c", "import time; time.sleep(60)"])
with open(sys.argv[1], "a") as file:
    file.write(f"{os.getpid()} {child.pid}\\n")
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
while True:
    try:
        u.urlopen(u.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body), timeout=9).read()
    except Exception:
        pass
"""
"""A program that starts a child (in its process group), then asks without end: its worker's main thread
is nearly always serving a request."""


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_worker_told_to_end_while_it_serves_requests_kills_its_program_and_its_children(
    tmp_path: Path,
) -> None:
    """SIGTERM, which sim sends its workers when it is told to end, lands in a worker whose main thread
    is serving a request (an asyncio callback that would catch an exception raised by the handler)."""
    pids, ended = tmp_path / "pids", threading.Event()
    command = Command((sys.executable, "-S", "-c", BUSY, str(pids)))

    def campaign() -> None:
        fuzz_target_in_worker(
            command, examples=2, seed=0, profile=Profile.api, bound=BOUND, allow=(), seconds=30
        )
        ended.set()

    threading.Thread(target=campaign, daemon=True).start()  # the test's thread stays free to signal
    started: list[int] = []
    try:
        deadline = time.monotonic() + 20
        while not (pids.exists() and pids.read_text().endswith("\n")):
            assert time.monotonic() < deadline, "the program never started"
            time.sleep(0.01)
        started = [int(pid) for pid in pids.read_text().split()]
        time.sleep(0.1)  # asking as fast as it can
        worker = int(Path(f"/proc/{started[0]}/stat").read_text().rsplit(")", 1)[1].split()[1])
        os.kill(worker, signal.SIGTERM)
        assert ended.wait(5), "the worker went on"
        assert [pid for pid in started if _alive(pid)] == []  # its program, and the child it started
    finally:
        for pid in started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_more_workers_than_processes_can_bear_is_a_one_line_usage_error() -> None:
    # one example: were the option let through, one worker would run, never 100000
    done = in_process("fuzz", "--workers", "100000", "--examples", "1", "--", sys.executable, "-S", "-c", "")
    assert done.returncode == 2 and "--workers is at most 256" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""


def test_a_request_whose_client_stalls_while_sending_it_does_not_keep_an_idle_run_alive() -> None:
    """`sim serve --idle-timeout`'s clock, given the request as uvicorn hands it over: headers first, the
    body as it comes (here: half of it, then nothing)."""
    import asyncio

    from sim.host.serve import IdleClock

    async def scenario() -> tuple[float, float, float]:
        body: asyncio.Queue[dict[str, object]] = asyncio.Queue()

        async def app(scope: object, receive: Any, send: Any) -> None:
            while (await receive()).get("more_body"):
                pass
            await asyncio.sleep(0.05)  # answering: the reply's latency
            await send({"type": "http.response.start", "status": 200, "headers": []})

        async def sent(message: object) -> None:
            pass

        clock = IdleClock(app)
        request = asyncio.create_task(clock({"type": "http"}, body.get, sent))
        await body.put({"type": "http.request", "body": b"{", "more_body": True})
        await asyncio.sleep(0.05)
        stalled = clock.idle_for()  # half a body, then nothing: idle
        await body.put({"type": "http.request", "body": b"}", "more_body": False})
        await asyncio.sleep(0.01)
        answering = clock.idle_for()  # the whole request came: being answered
        await request
        return stalled, answering, clock.idle_for()

    stalled, answering, after = asyncio.run(scenario())
    assert stalled >= 0.04 and answering == 0.0 and after < 0.05


def test_a_client_that_goes_away_while_sending_its_request_is_no_error_of_the_server() -> None:
    """What a program killed (or crashing) half-way through a request leaves the server: its body never
    comes, then the disconnect. uvicorn logs whatever the app raises as an error with its traceback, on
    sim's standard error, run after run."""
    import asyncio

    from tests.host.in_process import bundled

    host = bundled()
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions", "query_string": b"",
        "root_path": "", "headers": [(b"content-type", b"application/json"), (b"content-length", b"1000")],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2),
    }  # fmt: skip
    told = iter(
        [{"type": "http.request", "body": b'{"model":', "more_body": True}, {"type": "http.disconnect"}]
    )
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return next(told)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(host.app(scope, receive, send))  # raised ClientDisconnect before
    assert host.received == 0
