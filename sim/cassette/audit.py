"""Auditing a cassette: one finding per line, `serious` ones (leaked secrets, unpaired tool messages) fail."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sim.cassette.conversations import HttpFailure, ModelCall, conversations
from sim.cassette.reader import Cassette, RecordedInteraction, RecordedRequest
from sim.cassette.replay import replayable
from sim.cassette.scrubbing import credentials_in_body
from sim.cassette.secrets import SECRET_HEADERS, credentials_in, is_placeholder
from sim.core.errors import CassetteError, MessageContractError
from sim.core.messages import AssistantMessage, ChatMessage, RequestPairing, ToolMessage

Severity = Literal["serious", "warning", "info"]


@dataclass(frozen=True, slots=True)
class Finding:
    """Something a careful user would want to know about one interaction."""

    interaction: int | None
    """The interaction it is about; None for the file as a whole."""
    severity: Severity
    what: str

    def line(self, path: str) -> str:
        """The finding on one line."""
        where = "" if self.interaction is None else f" interaction {self.interaction}:"
        return f"{path}:{where} {self.severity}: {self.what}"


def _whole_file(cassette: Cassette) -> list[Finding]:
    """What is wrong with the file as a whole: cut short, empty, or a `sim:` block replay refuses."""
    findings = []
    if cassette.version != 1:
        findings.append(
            Finding(None, "serious", "no `version: 1` at its end: the file was cut short, or is not vcrpy's")
        )
    if not cassette.interactions:
        findings.append(Finding(None, "serious", "no interactions recorded"))
    if cassette.sim is not None:
        try:
            replayable(cassette)
        except CassetteError as error:
            findings.append(Finding(None, "serious", str(error).removeprefix(f"{cassette.path}: ")))
    return findings


def audit(cassette: Cassette) -> list[Finding]:
    """Every finding: the file's first, then in interaction order."""
    findings: list[Finding] = _whole_file(cassette)
    for interaction in cassette.interactions:
        findings += _secrets(interaction) + _stale(interaction)
        if not interaction.is_model_call:
            request = interaction.request
            findings.append(
                Finding(interaction.index, "warning", f"not a model call: {request.method} {request.uri}")
            )
    for conversation in conversations(cassette):
        pairing = RequestPairing()  # each request checked for what it adds to the one before
        for exchange in conversation.exchanges:
            index = exchange.interaction.index
            if exchange.request_problem:
                findings.append(
                    Finding(index, "serious", f"request cannot be read: {exchange.request_problem}")
                )
            else:
                try:
                    pairing.check(_judged(exchange))
                except MessageContractError as error:
                    findings.append(
                        Finding(index, "serious", f"tool messages not paired with calls: {error}")
                    )
            for sent, returned in exchange.renamed_calls.items():
                what = (
                    f"the request sends call id {sent} for the model's call {returned} (paired by position)"
                )
                findings.append(Finding(index, "info", what))
            if exchange.unknown_previous:
                what = f"previous_response_id {exchange.continues} names no response recorded here"
                findings.append(Finding(index, "warning", what))
            if isinstance(exchange.reply, HttpFailure):
                severity: Severity = "warning" if not exchange.reply.unreadable else "serious"
                findings.append(
                    Finding(
                        index, severity, f"HTTP {exchange.reply.status} recorded: {exchange.reply.message}"
                    )
                )
    return sorted(findings, key=lambda finding: -1 if finding.interaction is None else finding.interaction)


def _judged(exchange: ModelCall) -> Sequence[ChatMessage]:
    """The messages whose pairing can be judged: where the chain goes back to a response not recorded,
    results answering calls that are not shown were paired there (its warning says so)."""
    if not exchange.unknown_start:
        return exchange.messages
    shown = {c.id for m in exchange.messages if isinstance(m, AssistantMessage) for c in m.tool_calls}
    return [m for m in exchange.messages if not isinstance(m, ToolMessage) or m.tool_call_id in shown]


def _secrets(interaction: RecordedInteraction) -> list[Finding]:
    found = []
    for side, headers, body in (
        ("request", interaction.request.headers, _searched(interaction.request)),
        ("response", interaction.response.headers, interaction.response.body.decode("utf-8", "replace")),
    ):
        for name in sorted(set(headers) & SECRET_HEADERS):
            if all(is_placeholder(value) for value in headers[name]):
                found.append(
                    Finding(interaction.index, "info", f"{side} header {name} is kept, with a placeholder")
                )
            else:
                found.append(Finding(interaction.index, "serious", f"{side} header {name} is recorded"))
        kinds = [kind for values in headers.values() for value in values for kind in credentials_in(value)]
        kinds += credentials_in(interaction.request.uri) if side == "request" else []
        kinds += credentials_in_body(body)
        found += [Finding(interaction.index, "serious", f"{kind} in the {side}") for kind in kinds]
    return list(dict.fromkeys(found))


def _searched(request: RecordedRequest) -> str:
    """The request body's text to search: of a compact body that appends items to the one before, only
    those items (the body they extend was searched), so that a long session is searched once."""
    if request.appended is not None and request.extended is not None:
        return f"[{request.extended.add.strip()[1:]}]"
    return (request.body or b"").decode("utf-8", errors="replace")


def _stale(interaction: RecordedInteraction) -> list[Finding]:
    found = []
    response = interaction.response
    if "gzip" in ",".join(response.headers.get("content-encoding", [])) and not response.compressed:
        found.append(
            Finding(interaction.index, "info", "stale content-encoding: gzip on a body stored decoded")
        )
    for side, headers, size in (
        ("request", interaction.request.headers, interaction.request.size),
        ("response", response.headers, response.stored_size),
    ):
        stated = (headers.get("content-length") or [""])[0]
        if stated.isdigit() and int(stated) != size:
            found.append(
                Finding(
                    interaction.index, "info", f"stale {side} content-length: {stated}, body is {size} bytes"
                )
            )
    return found
