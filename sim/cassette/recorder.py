"""Recording a live run with vcrpy: every HTTP interaction, then the whole session written at once."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import vcr
from vcr.persisters.filesystem import CassetteNotFoundError

from sim.adapters.apis import Api
from sim.cassette.secrets import SECRET_HEADERS
from sim.cassette.session import RecordedSession, RecordedTool, echoed_results
from sim.cassette.writer import exchanges_from_vcr, write_cassette
from sim.core.calls import CallRef, keyed
from sim.core.events import RunEvent, ToolCallFinished
from sim.core.loop import AgentRunner, RunEnding
from sim.core.tools import ToolResult


class MemoryPersister:
    """A vcrpy persister that loads nothing and keeps what vcrpy saves in memory."""

    def __init__(self) -> None:
        self.saved: Mapping[str, Any] | None = None

    def load_cassette(self, cassette_path: str, serializer: Any) -> Any:
        """Nothing is loaded: a recording starts empty."""
        raise CassetteNotFoundError()

    def save_cassette(self, cassette_path: str, cassette_dict: Mapping[str, Any], serializer: Any) -> None:
        """Keep the interactions; sim writes the file itself."""
        self.saved = cassette_dict


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
) -> RunEnding:
    """Run `prompt` on `runner` while vcrpy records; then write the cassette, atomically.

    A run that raises an `AgentError` is recorded too (its outcome is in the `sim:` block); anything else
    (a crash, Ctrl-C) leaves no file, or the previous one untouched.
    """
    results: dict[CallRef, ToolResult] = {}
    watching = runner.observer

    def observe(event: RunEvent) -> None:
        if isinstance(event, ToolCallFinished):
            results[(event.call.id, event.turn)] = event.result
        if watching is not None:
            watching(event)

    runner.observer = observe
    persister = MemoryPersister()
    try:
        with recording_vcr(persister).use_cassette(str(path)):
            ending = asyncio.run(runner.run_to_end(prompt))
    finally:
        runner.observer = watching
    exchanges = exchanges_from_vcr(persister.saved or {"requests": [], "responses": []})
    echoed = echoed_results((exchange.request_body for exchange in exchanges), api)
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
    write_cassette(path, exchanges, sim=session.model_dump(mode="json"), secrets=secrets, compact=compact)
    return ending
