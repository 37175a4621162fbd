"""A scenario's script told turn by turn, without running it."""

from __future__ import annotations

from sim.core.counts import counted, turns
from sim.core.transcript import Line, LineKind, call_line, preview
from sim.scenario.schema import Scenario, ScriptedReplySpec


def outline(scenario: Scenario) -> list[Line]:
    """Lines for people: the prompt, each scripted reply, the world's answers, the expectations."""
    heading = f"{scenario.name}: {scenario.description}" if scenario.description else f"{scenario.name}"
    lines = [Line(LineKind.heading, heading)]
    lines.append(Line(LineKind.user, f"user: {preview(scenario.prompt or '(no prompt: served only)')}"))
    for number, (reply, ids) in enumerate(zip(scenario.replies, scenario.call_ids(), strict=True), 1):
        if reply.error is not None:
            failed = f"reply {number}: API error {reply.error.status}: {preview(reply.error.message)}"
            lines.append(Line(LineKind.turn, failed))
            continue
        said = preview(reply.content) if reply.content is not None else ""
        told = f"reply {number}: {said or ('(calls tools)' if reply.tool_calls else '(no content)')}"
        lines.append(Line(LineKind.turn, told))
        lines += [
            call_line(f"  call {call_id}: {call.name}", preview(call.raw_arguments()))
            for call, call_id in zip(reply.tool_calls, ids, strict=True)
        ]
        if reply.finish_reason is not None:
            lines.append(Line(LineKind.note, f"  finish_reason: {reply.finish_reason}"))
    for command in scenario.commands:
        ending = "times out" if command.timed_out else f"exits {command.exit_code}"
        shell = f"shell `{command.command}` prints {preview(command.output)!r} and {ending}"
        lines.append(Line(LineKind.result, shell))
    approvals = scenario.approvals
    allowed = approvals if isinstance(approvals, str) else ", ".join(map(str, approvals))
    lines.append(Line(LineKind.note, f"approvals: {allowed}"))
    expect = scenario.expect
    wanted = [f"outcome {expect.outcome}"]
    if expect.turns is not None:
        wanted.append(turns(expect.turns))
    if expect.final_text is not None:
        wanted.append(f"final text {preview(expect.final_text)!r}")
    if expect.tool_results:
        wanted.append(f"results of {', '.join(expect.tool_results)}")
    lines.append(Line(LineKind.end, f"expect: {'; '.join(wanted)}"))
    return lines


def summary(reply: ScriptedReplySpec) -> str:
    """A scripted reply in a few words: what it sends (as `sim serve` logs it)."""
    if reply.error is not None:
        where = " inside the stream" if reply.error.in_stream else ""
        return f"error {reply.error.status}{where}: {preview(reply.error.message, 80)}"
    if reply.malformed:
        return "a body that is not JSON"
    parts = []
    if reply.hosted:
        parts.append("hosted " + ", ".join(str(entry.get("type")) for entry in reply.hosted))
    if reply.refusal is not None:
        parts.append(f"refusal {preview(reply.refusal, 60)!r}")
    if reply.content is not None:
        parts.append(f"text {preview(reply.content, 60)!r}")
    if reply.tool_calls:
        parts.append("calls " + ", ".join(call.name for call in reply.tool_calls))
    if reply.finish_reason is not None:
        parts.append(f"finish {reply.finish_reason}")
    if reply.cut_after_chunks is not None:
        parts.append(f"cut after {counted(reply.cut_after_chunks, 'chunk')}")
    return "; ".join(parts) or "an empty reply"
