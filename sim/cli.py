"""The `sim` command line: parses options, calls the layers, renders the outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, ClassVar, Protocol, TypeVar

import httpx2
import typer
from rich.progress import Progress
from rich.text import Text

from sim.adapters.apis import Api, connect_model
from sim.adapters.settings import Settings
from sim.cassette.audit import audit
from sim.cassette.conversations import Conversation, conversations
from sim.cassette.convert import runs, scenario_data
from sim.cassette.journal import journal_path
from sim.cassette.outline import outline as cassette_outline
from sim.cassette.reader import looks_like_cassette, read_cassette
from sim.cassette.recorder import record_run
from sim.cassette.replay import replay_file
from sim.cassette.scrubbing import Scrubber
from sim.cassette.secrets import require_scrubbable
from sim.cassette.writer import to_yaml, write_atomically
from sim.compact_commands import compact, expand, recover
from sim.core.approval import AllowAllApprover, Approver, DenyAllApprover, TerminalApprover
from sim.core.errors import CassetteError, ConfigurationError, ScenarioError
from sim.core.events import RunEvent
from sim.core.loop import DEFAULT_MAX_TURNS, AgentRunner, RunEnding
from sim.core.messages import CHAT_MESSAGES
from sim.core.tools import ToolRegistry
from sim.core.transcript import describe, turns, visible
from sim.fuzz_command import fuzz
from sim.player import PlayReport, Via, play_file
from sim.reports.build import checked, played, replayed, shown
from sim.scenario.loader import load_scenario, scenario_files
from sim.scenario.outline import outline
from sim.serving_commands import proxy, serve
from sim.terminal import (
    JsonFlag,
    PlayVia,
    ReportFile,
    err,
    open_one,
    out,
    print_json,
    usage_error,
    write_report_if_asked,
)
from sim.tools.shell import shell_tool

app = typer.Typer(
    name="sim",
    help="Record, replay and simulate OpenAI tool-calling agent loops.",
    no_args_is_help=True,
    add_completion=False,
)

PROGRESS_FROM_FILES = 20

Paths = Annotated[
    list[Path], typer.Argument(metavar="PATHS", help="Scenario files, or folders searched recursively.")
]


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"sim {version('sim')}")
        raise typer.Exit()


@app.callback()
def root(
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Record, replay and simulate OpenAI tool-calling agent loops."""


def _files(paths: list[Path]) -> list[Path]:
    for path in paths:
        if not path.exists():
            raise usage_error(f"no such file or folder: {path}")
    files = scenario_files(paths)
    if not files:
        raise usage_error(f"no YAML files (*.yaml, *.yml) in: {', '.join(map(str, paths))}")
    return files


@app.command()
def play(
    paths: Paths,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Print each run's transcript.")] = False,
    via: Annotated[
        PlayVia,
        typer.Option(help="direct: a scripted model; sdk: the real adapter and SDK against the simulator."),
    ] = PlayVia.direct,
    stream: Annotated[bool, typer.Option("--stream", help="With --via sdk, stream replies (SSE).")] = False,
    api: Annotated[Api, typer.Option(help="With --via sdk, the API the adapter speaks.")] = Api.chat,
    chain: Annotated[
        bool, typer.Option("--chain", help="With --api responses: previous_response_id.")
    ] = False,
    as_json: JsonFlag = False,
    report: ReportFile = None,
) -> None:
    """Run scenario files through the real loop with their scripted model and world."""
    mode: Via = via.value
    if chain and api is not Api.responses:
        raise usage_error("--chain is for the Responses API (--api responses)")

    def one(path: Path) -> Awaitable[PlayReport]:
        return play_file(path, via=mode, stream=stream, api=api, chain=chain)

    reports = _each(_files(paths), "playing", one, as_json)
    write_report_if_asked(report, lambda: played(reports))
    _verdicts(reports, [f"{r.outcome}, {turns(r.turns)}" for r in reports], verbose, as_json)


