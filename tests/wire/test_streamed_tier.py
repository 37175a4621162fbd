"""The service tier a streamed Responses API response says, as real recordings show it: `response.created`
and `response.in_progress` say the tier the request asked for (`auto` when it asked none), and only the
finished response says the tier that served it (`default` for `auto`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.host.in_process import post, simulator

RECORDINGS = Path(__file__).resolve().parents[2] / ".." / "shared" / "real-cassettes" / "responses"
RECORDED = (
    "mirascope__responses_parallel_tool_calls__stream_followup.yaml",
    "pydantic-ai__responses_reasoning_tool_call__stream_reasoning_followup.yaml",
)
SCRIPT = "prompt: p\nreplies:\n  - {content: hi}\n"


def _tiers(sent: str) -> list[tuple[str, Any]]:
    events = [json.loads(line[6:]) for line in sent.split("\n") if line.strip().startswith("data: {")]
    return [(e["type"], e["response"].get("service_tier")) for e in events if "response" in e]


@pytest.mark.parametrize("recording", RECORDED)
def test_the_recordings_say_auto_until_the_response_is_done(recording: str) -> None:
    path = RECORDINGS / recording
    if not path.exists():
        pytest.skip(f"the real recording {recording} is not here (../shared is not checked out)")
    interactions = yaml.safe_load(path.read_text())["interactions"]
    checked = 0
    for interaction in interactions:
        request = interaction["request"]
        asked = request.get("parsed_body") or json.loads(request["body"])
        said = "\n".join(line.strip() for line in interaction["response"]["body"]["string"].split("\n"))
        if "service_tier" in asked or "response.created" not in said:
            continue
        assert _tiers(said) == [("response.created", "auto"), ("response.in_progress", "auto"),
                                ("response.completed", "default")]  # fmt: skip
        checked += 1
    assert checked


@pytest.mark.parametrize(
    ("asked", "streamed"),
    [(None, "auto"), ("auto", "auto"), ("default", "default"), ("flex", "flex"), ("priority", "priority")],
)
def test_sim_streams_the_tier_asked_until_the_response_is_done(
    tmp_path: Path, asked: str | None, streamed: str
) -> None:
    """Before: `default` from `response.created` on, for a request that asked none or `auto`."""
    body: dict[str, Any] = {"model": "m", "input": "p", "stream": True}
    if asked is not None:
        body["service_tier"] = asked
    (response,) = post(simulator(tmp_path, SCRIPT), body, path="/v1/responses")
    served = "default" if streamed == "auto" else streamed
    assert _tiers(response.text) == [("response.created", streamed), ("response.in_progress", streamed),
                                     ("response.completed", served)]  # fmt: skip
    (whole,) = post(
        simulator(tmp_path, SCRIPT, file="b.yaml"), {**body, "stream": False}, path="/v1/responses"
    )
    assert whole.json()["service_tier"] == served
