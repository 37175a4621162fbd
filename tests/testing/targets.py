"""Loops written on the raw OpenAI SDK for `sim fuzz --target` to judge: a careful one, one that retries
after an empty reply, and one per seeded bug. Each takes `(client, prompt)` as a user's loop would."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from openai import AsyncOpenAI, OpenAI

PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS: Any = [{"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}]
RESPONSES_TOOLS: Any = [{"type": "function", "name": "get_weather", "parameters": PARAMETERS}]


def weather(arguments: str) -> str:
    """The tool, careful: arguments it cannot read are a result, not an exception."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return "error: arguments are not JSON"
    if not isinstance(parsed, dict) or not isinstance(parsed.get("city"), str):
        return "error: arguments must be an object with a city"
    return f"{parsed['city']}: sunny"


def _ask(client: OpenAI, messages: list[Any]) -> Any:
    return client.chat.completions.create(model="m", messages=messages, tools=TOOLS).choices[0]


def careful(client: OpenAI, prompt: str, max_turns: int = 8) -> str | None:
    """Stops on a cut or filtered reply, answers every call (mistakes as results), stops at a text answer."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        choice = _ask(client, messages)
        if choice.finish_reason in ("length", "content_filter"):
            return None
        message = choice.message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": weather(call.function.arguments)}
            )
    return None


def retries_after_empty(client: OpenAI, prompt: str, max_turns: int = 8) -> str | None:
    """As careful, but an empty reply is asked again (as pydantic-ai does)."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        choice = _ask(client, messages)
        if choice.finish_reason in ("length", "content_filter"):
            return None
        message = choice.message
        if not message.tool_calls and not message.content:
            continue
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": weather(call.function.arguments)}
            )
    return None


def drops_invalid_json(client: OpenAI, prompt: str, max_turns: int = 8) -> str | None:
    """Bug (a): a call whose arguments are not JSON gets no tool message."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        message = _ask(client, messages).message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            try:
                json.loads(call.function.arguments)
            except ValueError:
                continue
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": weather(call.function.arguments)}
            )
    return None


def never_stops(client: OpenAI, prompt: str) -> None:
    """Bug (b): a reply without calls is asked again, forever."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    while True:
        message = _ask(client, messages).message
        if message.tool_calls:
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": weather(call.function.arguments)}
                )


def crashes_on_non_objects(client: OpenAI, prompt: str, max_turns: int = 8) -> str | None:
    """Bug (c): arguments that are JSON but not an object crash the tool."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        choice = _ask(client, messages)
        if choice.finish_reason in ("length", "content_filter"):
            return None
        message = choice.message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            try:
                arguments = json.loads(call.function.arguments)
            except ValueError:
                arguments = {}
            city = arguments.get("city")  # AttributeError on '["Paris"]'
            messages.append({"role": "tool", "tool_call_id": call.id, "content": f"{city}: sunny"})
    return None


def asks_after_the_answer(client: OpenAI, prompt: str, max_turns: int = 8) -> str | None:
    """Bug (d): one more request ("summarise") after the final answer."""
    answer = careful(client, prompt, max_turns)
    if answer:
        _ask(client, [{"role": "user", "content": f"Summarise: {answer}"}])
    return answer


def breaks_the_chain(client: OpenAI, prompt: str, max_turns: int = 8) -> str | None:
    """Bug (e): a chained Responses loop that always chains to its first response, not the latest."""
    first = client.responses.create(model="m", input=prompt, tools=RESPONSES_TOOLS)
    response = first
    for _ in range(max_turns):
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        outputs: Any = [
            {"type": "function_call_output", "call_id": call.call_id, "output": weather(call.arguments)}
            for call in calls
        ]
        response = client.responses.create(
            model="m", previous_response_id=first.id, input=outputs, tools=RESPONSES_TOOLS
        )
    return None


def chains_carefully(client: OpenAI, prompt: str, max_turns: int = 8) -> str | None:
    """The chained Responses loop done right: each request chains to the latest response."""
    response = client.responses.create(model="m", input=prompt, tools=RESPONSES_TOOLS)
    for _ in range(max_turns):
        if response.status == "incomplete":
            return None
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        outputs: Any = [
            {"type": "function_call_output", "call_id": call.call_id, "output": weather(call.arguments)}
            for call in calls
        ]
        response = client.responses.create(
            model="m", previous_response_id=response.id, input=outputs, tools=RESPONSES_TOOLS
        )
    return None


def chains_without_storing(client: OpenAI, prompt: str, max_turns: int = 8) -> str | None:
    """Bug (f): a chained Responses loop that asks the API not to store the responses it chains to (a
    common production failure: the live API answers `previous_response_not_found`)."""
    response = client.responses.create(model="m", input=prompt, tools=RESPONSES_TOOLS, store=False)
    for _ in range(max_turns):
        if response.status == "incomplete":
            return None
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        outputs: Any = [
            {"type": "function_call_output", "call_id": call.call_id, "output": weather(call.arguments)}
            for call in calls
        ]
        response = client.responses.create(
            model="m", previous_response_id=response.id, input=outputs, tools=RESPONSES_TOOLS, store=False
        )
    return None


def never_asks(client: OpenAI, prompt: str) -> str:
    """Miswired: never uses the client."""
    return "I did not ask."


def raises_at_once(client: OpenAI, prompt: str) -> str:
    """Miswired: raises before it asks."""
    raise RuntimeError("not configured")


def wrong_signature(first: object, second: object, third: object) -> None:
    """Miswired: takes three arguments."""


async def careful_async(client: AsyncOpenAI, prompt: str, max_turns: int = 8) -> str | None:
    """`careful` on the async client."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        completion = await client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        choice = completion.choices[0]
        if choice.finish_reason in ("length", "content_filter"):
            return None
        message = choice.message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": weather(call.function.arguments)}
            )
    return None


def without_prompt(client: OpenAI) -> str | None:
    """`careful` with its own prompt: a target may take the client alone."""
    return careful(client, "What is the weather in Paris?")


async def blocks_the_loop(client: AsyncOpenAI, prompt: str) -> None:
    """Bug: asks once, then blocks its event loop (a sync sleep in async code)."""
    await client.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}])
    time.sleep(3600)


async def swallows_cancellation(client: AsyncOpenAI, prompt: str) -> None:
    """Bug: asks once, then waits forever, catching every cancellation."""
    await client.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}])
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            continue


def exits(client: OpenAI, prompt: str) -> None:
    """Bug: asks once, then ends the process with status 3."""
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}])
    sys.exit(3)


def interrupts(client: OpenAI, prompt: str) -> None:
    """Bug: asks once, then raises KeyboardInterrupt, as if Ctrl-C were pressed."""
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}])
    raise KeyboardInterrupt


async def exits_async(client: AsyncOpenAI, prompt: str) -> None:
    """Bug: asks once, then ends the process with status 0."""
    await client.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}])
    sys.exit(0)