class _Report(Protocol):
    """What `sim play` and `sim replay` report per file (dataclasses, so `asdict` gives their JSON)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def path(self) -> str: ...
    @property
    def problems(self) -> tuple[str, ...]: ...
    @property
    def transcript(self) -> tuple[str, ...]: ...
    @property
    def passed(self) -> bool: ...


_Done = TypeVar("_Done", bound=_Report)


def _each(
    files: list[Path], label: str, work: Callable[[Path], Awaitable[_Done]], as_json: bool
) -> list[_Done]:
    """`work` on each file in turn, with a progress bar on a terminal when there are many."""

    async def all_of_them() -> list[_Done]:
        quiet = as_json or len(files) < PROGRESS_FROM_FILES or not err.is_terminal
        with Progress(console=err, transient=True, disable=quiet) as bar:
            task = bar.add_task(label, total=len(files))
            done = []
            for path in files:
                done.append(await work(path))
                bar.advance(task)
            return done

    return asyncio.run(all_of_them())


def _verdicts(reports: Sequence[_Report], details: list[str], verbose: bool, as_json: bool) -> None:
    """PASS or FAIL per file (problems when failed, transcripts with `-v`), a summary; exit 1 on a failure."""
    failed = [report for report in reports if not report.passed]
    if as_json:
        print_json([{**asdict(r), "passed": r.passed} for r in reports])
    else:
        for report, detail in zip(reports, details, strict=True):
            if report.passed:
                out.print(Text.assemble(("PASS ", "green"), report.path, (f" ({detail})", "dim")))
            else:
                out.print(Text.assemble(("FAIL ", "red"), report.path))
            for line in report.problems if verbose or not report.passed else ():
                out.print(f"  ! {line}", markup=False)
            for line in report.transcript if verbose else ():
                out.print(f"  {line}", markup=False)
        out.print(f"{len(reports) - len(failed)} passed, {len(failed)} failed")
    if failed:
        raise typer.Exit(1)


@app.command()
def check(
    paths: Annotated[
        list[Path], typer.Argument(metavar="PATHS", help="Scenario or cassette files, or folders of them.")
    ],
    as_json: JsonFlag = False,
    report: ReportFile = None,
) -> None:
    """Validate scenario files without running them; audit cassettes (secrets, pairing, errors, staleness)."""
    results: list[dict[str, Any]] = []
    for path in _files(paths):
        if looks_like_cassette(path):
            try:
                found = audit(read_cassette(path))
                serious = any(finding.severity == "serious" for finding in found)
                findings = [finding.line(str(path)) for finding in found]
                results.append(
                    {"path": str(path), "kind": "cassette", "valid": not serious, "findings": findings}
                )
            except CassetteError as error:
                results.append(
                    {"path": str(path), "kind": "cassette", "valid": False, "findings": [str(error)]}
                )
            continue
        try:
            load_scenario(path)
            results.append({"path": str(path), "kind": "scenario", "valid": True, "findings": []})
        except ScenarioError as error:
            results.append({"path": str(path), "kind": "scenario", "valid": False, "findings": [str(error)]})
    invalid = [result for result in results if not result["valid"]]
    write_report_if_asked(report, lambda: checked(results))
    if as_json:
        print_json(results)
    else:
        for result in results:
            for line in result["findings"]:
                style = "red" if ": serious: " in line or result["kind"] == "scenario" else "yellow"
                out.print(Text(line, style=style))
            if result["valid"]:
                out.print(Text.assemble(("ok ", "green"), result["path"]))
            elif result["kind"] == "scenario":
                out.print(Text.assemble(("invalid ", "red"), result["path"]))
            else:
                out.print(Text.assemble(("serious findings ", "red"), result["path"]))
        out.print(f"{len(results) - len(invalid)} ok, {len(invalid)} failed")
    if invalid:
        raise typer.Exit(1)


@app.command()
def show(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A scenario or cassette file.")],
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write the timeline as an HTML page.")
    ] = None,
) -> None:
    """Print a scenario's scripted conversation, or a cassette's recorded one, turn by turn (credentials
    masked, control characters written out)."""
    told = (
        open_one(file, lambda path: cassette_outline(read_cassette(path)))  # bodies are read lazily
        if looks_like_cassette(file)
        else outline(open_one(file, load_scenario))
    )
    masked = Scrubber()
    lines = [visible(masked.text(line)) for line in told]
    for line in lines:
        out.print(line, markup=False)
    write_report_if_asked(html, lambda: shown(str(file), lines))


@app.command()
def replay(
    paths: Annotated[
        list[Path],
        typer.Argument(metavar="PATHS", help="Cassettes recorded by `sim record`, or folders of them."),
    ],
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Print each replay's transcript.")] = False,
    as_json: JsonFlag = False,
    report: ReportFile = None,
) -> None:
    """Replay recorded sessions offline (no key, no network, no command run); compare with the recording."""
    reports = _each(_files(paths), "replaying", replay_file, as_json)
    details = [f"{r.outcome}, {turns(r.turns)}, {r.interactions} interactions" for r in reports]
    write_report_if_asked(report, lambda: replayed(reports))
    _verdicts(reports, details, verbose, as_json)


@app.command()
def convert(
    cassette: Annotated[Path, typer.Argument(metavar="FILE", help="Any vcrpy cassette.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The scenario file to write.")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
) -> None:
    """Turn a recorded session into editable scenario files that `sim play` plays the same way.

    Each conversation (each run of one: a scenario has one prompt) gives a file: OUTPUT, OUTPUT-2, ...
    """
    found = open_one(cassette, _runs)
    if not found:
        raise usage_error(f"{cassette}: no model calls to convert")
    targets = [
        output if n == 1 else output.with_name(f"{output.stem}-{n}{output.suffix}")
        for n in range(1, len(found) + 1)
    ]
    if not force and (existing := [t for t in targets if t.exists()]):
        raise usage_error(f"exists: {', '.join(map(str, existing))} (use --force to overwrite)")
    texts, size = [], 0  # all made before any is written: past the limit, nothing is
    for target, conversation in zip(targets, found, strict=True):
        data = scenario_data(conversation, name=target.stem, source=cassette.name)
        texts.append(to_yaml(Scrubber().value(data)))  # others' recordings may hold credentials
        size += len(texts[-1])
        if size > MAX_CONVERTED_CHARS:
            err.print(
                f"{cassette}: its {len(found)} conversations would make more than"
                f" {MAX_CONVERTED_CHARS // 1024**2} MiB of scenarios; nothing written",
                markup=False,
            )
            raise typer.Exit(1)
    for target, conversation, text in zip(targets, found, texts, strict=True):
        write_atomically(target, text)
        out.print(f"wrote {target} ({len(conversation.exchanges)} replies)", markup=False)


MAX_CONVERTED_CHARS = 256 * 1024 * 1024
"""The most text `sim convert` writes from one cassette (a small file of many branches from one large
request must not fill a disk)."""


def _runs(cassette: Path) -> list[Conversation]:
    """The cassette's conversations cut into runs (one prompt each), those whose first request cannot be
    read told and left out (read here whole, so that an error in a lazily read body is one line)."""
    found = []
    for conversation in conversations(read_cassette(cassette)):
        first = conversation.exchanges[0]
        if first.request_problem:
            where = f"interaction {first.interaction.index}"
            err.print(f"skipped {where}: its request cannot be read: {first.request_problem}", markup=False)
        else:
            found += runs(conversation)
    return found


class ApproveMode(StrEnum):
    """How tool calls are approved in a live run."""

    ask = "ask"
    always = "always"
    never = "never"


HttpClientFactory = Callable[[], "httpx2.AsyncClient | None"]
http_client_factory: HttpClientFactory = lambda: None  # noqa: E731
"""Makes the HTTP client live runs use (None: the SDK's own); tests swap in an in-process transport."""


def _approver(mode: ApproveMode) -> Approver:
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


@app.command()
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
    live = Live(max_turns, workspace, approve, stream, max_completion_tokens, api, chain, as_json)
    settings, runner = _live_runner(live)
    _report(runner, asyncio.run(runner.run_to_end(prompt)), as_json, Scrubber(settings.secrets))


@app.command()
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
    """Run the loop live, as `sim run` does, and record the whole session into CASSETTE."""
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
            max_completion_tokens=max_completion_tokens,
            secrets=settings.secrets,
            compact=compact,
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


def _style(line: str) -> str:
    if line.startswith("turn "):
        return "bold"
    if "Error [" in line or line.startswith("  denied"):
        return "red"
    if line.startswith("  call "):
        return "cyan"
    return ""


def _print_event(event: RunEvent) -> None:
    for line in describe(event):
        out.print(Text(line, style=_style(line)))


def _report(runner: AgentRunner, ending: RunEnding, as_json: bool, scrubber: Scrubber) -> None:
    """Print how a live run ended, and exit 1 when it failed; no key is ever shown, whatever the error."""
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
        out.print(final_text, markup=False)
    if error is not None:
        outcome = "" if ending.outcome == "error" else f"{ending.outcome}: "
        err.print(f"error: {outcome}{scrubber.text(str(error))}", markup=False)
        raise typer.Exit(2 if isinstance(error, ConfigurationError) else 1)


app.command()(compact)
app.command()(expand)
app.command()(recover)
app.command()(fuzz)
app.command()(serve)
app.command()(proxy)


def main() -> None:
    """Entry point of the `sim` console script."""
    app()


if __name__ == "__main__":
    main()
