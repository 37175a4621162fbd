"""The `sim` commands that serve HTTP: `serve` (a scenario or a cassette) and `proxy` (recording any
program's traffic to the real API)."""

from __future__ import annotations

import os
import signal
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
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
from sim.wire.azure_paths import AZURE_API_KEY, azure_environment, module_client_type

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
SERVED_KEY = "sk-sim-serve-placeholder"
"""The key a command run by `sim serve` gets when its environment has none (the SDK refuses to start
without one; `sim serve` needs none)."""
ACCOUNT_VARIABLES = ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID")
"""The account settings a command run by `sim serve` or `sim proxy` does not get: its requests carry no
account of the user's."""
Command = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="[-- COMMAND ARGS...]",
        help="A program to run against the server, with OPENAI_BASE_URL pointing at it (and a placeholder"
        " OPENAI_API_KEY unless one is set): the run ends when it exits.",
    ),
]
IdleTimeout = Annotated[
    float | None,
    typer.Option(
        "--idle-timeout",
        metavar="SECONDS",
        help="End the run as failed when no request has come for SECONDS (none in flight; counted from when"
        " it listens), so that a run nobody talks to cannot hang; with --once and no COMMAND, only until"
        " the scenario is over.",
    ),
]


def proxied_environment(environ: Mapping[str, str], url: str) -> dict[str, str]:
    """The environment of the command `sim proxy` runs: `environ` pointed at the proxy at `url`, for
    `OpenAI()` and `AzureOpenAI()` alike, with placeholder keys and none of the credentials and account ids
    the proxy holds in their place (`SECRET_VARIABLES`: `AzureOpenAI()` takes an Entra ID token in
    AZURE_OPENAI_AD_TOKEN before any key)."""
    from sim.cassette.command_line import SECRET_VARIABLES

    environment = {k: v for k, v in environ.items() if k not in SECRET_VARIABLES}
    environment.update(OPENAI_BASE_URL=url, OPENAI_API_KEY=PLACEHOLDER_KEY)
    environment.update({**azure_environment(url), AZURE_API_KEY: PLACEHOLDER_KEY})
    environment.update(module_client_type(environment))  # `openai.chat...` picks no client given both
    return environment


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
    command: Command = None,
    host: Host = "127.0.0.1",
    port: Port = 8000,
    once: Annotated[
        bool,
        typer.Option(
            "--once",
            help="Exit once the scenario (cassette) is over: every reply sent, or the first problem; exit 1"
            " unless it passed. Requests in the grace period get `sim_scenario_finished`. With a COMMAND,"
            " the run ends when the command does, and requests after the end get that error.",
        ),
    ] = False,
    grace: Annotated[
        float,
        typer.Option(
            "--grace",
            help="With --once and no COMMAND: seconds to keep answering after the end (make it outlast a"
            " Retry-After).",
        ),
    ] = GRACE_SECONDS,
    idle_timeout: IdleTimeout = None,
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
    scripted replies, or a cassette's recorded responses; with a COMMAND, run it against the server once
    it listens, and exit with both verdicts (the command's status if it failed, else 1 if the file's
    verdict failed)."""
    limit = _rate_limit(rate_limit)
    from sim.cassette.reader import looks_like_cassette
    from sim.host.serve import base_url
    from sim.scenario.answerer import scenario_host
    from sim.scenario.loader import load_scenario

    _seconds("--grace", grace)
    if idle_timeout is not None:
        _seconds("--idle-timeout", idle_timeout, least=0.1)
    beside = _Beside(command or [], idle_timeout)
    if store_limit < 1:
        raise usage_error(f"--store-limit must be at least 1 MiB, not {store_limit}")
    if once and cycle:
        raise usage_error(
            "--once and --cycle contradict each other: --cycle never ends, --once ends at the end"
        )
    if looks_like_cassette(file):
        if cycle:
            raise usage_error("--cycle serves scenarios only; a cassette is played once")
        log = _access_log(quiet, as_json)
        _serve_cassette(file, host, port, grace if once else None, log, limit, beside)
        return
    scenario = open_one(file, load_scenario)
    server = _listening(host, port)
    served = scenario_host(
        scenario,
        cycle=cycle,
        on_finished=beside.at_the_end(server, grace) if once else None,
        store_limit=store_limit * 2**20,
        keep_requests=False,
        on_answered=_access_log(quiet, as_json),
        rate_limit=limit,
    )
    script = served.answerer
    server.server.config.app = served.app

    def ready() -> None:
        replies = counted(len(scenario.replies), "reply", "replies")
        err.print(f"serving {visible(str(scenario.name))} ({replies}); Ctrl-C stops", markup=False)

    status = beside.run(server, base_url(server.sock), ready)
    problems = [problem.message for problem in script.problems + script.unused()]
    _tell(
        beside.problems(server) + problems,
        served.received,
        served.received_by,
        f"{counted(script.answered, 'reply', 'replies')} sent",
    )
    failed = bool(problems) and (once or bool(script.problems) or bool(command))
    beside.exit(status, failed or server.idled, server.command_stopped)


async def _stop_after(server: AppServer, seconds: float) -> None:
    """Have `server` stop in `seconds` (async, so that it runs on the server's event loop, and returns at
    once: the connection it ran after stays free for the client's next request); idleness no longer ends
    it."""
    import asyncio

    if server.idle is not None:
        server.idle.disarm()
    asyncio.get_running_loop().call_later(seconds, server.stop)


async def _keep_serving() -> None:
    """At the end of a scenario served to a command: nothing; the command's end ends the run."""


class _Beside:
    """What `sim serve` runs beside its server: a command (maybe none) and an idle timeout (maybe none)."""

    def __init__(self, command: list[str], idle_timeout: float | None) -> None:
        self.command = command
        self.idle_timeout = idle_timeout

    def at_the_end(self, server: AppServer, grace: float) -> Callable[[], Awaitable[None]]:
        """What `--once` does when the file is over: stop after the grace, or, with a command, nothing."""
        return _keep_serving if self.command else partial(_stop_after, server, grace)

    def environment(self, url: str) -> dict[str, str]:
        """The command's environment: sim's, pointed at `url`, without the user's account settings."""
        environment = {k: v for k, v in os.environ.items() if k not in ACCOUNT_VARIABLES}
        environment["OPENAI_BASE_URL"] = url
        if not environment.get("OPENAI_API_KEY"):
            environment["OPENAI_API_KEY"] = SERVED_KEY
        environment.update(azure_environment(url))  # AzureOpenAI() finds it too
        if not environment.get(AZURE_API_KEY):
            environment[AZURE_API_KEY] = SERVED_KEY
        environment.update(module_client_type(environment))  # `openai.chat...` picks no client given both
        return environment

    def run(self, server: AppServer, url: str, ready: Callable[[], None]) -> int | None:
        """Serve until the end (the command's, `--once`'s, idleness, Ctrl-C or SIGTERM); the command's exit
        status as a shell says it (128 + N for signal N), or None without a command. Where to connect goes
        to standard output, or with a command to standard error: the command's output is its own."""
        from sim.host.serve import CommandNotFound

        def said_ready() -> None:
            if self.command:
                err.print(f"OPENAI_BASE_URL={url}", markup=False)
            else:
                print(f"OPENAI_BASE_URL={url}", flush=True)
            ready()

        environment = self.environment(url) if self.command else None
        try:
            code = server.run(
                on_ready=said_ready,
                command=self.command,
                environment=environment,
                idle_timeout=self.idle_timeout,
            )
        except CommandNotFound as error:
            err.print(f"error: {visible(str(error))}", markup=False)
            raise typer.Exit(error.status) from None
        if code is None:
            return None
        return 128 - code if code < 0 else code

    def problems(self, server: AppServer) -> list[str]:
        """The run's own problem: no request for the idle timeout."""
        if not server.idled:
            return []
        stopped = "; the command was stopped" if self.command and server.command_stopped else ""
        return [f"no request for {self.idle_timeout:g} s (--idle-timeout): the run was ended{stopped}"]

    def exit(self, status: int | None, failed: bool, stopped: bool = False) -> None:
        """Say how the command ended (`stopped`: by the server's end), then exit: its status if it failed,
        else 1 if the verdict failed."""
        if status is not None:
            from sim.cassette.command_line import shown_command

            shown = visible(shown_command(self.command))  # a key given on it is not shown
            how = f"exited with {status}"
            if status > 128 and status - 128 in signal.valid_signals():
                how = f"was ended by {signal.Signals(status - 128).name} ({status})"
            if stopped:  # by the end of the run, not by itself
                how = f"was stopped when the run ended: it {how}"
            verdict = "failed" if failed else "passed"
            err.print(f"command {shown} {how}; the served file's verdict: {verdict}", markup=False)
        if status:
            raise typer.Exit(status)
        if failed:
            raise typer.Exit(1)


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
    rate_limit: RateLimit | None,
    beside: _Beside,
) -> None:
    """Serve a cassette; with a `grace` (`--once`), until it is over and the grace has passed (with a
    command, until the command ends)."""
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
        on_finished=beside.at_the_end(server, grace) if grace is not None else None,
        on_answered=log,
        rate_limit=rate_limit,
    )
    server.server.config.app = served.app

    def ready() -> None:
        count = counted(len(cassette.interactions), "interaction")
        err.print(f"serving cassette {visible(str(file))} ({count}); Ctrl-C stops", markup=False)

    url = base_url(server.sock, base_path(cassette.interactions))
    status = beside.run(server, url, ready)
    unplayed = answerer.unplayed() if once or beside.command else []
    problems = [problem.message for problem in answerer.problems] + unplayed
    played = f"{len(answerer.answers.played)} of {len(cassette.interactions)} interactions played"
    _tell(beside.problems(server) + problems, served.received, answerer.answered_by, played)
    beside.exit(status, bool(problems) or server.idled, server.command_stopped)


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
    environment = proxied_environment(os.environ, url)

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
