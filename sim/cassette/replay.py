"""Replaying a recorded session offline: the real loop and SDK adapter against the recorded interactions.

Requests are answered by a `RecordingAnswerer` (method, path and canonical JSON body, through an index)
through the host's in-process transport, as `sim serve CASSETTE` answers them on a port; every tool call
is answered from the recording, so no command runs and no approval is asked.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
from pydantic import ValidationError

from sim.adapters.connect import connect_model
from sim.cassette.compact import ONLY_COMPACT
from sim.cassette.reader import Cassette, RecordedInteraction, read_cassette
from sim.cassette.recording_answerer import RecordingAnswerer, recording_host
from sim.cassette.session import RecordedSession, echoed_results, result_from_text
from sim.core.approval import AllowAllApprover
from sim.core.calls import call_key, find
from sim.core.errors import CassetteError, ConfigurationError
from sim.core.loop import AgentRunner
from sim.core.outcome import Outcome
from sim.core.scripted import ScriptedToolResults
from sim.core.tools import AnyArguments, ToolDefinition, ToolRegistry, ToolResult
from sim.core.transcript import Line, TranscriptRecorder, prompt_line
from sim.host.transport import transport
from sim.wire.registry import ENDPOINTS


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """How a replay went: passed when `problems` is empty."""

    path: str
    outcome: Outcome | None
    recorded_outcome: Outcome | None
    final_text: str | None
    turns: int
    interactions: int
    problems: tuple[str, ...]
    transcript: tuple[Line, ...]
    seconds: float = 0.0
    divergence: tuple[str, str, str] | None = None
    """The first request that matched nothing: where it differs, the recorded body, the body now."""

    @property
    def passed(self) -> bool:
        """Whether the replay did what the recording did, using every recorded interaction."""
        return not self.problems


_SIM_KEY = b"\nsim:"
_CHUNK = 1 << 20


def has_sim_block(path: Path) -> bool:
    """Whether the YAML file at `path` has a top-level `sim:` key (what `sim record` writes, and what a
    replay needs; one that says only that the file is compact is not a session's), found by scanning its
    bytes rather than parsing them; False where it cannot be read."""
    try:
        with path.open("rb") as file:
            tail = b"\n"
            while chunk := file.read(_CHUNK):
                if (found := (tail + chunk).find(_SIM_KEY)) >= 0:
                    file.seek(file.tell() - len(chunk) - len(tail) + found + 1)
                    return not ONLY_COMPACT.match(file.read(64))
                tail = chunk[-len(_SIM_KEY) :]
    except OSError:
        return False
    return False


def recorded_session(cassette: Cassette) -> RecordedSession:
    """The cassette's `sim:` block; `CassetteError` when it has none or it is not readable."""
    if cassette.sim is None:
        raise CassetteError(
            f"{cassette.path}: no sim: block: `sim replay` replays sim's own agent as `sim record` recorded"
            " it; replay the program that made this recording with `sim serve FILE` (or the pytest marker),"
            " or make it a scenario with `sim convert`"
        )
    try:
        return RecordedSession.model_validate(cassette.sim)
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise CassetteError(
            f"{cassette.path}: the sim: block is not readable: {where}: {problem['msg']}"
        ) from None


@dataclass(frozen=True, slots=True)
class Replay:
    """A recorded session set up to be replayed: the real loop, talking to the recording."""

    session: RecordedSession
    chats: list[RecordedInteraction]
    answerer: RecordingAnswerer
    runner: AgentRunner
    recorder: TranscriptRecorder


def replayable(cassette: Cassette) -> Replay:
    """Everything replay needs, set up; `CassetteError` saying why when the cassette cannot be replayed
    (`sim check` calls it too, so that it refuses exactly what replay refuses)."""
    session = recorded_session(cassette)
    endpoint = ENDPOINTS[session.api]
    chats = [interaction for interaction in cassette.interactions if interaction.calls(endpoint)]
    if not chats:
        raise CassetteError(f"{cassette.path}: no {endpoint} interactions to replay")
    answerer = RecordingAnswerer(chats)
    try:
        runner, recorder = _runner(cassette.path, session, chats, answerer)
    except ConfigurationError as error:
        raise CassetteError(f"{cassette.path}: the sim: block cannot set up a run: {error}") from None
    return Replay(session, chats, answerer, runner, recorder)


def recorded_results(session: RecordedSession, chats: Sequence[RecordedInteraction]) -> dict[str, ToolResult]:
    """Every tool result of the recording: those the requests echo, and those the `sim:` block keeps."""
    # only the largest body is read: a compact cassette's others are never rebuilt
    largest = max(chats, key=lambda interaction: interaction.request.size, default=None)
    echoed = echoed_results([largest.request.body] if largest else [], session.api)
    results = {call_key(*call): result_from_text(text) for call, text in echoed.items()}
    results.update(session.tool_results)
    return results


async def replay_cassette(path: Path) -> ReplayReport:
    """Replay a cassette written by `sim record`, offline, and compare the run with the recording."""
    started = time.perf_counter()
    replay = replayable(read_cassette(path))
    session, chats, answerer, recorder = replay.session, replay.chats, replay.answerer, replay.recorder
    ending = await replay.runner.run_to_end(session.prompt)
    final_text, turns, outcome = ending.final_text, ending.turns, ending.outcome
    problems = [problem.message for problem in answerer.problems]
    if not problems:
        for field, recorded, now in (
            ("outcome", session.outcome, outcome),
            ("final_text", session.final_text, final_text),
            ("turns", session.turns, turns),
        ):
            if recorded != now:
                problems.append(f"{field}: recorded {json.dumps(recorded)} != now {json.dumps(now)}")
        for key, recorded_result in session.tool_results.items():
            event = find(recorder.tool_results, key)
            now_content = event.result.content if event else None
            if now_content != recorded_result.content:
                recorded_text, now_text = json.dumps(recorded_result.content), json.dumps(now_content)
                problems.append(f"tool_results.{key}: recorded {recorded_text} != now {now_text}")
    if unplayed := len(answerer.unplayed()):
        problems.append(
            f"cassette only partly played: {unplayed} of {len(chats)} interactions never requested"
        )
    miss = answerer.first_miss()
    return ReplayReport(
        path=str(path),
        outcome=outcome,
        recorded_outcome=session.outcome,
        final_text=final_text,
        turns=turns,
        interactions=len(chats),
        problems=tuple(problems),
        transcript=(prompt_line(session.prompt), *recorder.lines),
        seconds=time.perf_counter() - started,
        divergence=None if miss is None else (miss.where, miss.recorded_body, miss.body_now),
    )


def _runner(
    path: Path, session: RecordedSession, chats: list[RecordedInteraction], answerer: RecordingAnswerer
) -> tuple[AgentRunner, TranscriptRecorder]:
    """The real loop and SDK adapter set up as the recording says, answered by `answerer` through the
    host in process."""
    uri = urlsplit(chats[0].request.uri)
    base = uri.path.rstrip("/").removesuffix(ENDPOINTS[session.api])
    model = connect_model(
        session.api,
        base_url=f"{uri.scheme}://{uri.netloc}{base}",
        api_key="sim-replay",
        model=session.model,
        stream=session.stream,
        max_tokens=session.max_tokens,
        chain=session.chain,
        http_client=httpx2.AsyncClient(transport=transport(recording_host(answerer))),
    )
    answers = ScriptedToolResults(recorded_results(session, chats))
    tools = ToolRegistry(
        [ToolDefinition(t.name, t.description, AnyArguments, "read", answers.answer, parameters=t.parameters)
         for t in session.tools]
    )  # fmt: skip
    recorder = TranscriptRecorder()
    runner = AgentRunner(
        model,
        tools,
        AllowAllApprover(),
        workspace=path.parent,
        system_prompt=session.system_prompt,
        max_turns=session.max_turns,
        observer=recorder,
    )
    return runner, recorder


async def replay_file(path: Path) -> ReplayReport:
    """Replay one cassette; one that cannot be replayed at all is a failed report saying why (as
    `play_file` does for scenarios)."""
    try:
        return await replay_cassette(path)
    except CassetteError as error:
        return ReplayReport(str(path), None, None, None, 0, 0, (str(error),), ())
