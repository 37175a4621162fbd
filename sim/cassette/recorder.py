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

from sim.adapters.apis import Api
from sim.cassette.journal import Journal
from sim.cassette.secrets import SECRET_HEADERS
from sim.cassette.session import RecordedSession, RecordedTool, echoed_results
from sim.cassette.writer import exchange_from_vcr
from sim.core.calls import CallRef, keyed
from sim.core.events import RunEvent, ToolCallFinished
from sim.core.loop import AgentRunner, RunEnding
from sim.core.tools import ToolResult


class FreshStart:
    """A vcrpy persister that loads nothing (a recording starts empty) and saves nothing (the journal
    holds what was recorded)."""

    def load_cassette(self, cassette_path: str, serializer: Any) -> Any:
        """Nothing is loaded."""
        raise CassetteNotFoundError()

    def save_cassette(self, cassette_path: str, cassette_dict: Mapping[str, Any], serializer: Any) -> None:
        """Nothing is saved."""


class _Largest:
    """The largest request body so far: a run's history only grows, so it holds every echoed result."""

    def __init__(self) -> None:
        self.body: bytes | None = None

    def see(self, body: bytes | None) -> None:
        if body is not None and len(body) > len(self.body or b""):
            self.body = body


def journaled(cassette: Any, journal: Journal, largest: _Largest) -> None:
    """Make vcrpy's `cassette` hand each interaction it records (its filters applied) to `journal` instead
    of keeping it until the end."""
    keep = cassette.append
    seq = itertools.count()

    def append(request: Any, response: Any) -> None:
        keep(request, response)
        while cassette.data:
            exchange = exchange_from_vcr(*cassette.data.pop(0))
            largest.see(exchange.request_body)
            journal.append(next(seq), exchange)
        cassette.dirty = False

    cassette.append = append


def recording_vcr(persister: Any, record_mode: str = "all") -> vcr.VCR:
    """A vcrpy `VCR` that records with secret headers filtered and bodies decompressed."""
    recorder = vcr.VCR(
        record_mode=record_mode,
        decode_compressed_response=True,
        record_on_exception=False,
        filter_headers=sorted(SECRET_HEADERS),
    )
    recorder.register_persister(persister)
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
    max_completion_tokens: int | None,
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
    watching = runner.observer

    def observe(event: RunEvent) -> None:
        if isinstance(event, ToolCallFinished):
            results[(event.call.id, event.turn)] = event.result
        if watching is not None:
            watching(event)

    journal = Journal(path, secrets, keep=not force)
    runner.observer = observe
    largest = _Largest()
    try:
        with recording_vcr(FreshStart()).use_cassette(str(path)) as cassette:
            journaled(cassette, journal, largest)
            ending = asyncio.run(runner.run_to_end(prompt))
    except BaseException:
        if not journal.count:
            journal.path.unlink(missing_ok=True)
        journal.close()
        raise
    finally:
        runner.observer = watching
    echoed = echoed_results([largest.body], api)
    named = keyed({call: call for call in results})  # `id@turn` wherever the run reused an id
    session = RecordedSession(
        prompt=prompt,
        system_prompt=runner.system.content,
        model=model,
        api=api,
        chain=chain,
        max_turns=runner.max_turns,
        stream=stream,
        max_completion_tokens=max_completion_tokens,
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
