"""`sim drift`: would today's model still answer as the recordings say? Each cassette's conversations are
asked again of a live endpoint, turn by turn, and each live reply classed against the recorded one."""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from sim.cli.terminal import JsonFlag, ReportFile, err, out, print_json, usage_error, write_report_if_asked
from sim.cli.verdicts import files_given
from sim.core.counts import counted
from sim.core.errors import CassetteError, ConfigurationError, ScenarioError
from sim.core.untrusted import visible
from sim.wire import Api

if TYPE_CHECKING:
    import httpx2

    from sim.cassette.scrubbing import Scrubber
    from sim.core.model import Usage
    from sim.drift.compare import Drift
    from sim.drift.session import FileDrift, UpstreamConnection
    from sim.reports.html import Report

_STYLE = {"same": "green", "compatible": "yellow", "breaking": "red"}
"""How each `Drift` is shown, by its value."""

TransportFactory = Callable[[], "httpx2.AsyncBaseTransport | None"]
transport_factory: TransportFactory = lambda: None  # noqa: E731
"""Makes the transport drift requests go through (None: the network); tests swap in an in-process one."""


def drift(
    paths: Annotated[
        list[Path],
        typer.Argument(metavar="PATHS", help="Cassettes (plain or compact, either API), scenarios, folders."),
    ],
    upstream: Annotated[
        str, typer.Option("--upstream", help="The live API's base URL, e.g. https://api.openai.com/v1.")
    ],
    key_file: Annotated[
        Path | None,
        typer.Option(
            "--key-file", help="Read the key from this file (`-`: standard input) instead of OPENAI_API_KEY."
        ),
    ] = None,
    max_requests: Annotated[
        int | None,
        typer.Option("--max-requests", min=1, help="The most requests per file (default: as recorded)."),
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Files asked at once.")] = 4,
    rerecord: Annotated[
        Path | None,
        typer.Option(
            "--rerecord", help="Write a fresh cassette of each drifted file's live conversation here."
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Let --rerecord overwrite existing files (inputs included).")
    ] = False,
    prices: Annotated[
        Path | None,
        typer.Option("--prices", help="YAML or JSON: model -> \\[input, output] dollars per million tokens."),
    ] = None,
    api: Annotated[Api, typer.Option(help="The API a scenario's conversation is asked over.")] = Api.chat,
    as_json: JsonFlag = False,
    report: ReportFile = None,
) -> None:
    """Ask each recorded conversation again of the live API (the recorded tool results kept) and say which
    replies drifted: same, compatible (other wording, other valid arguments) or breaking (exit 1)."""
    import asyncio

    from sim.adapters.settings import UpstreamCredentials
    from sim.cassette.scrubbing import Scrubber
    from sim.cassette.secrets import require_scrubbable
    from sim.cassette.upstream import UpstreamUrl
    from sim.cli.serving import read_key
    from sim.drift.compare import Drift
    from sim.drift.prices import PRICES

    try:
        asked = UpstreamUrl.parse(upstream)  # as `sim proxy` parses it: no user or password, the query kept
    except ValueError as error:
        raise usage_error(str(error)) from None
    try:
        credentials = UpstreamCredentials.load(api_key=read_key(key_file) if key_file is not None else None)
        require_scrubbable("the upstream key" if key_file else "OPENAI_API_KEY", credentials.api_key)
        table = {**PRICES, **(_prices(prices) if prices is not None else {})}
    except ConfigurationError as error:
        raise usage_error(str(error)) from None
    files = files_given(paths)
    targets = _rerecord_targets(files, paths, rerecord, force) if rerecord is not None else {}
    scrubber = Scrubber(credentials.secrets)
    headers = asked.credentials(credentials.headers)
    results = asyncio.run(_all(files, upstream, headers, max_requests, concurrency, api, credentials.secrets))
    if as_json:
        print_json(scrubber.value(_as_json(results, table)))
    else:
        for result in results:
            _tell(result, scrubber)
        _summary(results, table)
    write_report_if_asked(report, lambda: _page(results, scrubber))
    if rerecord is not None and not _rerecord(results, targets, credentials.secrets):
        raise typer.Exit(2)
    if any(result.worst is Drift.breaking for result in results):
        raise typer.Exit(1)


def _prices(path: Path) -> dict[str, tuple[float, float]]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ConfigurationError(f"--prices {path}: cannot read it: {type(error).__name__}") from None
    if not isinstance(data, dict):
        raise ConfigurationError(
            f"--prices {path}: must map each model to [input, output] dollars per million"
        )
    table = {}
    for model, pair in data.items():
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, int | float) for p in pair)):
            raise ConfigurationError(f"--prices {path}: {model}: must be [input, output] dollars per million")
        table[str(model)] = (float(pair[0]), float(pair[1]))
    return table


