"""`record_run` in process, against a small HTTP server on 127.0.0.1: the runner is left as it was given
(its own observer sees the whole run), and each interaction goes to the journal as it finishes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sim.adapters.connect import connect_model
from sim.cassette.journal import Journal, journal_path
from sim.cassette.recorder import record_run
from sim.core.approval import AllowAllApprover
from sim.core.events import RunEnded, RunEvent, ToolCallFinished
from sim.core.loop import AgentRunner
from sim.core.tools import ToolRegistry
from sim.tools.shell import shell_tool
from sim.wire import Api
from tests.live_api import live_api

KEY = "sk-RECOGNISABLE-key-5f2a9c7e31d4"
CALL = {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": '{"command": "echo 42"}'}}


def completion(message: dict[str, Any], finish_reason: str) -> bytes:
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    reply = {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice]}
    return json.dumps({**reply, "usage": usage}).encode()


@pytest.fixture
def base_url() -> Iterator[str]:
    replies = iter([completion({"content": None, "tool_calls": [CALL]}, "tool_calls"),
                    completion({"content": "42"}, "stop")])  # fmt: skip
    with live_api(lambda: next(replies)) as (origin, _):
        yield f"{origin}/v1"


def test_the_runner_keeps_its_observer_and_each_exchange_is_journaled_as_it_finishes(
    tmp_path: Path, base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    journaled: list[int] = []
    append = Journal.append

    def spy(journal: Journal, seq: int, exchange: Any) -> bool:
        journaled.append(seq)
        return append(journal, seq, exchange)

    monkeypatch.setattr(Journal, "append", spy)
    events: list[RunEvent] = []
    model = connect_model(Api.chat, base_url=base_url, api_key=KEY, model="m")
    observer = events.append
    runner = AgentRunner(model, ToolRegistry([shell_tool()]), AllowAllApprover(), tmp_path, observer=observer)
    cassette = tmp_path / "run.yaml"

    ending = record_run(cassette, runner, "say 42", model="m", stream=False, max_tokens=64, secrets=(KEY,))

    assert ending.final_text == "42"
    assert runner.observer is observer
    assert [event.turn for event in events if isinstance(event, ToolCallFinished)] == [1]
    assert isinstance(events[-1], RunEnded) and events[-1].result is not None
    assert journaled == [0, 1]
    written = yaml.safe_load(cassette.read_text())
    assert [i["request"]["uri"] for i in written["interactions"]] == [f"{base_url}/chat/completions"] * 2
    assert written["sim"]["max_tokens"] == 64 and written["sim"]["turns"] == 2
    assert KEY not in cassette.read_text()
    assert not journal_path(cassette).exists() and not list(tmp_path.glob(".run.yaml.*"))  # nor a temporary
