"""Recording a live run with vcrpy: each HTTP interaction into the journal as it finishes, then the
cassette written from the journal, atomically, with the session's `sim:` block."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import vcr
from vcr.persisters.filesystem import CassetteNotFoundError

from sim.cassette.journal import Journal
from sim.cassette.secrets import SECRET_HEADERS
from sim.cassette.session import RecordedSession, RecordedTool, echoed_results
from sim.cassette.writer import exchange_from_vcr
from sim.core.calls import CallRef, keyed
from sim.core.events import RunEvent, ToolCallFinished
from sim.core.loop import AgentRunner, RunEnding
from sim.core.tools import ToolResult
from sim.wire import Api


class FreshStart:
    """A vcrpy persister that loads nothing (a recording starts empty) and saves nothing (the journal
    holds what was recorded)."""

    def load_cassette(self, cassette_path: str, serializer: Any) -> Any:
        """Nothing is loaded."""
        raise CassetteNotFoundError()

    def save_cassette(self, cassette_path: str, cassette_dict: Mapping[str, Any], serializer: Any) -> None:
        """Nothing is saved."""


class JournalingHooks:
    """vcrpy's record hooks handing each interaction to the journal as it finishes (after vcrpy's own
    filters: secret headers out, bodies decompressed), so that the cassette keeps nothing until the end;
    they also keep the largest request body (a run's history only grows: it holds every echoed result)."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.largest: bytes | None = None
        self._request: Any = None
        self._numbers = itertools.count()

    def request(self, request: Any) -> Any:
        """`before_record_request`: the request, unchanged, remembered for the response that follows."""
        self._request = request
        return request

    def response(self, response: Any) -> None:
        """`before_record_response`: the interaction into the journal, and nothing into the cassette."""
        # vcrpy records an interaction by passing its request, then at once its response, through these
        # hooks (it also passes requests alone, to match them): the last request seen is this response's
        exchange = exchange_from_vcr(self._request, response)
        if exchange.request_body is not None and len(exchange.request_body) > len(self.largest or b""):
            self.largest = exchange.request_body
        self.journal.append(next(self._numbers), exchange)


def recording_vcr(hooks: JournalingHooks) -> vcr.VCR:
    """A vcrpy `VCR` that records every request, secret headers filtered and bodies decompressed, into the
    journal that `hooks` write (it starts empty and saves nothing itself)."""
    recorder = vcr.VCR(
        record_mode="all",
        decode_compressed_response=True,
        record_on_exception=False,
        filter_headers=sorted(SECRET_HEADERS),
        before_record_request=hooks.request,
        before_record_response=hooks.response,
    )
    recorder.register_persister(FreshStart())
    return recorder


def record_run(
    path: Path,
    runner: AgentRunner,
    prompt: str,
    *,
    model: str,
    api: Api = Api.chat,
    chain: bool = False,
    stream: bool,
    max_tokens: int | None,
    secrets: tuple[str, ...],
    compact: bool = False,
    force: bool = True,
) -> RunEnding:
    """Run `prompt` on `runner` while vcrpy records; then write the cassette, atomically.

    A run that raises an `AgentError` is recorded too (its outcome is in the `sim:` block); anything else
    (a crash, Ctrl-C) leaves the cassette as it was and the exchanges that finished in its journal
    (`sim recover`), when there were any. The cassette's path is held from the start (`CassetteError`
    when another recording holds it, or, without `force`, when the cassette exists).
    """
    results: dict[CallRef, ToolResult] = {}

    def keep_result(event: RunEvent) -> None:
        if isinstance(event, ToolCallFinished):
            results[(event.call.id, event.turn)] = event.result

    journal = Journal(path, secrets, keep=not force)
    hooks = JournalingHooks(journal)
    try:
        with recording_vcr(hooks).use_cassette(str(path)):
            ending = asyncio.run(runner.run_to_end(prompt, observer=keep_result))
    except BaseException:
        if not journal.count:
            journal.path.unlink(missing_ok=True)
        journal.close()
        raise
    echoed = echoed_results([hooks.largest], api)
    named = keyed({call: call for call in results})  # `id@turn` wherever the run reused an id
    session = RecordedSession(
        prompt=prompt,
        system_prompt=runner.system.content,
        model=model,
        api=api,
        chain=chain,
        max_turns=runner.max_turns,
        stream=stream,
        max_tokens=max_tokens,
        tools=[
            RecordedTool(name=s.name, description=s.description, parameters=dict(s.parameters))
            for s in runner.tools.snapshot().specs
        ],
        outcome=ending.outcome,
        final_text=ending.final_text,
        turns=ending.turns,
        error=str(ending.error) if ending.error else None,
        tool_results={key: results[call] for key, call in named.items() if call not in echoed},
    )
    journal.finish(sim=session.model_dump(mode="json"), compact=compact)
    return ending