async def _all(
    files: list[Path],
    base_url: str,
    headers: dict[str, str],
    max_requests: int | None,
    concurrency: int,
    api: Api,
    secrets: tuple[str, ...] = (),
) -> list[FileDrift]:
    import asyncio

    import httpx2

    from sim.cassette.reader import looks_like_cassette
    from sim.drift.session import UpstreamConnection, drift_file

    limit = asyncio.Semaphore(concurrency)
    timeout = httpx2.Timeout(120, connect=15)
    async with httpx2.AsyncClient(
        timeout=timeout, follow_redirects=False, transport=transport_factory()
    ) as client:
        upstream = UpstreamConnection(base_url, headers, client, secrets=secrets)

        async def one(path: Path) -> FileDrift:
            async with limit:
                if looks_like_cassette(path):
                    return await drift_file(path, upstream, max_requests=max_requests)
                return await _scenario(path, upstream, max_requests, api)

        return list(await asyncio.gather(*(one(path) for path in files)))


async def _scenario(
    path: Path, upstream: UpstreamConnection, max_requests: int | None, api: Api
) -> FileDrift:
    """A scenario asked again as the recording it stands for (its scripted replies the recorded side)."""
    from sim.drift.scenarios import recording_of
    from sim.drift.session import FileDrift, drift_file

    with tempfile.TemporaryDirectory() as folder:
        cassette = Path(folder) / "recording.yaml"
        try:
            await recording_of(path, cassette, api=api)
        except ScenarioError as error:
            return FileDrift(str(path), problem=str(error))
        result = await drift_file(cassette, upstream, max_requests=max_requests)
    result.path = str(path)
    return result


def _tell(result: FileDrift, scrubber: Scrubber) -> None:
    from sim.drift.compare import Drift

    def said(text: str) -> str:
        return visible(scrubber.text(text))

    asked = f" ({counted(result.requests, 'request')})"
    out.print(
        Text.assemble(
            (f"{result.worst.value.upper()} ", _STYLE[result.worst]), said(result.path), (asked, "dim")
        )
    )
    if result.problem is not None:
        out.print(f"  ! {said(result.problem)}", markup=False)
    for number, conversation in enumerate(result.conversations, 1):
        if len(result.conversations) > 1:
            out.print(f"  conversation {number}", markup=False)
        for turn in conversation.turns:
            drift = turn.compared.drift
            out.print(
                Text.assemble(
                    f"  turn {turn.turn} ", (drift.value, _STYLE[drift]), f": {said(turn.compared.why)}"
                )
            )
            if drift is not Drift.same:
                out.print(f"      recorded: {said(turn.recorded)}", markup=False)
                out.print(f"      live:     {said(turn.live)}", markup=False)
        if conversation.stopped:
            out.print(f"  ! {said(conversation.stopped)}", markup=False)


def _total(results: list[FileDrift]) -> Usage:
    from sim.core.model import Usage
    from sim.drift.session import usage_sum

    return functools.reduce(usage_sum, (result.usage for result in results), Usage())


def _spent(results: list[FileDrift], table: dict[str, tuple[float, float]]) -> float | None:
    from sim.drift.prices import cost

    costs = [cost(r.usage, r.model, table) for r in results if r.requests]
    return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


def _counts(results: list[FileDrift]) -> dict[Drift, int]:
    """How many files drifted how far (each by its farthest turn)."""
    from sim.drift.compare import Drift

    return {drift: sum(r.worst is drift for r in results) for drift in Drift}


def _summary(results: list[FileDrift], table: dict[str, tuple[float, float]]) -> None:
    from sim.drift.compare import Drift

    counts = _counts(results)
    usage, spent = _total(results), _spent(results, table)
    price = f" (${spent:.4f})" if spent is not None else " (no price known for every model: see --prices)"
    out.print(
        f"{counted(len(results), 'file')}: {counts[Drift.same]} same, {counts[Drift.compatible]} compatible,"
        f" {counts[Drift.breaking]} breaking; {counted(sum(r.requests for r in results), 'request')},"
        f" {usage.prompt_tokens} + {counted(usage.completion_tokens, 'token')}{price}",
        markup=False,
    )


def _as_json(results: list[FileDrift], table: dict[str, tuple[float, float]]) -> dict[str, Any]:
    from sim.drift.compare import compared_json

    files = [
        {
            "path": r.path,
            "drift": r.worst.value,
            "problem": r.problem,
            "requests": r.requests,
            "model": r.model,
            "usage": r.usage.model_dump(),
            "conversations": [
                {
                    "stopped": c.stopped,
                    "recorded_turns": c.recorded_turns,
                    "turns": [
                        {
                            "turn": t.turn,
                            "interaction": t.interaction,
                            "recorded": t.recorded,
                            "live": t.live,
                            **compared_json(t.compared),
                        }
                        for t in c.turns
                    ],
                }
                for c in r.conversations
            ],
        }
        for r in results
    ]
    counts = {drift.value: count for drift, count in _counts(results).items()}
    usage = _total(results)
    requests = sum(r.requests for r in results)
    totals = {**counts, "requests": requests, "usage": usage.model_dump(), "cost": _spent(results, table)}
    return {"files": files, "summary": totals}


def _within(file: Path, given: list[Path]) -> Path:
    """`file`'s path inside the first folder given that holds it (its subfolders kept), else its name."""
    for folder in given:
        if folder.is_dir() and file.is_relative_to(folder):
            return file.relative_to(folder)
    return Path(file.name)


