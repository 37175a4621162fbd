"""The request path's cost per turn at a history of N turns: our adapters against plain `create()`, for
Chat Completions (`OpenAIChatModel` vs `chat.completions.create`) and the Responses API
(`OpenAIResponsesModel` vs `responses.create(input=[...])`).

Both paths use one real `AsyncOpenAI` client whose transport answers at once with a small completion
(in process, no sockets), so what is measured is the client side: building, encoding and sending the
body, and parsing the reply. A turn of history is an assistant tool call and its tool result. For each
N, the last 10 turns of a run that reaches N turns are timed; the adapter has seen the earlier turns, as
it would in a real run (that is what lets it encode only what is new). Medians of `--repeats` passes.

Run: python bench/sdk_path.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

import httpx2
from openai import AsyncOpenAI

from sim.adapters.openai_chat import OpenAIChatModel
from sim.adapters.openai_responses import OpenAIResponsesModel
from sim.core.messages import AssistantMessage, ChatMessage, HistoryView, SystemMessage, ToolCall, ToolMessage
from sim.core.messages import UserMessage as User
from sim.core.model import ModelClient, ModelRequest
from sim.core.tools import ToolRegistry
from sim.tools.shell import shell_tool
from sim.wire import Api
from sim.wire.chat.client import message_to_wire, tool_to_wire
from sim.wire.responses.client import tool_to_wire as responses_tool
from sim.wire.responses.items import message_to_items

SIZES = (10, 100, 1_000)
TIMED_TURNS = 10
REPLY = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
).encode()
RESPONSE = json.dumps(
    {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "gpt-4o-mini",
        "status": "completed",
        "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
        "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
    }
).encode()  # fmt: skip


def _answer(request: httpx2.Request) -> httpx2.Response:
    body = RESPONSE if request.url.path.endswith("/responses") else REPLY
    return httpx2.Response(200, content=body, headers={"content-type": "application/json"})


def client() -> AsyncOpenAI:
    transport = httpx2.MockTransport(_answer)
    return AsyncOpenAI(
        base_url="http://bench.test/v1",
        api_key="sk-bench",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=transport),
    )


def history(turns: int) -> list[ChatMessage]:
    messages: list[ChatMessage] = [User(content="Find the failing test and fix it.")]
    for i in range(turns):
        arguments = json.dumps({"command": f"pytest tests/test_module_{i}.py -x -q"})
        messages.append(
            AssistantMessage(tool_calls=(ToolCall(id=f"call_{i:05d}", name="shell", arguments=arguments),))
        )
        messages.append(
            ToolMessage(tool_call_id=f"call_{i:05d}", content=f"{i} passed, 0 failed in 0.{i % 97}s " * 3)
        )
    return messages


async def time_adapter(turns: int, api: Api) -> float:
    system = SystemMessage(content="You are a coding agent.")
    messages = history(turns)
    tools = ToolRegistry([shell_tool()]).snapshot().specs
    model: ModelClient = (
        OpenAIChatModel(client(), "gpt-4o-mini")
        if api is Api.chat
        else OpenAIResponsesModel(client(), "gpt-4o-mini")
    )
    first_timed = len(messages) - 2 * TIMED_TURNS
    for length in range(1, first_timed, 2):  # the run so far, as the adapter would have seen it
        await model.complete(ModelRequest(HistoryView(system, messages, length), tools))
    started = time.perf_counter()
    for length in range(first_timed, len(messages) + 1, 2):
        await model.complete(ModelRequest(HistoryView(system, messages, length), tools))
    return (time.perf_counter() - started) / TIMED_TURNS * 1e6


async def time_create(turns: int, api: Api) -> float:
    """Plain `create()` with the history kept as the API's own dicts, as a hand-written loop keeps it."""
    system = SystemMessage(content="You are a coding agent.")
    specs = ToolRegistry([shell_tool()]).snapshot().specs
    sdk = client()
    if api is Api.chat:
        wire: list[Any] = [message_to_wire(m) for m in [system, *history(turns)]]
        tools: Any = [tool_to_wire(spec) for spec in specs]
        first_timed = len(wire) - 2 * TIMED_TURNS
        started = time.perf_counter()
        for length in range(first_timed, len(wire) + 1, 2):
            await sdk.chat.completions.create(model="gpt-4o-mini", messages=wire[:length], tools=tools)
        return (time.perf_counter() - started) / TIMED_TURNS * 1e6
    items: list[Any] = [item for m in history(turns) for item in message_to_items(m)]
    flat: Any = [responses_tool(spec) for spec in specs]
    first_timed = len(items) - 2 * TIMED_TURNS
    started = time.perf_counter()
    for length in range(first_timed, len(items) + 1, 2):
        await sdk.responses.create(
            model="gpt-4o-mini", instructions=system.content, input=items[:length], tools=flat
        )
    return (time.perf_counter() - started) / TIMED_TURNS * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    print("| API | history N turns | our adapter µs/turn | create() µs/turn | speed-up |")
    print("|---|---:|---:|---:|---:|")
    for api in Api:
        for turns in SIZES:
            ours = statistics.median(asyncio.run(time_adapter(turns, api)) for _ in range(options.repeats))
            theirs = statistics.median(asyncio.run(time_create(turns, api)) for _ in range(options.repeats))
            print(f"| {api.value} | {turns:,} | {ours:,.0f} | {theirs:,.0f} | {theirs / ours:.1f}x |")


if __name__ == "__main__":
    main()
