"""The `sim` commands that serve HTTP: `serve` (a scenario or a cassette) and `proxy` (recording any
program's traffic to the real API)."""

from __future__ import annotations

import os
import sys
from collections import Counter
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sim.cassette.proxy_terms import STOP_GRACE, UPSTREAM_TIMEOUT
from sim.cli.terminal import err, open_one, usage_error
from sim.core.counts import counted
from sim.core.errors import CassetteError, ConfigurationError
from sim.core.untrusted import visible
from sim.wire import STORE_LIMIT_BYTES

if TYPE_CHECKING:
    from sim.host.access_log import AccessLog
    from sim.host.rate_limit import RateLimit
    from sim.host.serve import AppServer

Host = Annotated[str, typer.Option(help="Address to listen on.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="Print no line per request answered.")]
JsonLog = Annotated[bool, typer.Option("--json", help="Print the line per request as JSON (JSON lines).")]
Port = Annotated[int, typer.Option(help="Port to listen on; 0 picks a free one.")]
GRACE_SECONDS = 2.0
"""How long `--once` keeps answering after the end, so that a client's retry gets a clear error."""


PLACEHOLDER_KEY = "sk-sim-proxy-placeholder"
"""The key a command run by `sim proxy` gets: the proxy sends the real one upstream."""


def _listening(host: str, port: int) -> AppServer:
    from sim.host.serve import AppServer, listen

    if not 0 <= port <= 65535:
        raise usage_error(f"--port must be from 0 to 65535, not {port}")
    try:
        return AppServer(None, listen(host, port))
    except OSError as error:
        raise usage_error(f"cannot listen on {host}:{port}: {error.strerror or error}") from None


def _seconds(option: str, value: float, least: float = 0.0) -> None:
    """A one-line usage error (exit 2) unless `value` is a finite number of seconds from `least` to
    `MAX_LATENCY`, the bound a scenario's latencies have (infinity and NaN are refused too)."""
    from sim.scenario.schema import MAX_LATENCY

    if not least <= value <= MAX_LATENCY:  # NaN compares false with everything
        raise usage_error(f"{option} must be from {least:g} to {MAX_LATENCY:g} seconds, not {value}")


def _write_line(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _access_log(quiet: bool, as_json: bool) -> AccessLog | None:
    """The line per request answered, on standard error (standard output says only where to connect)."""
    from sim.host.access_log import AccessLog

    return None if quiet else AccessLog(_write_line, as_json=as_json)


def _tell(problems: list[str], received: int, by_api: Counter[str], answered: str) -> None:
    """What went wrong, a line each, then how many requests came (per API) and what was answered."""

    for problem in problems:
        err.print(f"! {visible(problem)}", markup=False)
    counts = ", ".join(f"{api} {count}" for api, count in sorted(by_api.items()))
    shown = f" ({counts})" if counts else ""
    err.print(visible(f"served {counted(received, 'request')}{shown}; {answered}"), markup=False)


def serve(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="The scenario or cassette to serve.")],
    host: Host = "127.0.0.1",
    port: Port = 8000,
    once: Annotated[
        bool,
        typer.Option(
            "--once",
            help="Exit once the scenario (cassette) is over: every reply sent, or the first problem; exit 1"
            " unless it passed. Requests in the grace period get `sim_scenario_finished`.",
        ),
    ] = False,
    grace: Annotated[
        float,
        typer.Option(
            "--grace",
            help="With --once: seconds to keep answering after the end (make it outlast a Retry-After).",
        ),
    ] = GRACE_SECONDS,
    cycle: Annotated[
        bool, typer.Option("--cycle", help="Start a scenario's script again when it ends (load tests).")
    ] = False,
    store_limit: Annotated[
        int,
        typer.Option(
            "--store-limit",
            help="MiB of conversations kept for previous_response_id, and as much for the Conversations"
            " API (oldest forgotten).",
        ),
    ] = STORE_LIMIT_BYTES // 2**20,
    quiet: Quiet = False,
    as_json: JsonLog = False,
    rate_limit: Annotated[
        str | None,
        typer.Option(
            "--rate-limit",
            metavar="requests=N/min,tokens=N/min",
            help="Simulate the API's rate limits: x-ratelimit-* headers on every answer, and a 429"
            " rate_limit_exceeded (with retry-after) past the budget. Tokens are estimated as the API"
            " does: input characters / 4 plus max_tokens (max_completion_tokens, max_output_tokens).",
        ),
    ] = None,
) -> None:
    """Serve an OpenAI-compatible API (Chat Completions and Responses) answering from FILE: a scenario's
    scripted replies, or a cassette's recorded responses."""
    limit = _rate_limit(rate_limit)
    from sim.cassette.reader import looks_like_cassette
    from sim.host.serve import base_url
    from sim.scenario.answerer import scenario_host
    from sim.scenario.loader import load_scenario

    _seconds("--grace", grace)
    if store_limit < 1:
        raise usage_error(f"--store-limit must be at least 1 MiB, not {store_limit}")
    if once and cycle:
        raise usage_error(
            "--once and --cycle contradict each other: --cycle never ends, --once ends at the end"
        )
    if looks_like_cassette(file):
        if cycle:
            raise usage_error("--cycle serves scenarios only; a cassette is played once")
        _serve_cassette(file, host, port, grace if once else None, _access_log(quiet, as_json), limit)
        return
    scenario = open_one(file, load_scenario)
    server = _listening(host, port)
    served = scenario_host(
        scenario,
        cycle=cycle,
        on_finished=partial(_stop_after, server, grace) if once else None,
        store_limit=store_limit * 2**20,
        keep_requests=False,
        on_answered=_access_log(quiet, as_json),
        rate_limit=limit,
    )
    script = served.answerer
    server.server.config.app = served.app

    def ready() -> None:
        print(f"OPENAI_BASE_URL={base_url(server.sock)}", flush=True)
        replies = counted(len(scenario.replies), "reply", "replies")
        err.print(f"serving {visible(str(scenario.name))} ({replies}); Ctrl-C stops", markup=False)

    server.run(on_ready=ready)
    problems = [problem.message for problem in script.problems + script.unused()]
    _tell(
        problems,
        served.received,
        served.received_by,
        f"{counted(script.answered, 'reply', 'replies')} sent",
    )
    if problems and (once or script.problems):
        raise typer.Exit(1)


async def _stop_after(server: AppServer, seconds: float) -> None:
    """Have `server` stop in `seconds` (async, so that it runs on the server's event loop, and returns at
    once: the connection it ran after stays free for the client's next request)."""
    import asyncio

    asyncio.get_running_loop().call_later(seconds, server.stop)


def _rate_limit(said: str | None) -> RateLimit | None:
    """`--rate-limit` read, or a one-line usage error (exit 2) saying what is wrong with it."""
    from sim.host.rate_limit import RateLimit, RateLimitError

    if said is None:
        return None
    try:
        return RateLimit.parse(said)
    except RateLimitError as error:
        raise usage_error(f"--rate-limit: {error}") from None


def _serve_cassette(
    file: Path,
    host: str,
    port: int,
    grace: float | None,
    log: AccessLog | None,
    rate_limit: RateLimit | None = None,
) -> None:
    """Serve a cassette; with a `grace` (`--once`), until it is over and the grace has passed."""
    from sim.cassette.reader import read_cassette
    from sim.cassette.recording_answerer import RecordingAnswerer, base_path, recording_host
    from sim.host.serve import base_url

    once = grace is not None
    cassette = open_one(file, read_cassette)
    if not cassette.interactions:
        err.print(f"{file}: no interactions to serve", markup=False)
        raise typer.Exit(1)
    server = _listening(host, port)
    answerer = RecordingAnswerer(cassette.interactions, repeat=not once)
    served = recording_host(
        answerer,
        on_finished=partial(_stop_after, server, grace) if grace is not None else None,
        on_answered=log,
        rate_limit=rate_limit,
    )
    server.server.config.app = served.app

    def ready() -> None:
        print(f"OPENAI_BASE_URL={base_url(server.sock, base_path(cassette.interactions))}", flush=True)
        count = counted(len(cassette.interactions), "interaction")
        err.print(f"serving cassette {file} ({count}); Ctrl-C stops", markup=False)

    server.run(on_ready=ready)
    problems = [problem.message for problem in answerer.problems] + (answerer.unplayed() if once else [])
    played = f"{len(answerer.answers.played)} of {len(cassette.interactions)} interactions played"
    _tell(problems, served.received, answerer.answered_by, played)
    if problems:
        raise typer.Exit(1)


def read_key(path: Path) -> str:
    """The key in `path` (its first line), or on standard input's first line for `-`."""
    try:
        text = sys.stdin.readline() if str(path) == "-" else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigurationError(f"--key-file {path}: cannot read it: {type(error).__name__}") from None
    lines = text.strip().splitlines()
    if not lines:
        raise ConfigurationError(f"--key-file {path}: no key in it")
    return lines[0].strip()


def proxy(
    cassette: Annotated[Path, typer.Argument(metavar="FILE", help="The cassette to record into.")],
    upstream: Annotated[
        str, typer.Option("--upstream", help="The real API's base URL, e.g. https://api.openai.com/v1.")
    ],
    command: Annotated[
        list[str] | None,
        typer.Argument(metavar="[-- COMMAND ARGS...]", help="A program to run against the proxy."),
    ] = None,
    host: Host = "127.0.0.1",
    port: Port = 8000,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing cassette.")] = False,
    upstream_timeout: Annotated[
        float,
        typer.Option("--upstream-timeout", help="Seconds to wait for the upstream between bytes."),
    ] = UPSTREAM_TIMEOUT,
    grace: Annotated[
        float,
        typer.Option(
            "--grace",
            help="Seconds a stop gives answers in flight to finish and be recorded; those still going then"
            " are cut off, not recorded. A second Ctrl-C stops at once.",
        ),
    ] = STOP_GRACE,
    key_file: Annotated[
        Path | None,
        typer.Option(
            "--key-file",
            help="Read the upstream key from this file (`-`: the first line of standard input) instead of"
            " OPENAI_API_KEY, so that it is not in the proxy's environment.",
        ),
    ] = None,
    quiet: Quiet = False,
    as_json: JsonLog = False,
) -> None:
    """Forward every request to UPSTREAM with OPENAI_API_KEY (never written) and record each exchange into
    FILE when the proxy stops (Ctrl-C, SIGTERM, or the end of COMMAND, whose exit code it exits with)."""
    from sim.adapters.settings import UpstreamCredentials
    from sim.cassette.journal import Journal
    from sim.cassette.recording_proxy import RecordingProxy, proxy_host
    from sim.cassette.scrubbing import Scrubber
    from sim.cassette.secrets import require_scrubbable
    from sim.cassette.upstream import UpstreamUrl
    from sim.host.serve import CommandNotFound, base_url

    _seconds("--upstream-timeout", upstream_timeout, least=0.1)
    _seconds("--grace", grace)
    try:
        parsed = UpstreamUrl.parse(upstream)
    except ValueError as error:
        raise usage_error(str(error)) from None
    if cassette.exists() and not force:
        raise usage_error(f"cassette exists: {cassette} (use --force to overwrite it)")
    try:
        credentials = UpstreamCredentials.load(api_key=read_key(key_file) if key_file is not None else None)
        require_scrubbable("the upstream key" if key_file else "OPENAI_API_KEY", credentials.api_key)
    except ConfigurationError as error:
        raise usage_error(str(error)) from None
    server = _listening(host, port)  # first: a port in use leaves no journal behind
    try:
        journal = Journal(cassette, credentials.secrets, keep=not force)
    except CassetteError as error:
        raise usage_error(str(error)) from None
    recording = RecordingProxy(parsed, credentials.headers, journal, timeout=upstream_timeout, grace=grace)
    server.server.config.timeout_graceful_shutdown = grace  # type: ignore[assignment]  # any number: wait_for
    server.server.config.app = proxy_host(recording, on_answered=_access_log(quiet, as_json)).app
    url = base_url(server.sock)
    environment = {k: v for k, v in os.environ.items() if k not in ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID")}
    environment.update(OPENAI_BASE_URL=url, OPENAI_API_KEY=PLACEHOLDER_KEY)

    def ready() -> None:
        if command:  # the command's output is the command's alone; it finds the proxy in its environment
            err.print(f"OPENAI_BASE_URL={url}", markup=False)
        else:
            print(f"OPENAI_BASE_URL={url}", flush=True)
        err.print(f"recording into {cassette}, forwarding to {parsed}; Ctrl-C stops", markup=False)

    try:
        code = server.run(on_ready=ready, command=command or (), environment=environment)
    except CommandNotFound as error:
        err.print(f"error: {error}", markup=False)
        code = 127
    for failure in recording.failures:
        err.print(f"! {visible(str(failure))}", markup=False)
    scrubber = Scrubber(credentials.secrets)
    try:
        count = recording.finish()
    except CassetteError as error:
        err.print(f"error: {scrubber.text(str(error))}", markup=False)
        raise typer.Exit(1) from None
    if not count:
        err.print(f"no exchange finished; {cassette} not written", markup=False)
        raise typer.Exit(code if code is not None else 1)
    err.print(f"recorded {counted(count, 'exchange')} into {cassette}", markup=False)
    if code:
        raise typer.Exit(code)