def _rerecord_targets(files: list[Path], given: list[Path], folder: Path, force: bool) -> dict[str, Path]:
    """Where `--rerecord` writes each input's fresh cassette (by the input's path; a file found in a folder
    given keeps its place below it), before anything is asked: a usage error where two inputs would be
    written to one path, where a cassette would overwrite a file (an input among them) without `--force`,
    or where the folder cannot be made or written."""
    where = f"--rerecord {visible(str(folder))}"
    if folder.exists() and not folder.is_dir():
        raise usage_error(f"{where}: not a folder")
    targets: dict[str, Path] = {}
    written: dict[Path, Path] = {}
    for file in files:
        target = folder / _within(file, given)
        if (other := written.setdefault(target, file)).resolve() != file.resolve():
            both = f"{visible(str(other))} and {visible(str(file))}"
            raise usage_error(f"{where}: {both} would both be written to {visible(str(target))}")
        targets[str(file)] = target
    existing = [target for target in targets.values() if target.exists() or target.is_symlink()]
    if existing and not force:
        inputs = {file.resolve() for file in files}
        first, more = existing[0], f" (and {len(existing) - 1} more)" if len(existing) > 1 else ""
        what = "the input " if first.resolve() in inputs else ""
        raise usage_error(
            f"{where}: would overwrite {what}{visible(str(first))}{more} (use --force to overwrite)"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise usage_error(f"{where}: cannot make it: {error.strerror or type(error).__name__}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise usage_error(f"{where}: cannot write into it (read-only)")
    return targets


def _rerecord(results: list[FileDrift], targets: dict[str, Path], secrets: tuple[str, ...]) -> bool:
    """A cassette of the live conversation of each drifted file, up to its first breaking turn, at its
    target; none for a file whose questions were not all answered (an error, no reply: that is no
    recording of the model), which is said. The files whose drift breaks the recording are listed: they
    need a real re-recording with the program. False when a cassette could not be written (one line)."""
    from sim.cassette.writer import write_cassette
    from sim.drift.compare import Drift

    written = True
    for result in results:
        if result.worst is Drift.same or result.problem is not None:
            continue
        unanswered = next((c.unanswered for c in result.conversations if c.unanswered), None)
        if unanswered is not None:
            said = f"{result.path}: the live API did not answer {unanswered}"
            err.print(f"not re-recorded: {visible(said)}", markup=False)
            continue
        target = targets[result.path]
        exchanges = [exchange for conversation in result.conversations for exchange in conversation.exchanges]
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_cassette(target, exchanges, sim=None, secrets=secrets)
        except CassetteError as error:
            err.print(f"! {visible(f'{target}: {error}')}", markup=False)
            written = False
            continue
        except OSError as error:
            said = f"cannot write {target}: {error.strerror or type(error).__name__}"
            err.print(f"error: {visible(said)}", markup=False)
            written = False
            continue
        err.print(f"wrote {target} ({counted(len(exchanges), 'exchange')})", markup=False)
    for result in results:
        answered = result.problem is None and not any(c.unanswered for c in result.conversations)
        if result.worst is Drift.breaking and answered:
            err.print(f"needs a real re-recording with your program: {visible(result.path)}", markup=False)
    return written


def _page(results: list[FileDrift], scrubber: Scrubber) -> Report:
    """The HTML page: each file's turns, the first drifted turn side by side; the credentials masked (the
    live replies are the upstream's words, and may say them back)."""
    from sim.core.transcript import Line, LineKind
    from sim.drift.compare import Drift
    from sim.reports.html import Report, Tally, divergence, section

    said = scrubber.text
    page = Report("sim drift")
    counts = _counts(results)
    verdict = "breaking drift" if counts[Drift.breaking] else "no breaking drift"
    figures = (
        ("files", len(results)),
        *((drift.value, counts[drift]) for drift in Drift),
        ("requests", sum(r.requests for r in results)),
    )
    page.tally = Tally(figures, verdict, not counts[Drift.breaking])
    for result in results:
        lines = []
        for conversation in result.conversations:
            for turn in conversation.turns:
                compared = turn.compared
                lines += [Line(LineKind.turn, f"turn {turn.turn}: {compared.drift.value}: {compared.why}"),
                          Line(LineKind.note, f"  recorded: {turn.recorded}"),
                          Line(LineKind.note, f"  live:     {turn.live}")]  # fmt: skip
            if conversation.stopped:
                lines.append(Line(LineKind.error, f"! {conversation.stopped}"))
        problems = [said(result.problem)] if result.problem else []
        first = next((t for c in result.conversations for t in c.turns if t.shown is not None), None)
        beside = None
        if first is not None and first.shown is not None:  # the first turn that drifted, side by side
            where = said(f"turn {first.turn}: {first.compared.why}")
            recorded, live = map(said, first.shown)
            beside = divergence(where, recorded, live, labels=("recorded reply", "live reply"))
        passed = result.worst is not Drift.breaking
        lines = [line.retold(said) for line in lines]
        page.add(section(said(result.path), passed, result.worst.value, problems, lines, beside))
    return page
