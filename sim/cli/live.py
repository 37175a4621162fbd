"""The commands that run the loop live: `run`, and `record`, which records the session into a cassette."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from sim.cli.terminal import JsonFlag, err, out, print_json, usage_error
from sim.core.errors import CassetteError, ConfigurationError
from sim.core.limits import DEFAULT_MAX_TURNS
from sim.core.untrusted import visible
from sim.wire import Api

if TYPE_CHECKING:
    import httpx2

    from sim.adapters.settings import Settings
    from sim.cassette.scrubbing import Scrubber
    from sim.core.approval import Approver
    from sim.core.events import RunEvent
    from sim.core.loop import AgentRunner, RunEnding
    from sim.core.transcript import Line


class ApproveMode(StrEnum):
    """How tool calls are approved in a live run."""

    ask = "ask"
    always = "always"
    never = "never"


HttpClientFactory = Callable[[], "httpx2.AsyncClient | None"]
http_client_factory: HttpClientFactory = lambda: None  # noqa: E731
"""Makes the HTTP client live runs use (None: the SDK's own); tests swap in an in-process transport."""


def _approver(mode: ApproveMode) -> Approver:
    from sim.core.approval import AllowAllApprover, DenyAllApprover, TerminalApprover

    if mode is ApproveMode.always:
        return AllowAllApprover()
    if mode is ApproveMode.never:
        return DenyAllApprover("Tool calls are denied (--approve never)")
    return TerminalApprover()


Prompt = Annotated[str, typer.Option("--prompt", "-p", help="What to ask the agent.")]
MaxTurns = Annotated[int, typer.Option(help="The most model requests.")]
Workspace = Annotated[Path, typer.Option(help="Where the shell runs commands.")]
Approve = Annotated[ApproveMode, typer.Option(help="Ask on the terminal, or allow / deny all.")]
Stream = Annotated[bool, typer.Option("--stream", help="Stream replies (SSE).")]
MaxCompletionTokens = Annotated[int | None, typer.Option(help="Token limit per reply.")]
ApiOption = Annotated[
    Api | None, typer.Option(help="The API to speak: chat or responses (default: OPENAI_API, else chat).")
]
Chain = Annotated[
    bool, typer.Option("--chain", help="With --api responses: store responses, chain previous_response_id.")
]


def run(
    prompt: Prompt,
    max_turns: MaxTurns = DEFAULT_MAX_TURNS,
    workspace: Workspace = Path("."),
    approve: Approve = ApproveMode.ask,
    stream: Stream = False,
    max_completion_tokens: MaxCompletionTokens = None,
    api: ApiOption = None,
    chain: Chain = False,
    as_json: JsonFlag = False,
) -> None:
    """Run the agent loop live against OPENAI_BASE_URL / OPENAI_API_KEY / OPENAI_MODEL (env or .env)."""
    import asyncio

    from sim.cassette.scrubbing import Scrubber

    live = Live(max_turns, workspace, approve, stream, max_completion_tokens, api, chain, as_json)
    settings, runner = _live_runner(live)
    _report(runner, asyncio.run(runner.run_to_end(prompt)), as_json, Scrubber(settings.secrets))


def record(
    cassette: Annotated[Path, typer.Argument(metavar="FILE", help="The cassette file to write.")],
    prompt: Prompt,
    max_turns: MaxTurns = DEFAULT_MAX_TURNS,
    workspace: Workspace = Path("."),
    approve: Approve = ApproveMode.ask,
    stream: Stream = False,
    max_completion_tokens: MaxCompletionTokens = None,
    api: ApiOption = None,
    chain: Chain = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing cassette.")] = False,
    compact: Annotated[
        bool, typer.Option("--compact", help="Write request bodies as what they add to the one before.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Run the loop live, as `sim run` does, and record the whole session into FILE."""
    from sim.cassette.journal import journal_path
    from sim.cassette.recorder import record_run
    from sim.cassette.scrubbing import Scrubber
    from sim.cassette.secrets import require_scrubbable

    if cassette.exists() and not force:
        raise usage_error(f"cassette exists: {cassette} (use --force to overwrite it)")
    live = Live(max_turns, workspace, approve, stream, max_completion_tokens, api, chain, as_json)
    settings, runner = _live_runner(live)
    scrubber = Scrubber(settings.secrets)
    try:
        require_scrubbable("OPENAI_API_KEY", settings.api_key)
    except ConfigurationError as error:
        raise usage_error(str(error)) from None
    try:
        ending = record_run(
            cassette,
            runner,
            prompt,
            model=settings.model,
            api=live.api or settings.api,
            chain=chain,
            stream=stream,
            max_tokens=max_completion_tokens,
            secrets=settings.secrets,
            compact=compact,
            force=force,
        )
    except CassetteError as failure:
        err.print(f"error: {scrubber.text(str(failure))}", markup=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        left = journal_path(cassette)
        if left.exists():
            err.print(f"interrupted: `sim recover {left}` makes a cassette of what finished", markup=False)
        raise typer.Exit(130) from None
    if not as_json:
        err.print(f"recorded {cassette}", markup=False)
    _report(runner, ending, as_json, scrubber)


@dataclass(frozen=True, slots=True)
class Live:
    """The options of a live run (`sim run`, `sim record`)."""

    max_turns: int
    workspace: Path
    approve: ApproveMode
    stream: bool
    max_tokens: int | None
    api: Api | None
    chain: bool
    as_json: bool


def _live_runner(live: Live) -> tuple[Settings, AgentRunner]:
    """The settings and a runner with the shell tool against the configured endpoint; exit 2 when unusable."""
    from sim.adapters.connect import connect_model
    from sim.adapters.settings import Settings
    from sim.core.loop import AgentRunner
    from sim.core.tools import ToolRegistry
    from sim.tools.shell import shell_tool

    try:
        settings = Settings.load()
        model = connect_model(
            live.api or settings.api,
            base_url=settings.base_url,
            api_key=settings.api_key,
            model=settings.model,
            stream=live.stream,
            max_tokens=live.max_tokens,
            chain=live.chain,
            http_client=http_client_factory(),
            headers=settings.headers,
            query=dict(settings.query),
        )
        runner = AgentRunner(
            model,
            ToolRegistry([shell_tool()]),
            _approver(live.approve),
            workspace=live.workspace,
            max_turns=live.max_turns,
            observer=None if live.as_json else _print_event,
        )
    except ConfigurationError as error:
        raise usage_error(str(error)) from None
    if not live.workspace.is_dir():
        raise usage_error(f"no such workspace folder: {live.workspace}")
    return settings, runner


def _style(line: Line) -> str:
    """How the terminal shows a line of the live transcript, by what the line is."""
    from sim.core.transcript import LineKind

    if line.kind is LineKind.turn:
        return "bold"
    if line.kind in (LineKind.denied, LineKind.error) or line.error_code is not None:
        return "red"
    if line.kind is LineKind.call:
        return "cyan"
    return ""


def _print_event(event: RunEvent) -> None:
    from sim.core.transcript import event_lines

    for line in event_lines(event):
        out.print(Text(line.text, style=_style(line)))


def _report(runner: AgentRunner, ending: RunEnding, as_json: bool, scrubber: Scrubber) -> None:
    """Print how a live run ended, and exit 1 when it failed; no key is ever shown, whatever the error."""
    from sim.core.messages import CHAT_MESSAGES

    error, final_text = ending.error, ending.final_text
    if as_json:
        report: dict[str, Any] = {
            "outcome": ending.outcome,
            "final_text": final_text,
            "turns": ending.turns,
            "error": str(error) if error else None,
            "history": CHAT_MESSAGES.dump_python(list(runner.history), mode="json"),
        }
        print_json(scrubber.value(report))
    elif final_text is not None:
        for line in final_text.split("\n"):  # the reply's lines, each shown as it is
            out.print(visible(line), markup=False)
    if error is not None:
        outcome = "" if ending.outcome == "error" else f"{ending.outcome}: "
        err.print(f"error: {outcome}{visible(scrubber.text(str(error)))}", markup=False)
        raise typer.Exit(2 if isinstance(error, ConfigurationError) else 1)
