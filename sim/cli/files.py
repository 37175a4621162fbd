"""The commands that read scenario and cassette files: `play`, `check`, `show`, `replay`, `convert`."""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from sim.cli.terminal import (
    JsonFlag,
    PlayVia,
    ReportFile,
    err,
    open_one,
    out,
    print_json,
    report_after,
    usage_error,
    write_report_if_asked,
)
from sim.cli.verdicts import each, files_given, verdicts
from sim.core.counts import counted, turns
from sim.core.errors import CassetteError, ScenarioError
from sim.core.untrusted import visible
from sim.wire import Api

if TYPE_CHECKING:
    from sim.cassette.conversations import Conversation
    from sim.player import PlayReport, Via

Paths = Annotated[
    list[Path], typer.Argument(metavar="PATHS", help="Scenario files, or folders searched recursively.")
]


def play(
    paths: Paths,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Print each run's transcript.")] = False,
    via: Annotated[
        PlayVia,
        typer.Option(
            help="direct: the loop asks the script itself; sdk: through the real adapter, SDK and HTTP."
        ),
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
    from sim.pages import played
    from sim.player import play_file

    mode: Via = via.value
    if chain and api is not Api.responses:
        raise usage_error("--chain is for the Responses API (--api responses)")

    def one(path: Path) -> Awaitable[PlayReport]:
        return play_file(path, via=mode, stream=stream, api=api, chain=chain)

    reports = each(files_given(paths), "playing", one, as_json)
    with report_after(report, lambda: played(reports)):
        verdicts(reports, [f"{r.outcome}, {turns(r.turns)}" for r in reports], verbose, as_json)


def check(
    paths: Annotated[
        list[Path], typer.Argument(metavar="PATHS", help="Scenario or cassette files, or folders of them.")
    ],
    as_json: JsonFlag = False,
    report: ReportFile = None,
) -> None:
    """Validate scenario files without running them; audit cassettes (secrets, pairing, errors, staleness)."""
    from sim.cassette.audit import audit
    from sim.cassette.reader import looks_like_cassette, read_cassette
    from sim.pages import checked
    from sim.scenario.loader import load_scenario

    results: list[dict[str, Any]] = []
    serious_lines: list[list[bool]] = []
    """Per file, whether each finding is serious (shown red; the others yellow)."""
    for path in files_given(paths):
        if looks_like_cassette(path):
            try:
                found = audit(read_cassette(path))
                serious = [finding.severity == "serious" for finding in found]
                findings = [finding.line(str(path)) for finding in found]
                results.append(
                    {"path": str(path), "kind": "cassette", "valid": not any(serious), "findings": findings}
                )
                serious_lines.append(serious)
            except CassetteError as error:
                results.append(
                    {"path": str(path), "kind": "cassette", "valid": False, "findings": [str(error)]}
                )
                serious_lines.append([False])
            continue
        try:
            load_scenario(path)
            results.append({"path": str(path), "kind": "scenario", "valid": True, "findings": []})
            serious_lines.append([])
        except ScenarioError as error:
            results.append({"path": str(path), "kind": "scenario", "valid": False, "findings": [str(error)]})
            serious_lines.append([True])
    invalid = [result for result in results if not result["valid"]]
    if as_json:
        print_json(results)
    else:
        for result, seriousness in zip(results, serious_lines, strict=True):
            for line, is_serious in zip(result["findings"], seriousness, strict=True):
                out.print(Text(visible(line), style="red" if is_serious else "yellow"))
            checked_path = visible(result["path"])
            if result["valid"]:
                out.print(Text.assemble(("ok ", "green"), checked_path))
            elif result["kind"] == "scenario":
                out.print(Text.assemble(("invalid ", "red"), checked_path))
            else:
                out.print(Text.assemble(("serious findings ", "red"), checked_path))
        out.print(f"{len(results) - len(invalid)} ok, {len(invalid)} failed")
    write_report_if_asked(report, lambda: checked(results))
    if invalid:
        raise typer.Exit(1)


def show(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A scenario or cassette file.")],
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write the timeline as an HTML page.")
    ] = None,
) -> None:
    """Print a scenario's scripted conversation, or a cassette's recorded one, turn by turn (credentials
    masked, control characters written out)."""
    from sim.cassette.reader import looks_like_cassette
    from sim.cassette.scrubbing import Scrubber
    from sim.pages import shown

    if looks_like_cassette(file):
        from sim.cassette.outline import outline as cassette_outline
        from sim.cassette.reader import read_cassette

        told = open_one(file, lambda path: cassette_outline(read_cassette(path)))  # bodies are read lazily
    else:
        from sim.scenario.loader import load_scenario
        from sim.scenario.outline import outline

        told = outline(open_one(file, load_scenario))
    masked = Scrubber()
    lines = [line.retold(lambda text: visible(masked.text(text))) for line in told]
    for line in lines:
        out.print(line.text, markup=False)
    write_report_if_asked(html, lambda: shown(str(file), lines))


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
    from sim.cassette.replay import replay_file
    from sim.pages import replayed

    reports = each(files_given(paths), "replaying", replay_file, as_json)
    details = [f"{r.outcome}, {turns(r.turns)}, {counted(r.interactions, 'interaction')}" for r in reports]
    with report_after(report, lambda: replayed(reports)):
        verdicts(reports, details, verbose, as_json)


def convert(
    cassette: Annotated[Path, typer.Argument(metavar="FILE", help="Any vcrpy cassette.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The scenario file to write.")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
) -> None:
    """Turn a recorded session into editable scenario files that `sim play` plays the same way.

    Each conversation (each run of one: a scenario has one prompt) gives a file: OUTPUT, OUTPUT-2, ...
    """
    from sim.cassette.convert import scenario_data
    from sim.cassette.scrubbing import Scrubber
    from sim.cassette.writer import to_yaml, write_atomically

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
                f"{cassette}: its {counted(len(found), 'conversation')} would make more than"
                f" {MAX_CONVERTED_CHARS // 1024**2} MiB of scenarios; nothing written",
                markup=False,
            )
            raise typer.Exit(1)
    for target, conversation, text in zip(targets, found, texts, strict=True):
        write_atomically(target, text)
        out.print(
            f"wrote {target} ({counted(len(conversation.exchanges), 'reply', 'replies')})", markup=False
        )


MAX_CONVERTED_CHARS = 256 * 1024 * 1024
"""The most text `sim convert` writes from one cassette (a small file of many branches from one large
request must not fill a disk)."""


def _runs(cassette: Path) -> list[Conversation]:
    """The cassette's conversations cut into runs (one prompt each), those whose first request cannot be
    read told and left out (read here whole, so that an error in a lazily read body is one line)."""
    from sim.cassette.conversations import conversations
    from sim.cassette.convert import runs
    from sim.cassette.reader import read_cassette

    found = []
    for conversation in conversations(read_cassette(cassette)):
        first = conversation.exchanges[0]
        if first.request_problem:
            where = f"interaction {first.interaction.index}"
            why = visible(first.request_problem)
            err.print(f"skipped {where}: its request cannot be read: {why}", markup=False)
        else:
            found += runs(conversation)
    return found
