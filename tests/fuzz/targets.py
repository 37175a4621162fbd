"""Loops written on the raw OpenAI SDK for `sim fuzz --target` to judge: a careful one, one that retries
after an empty reply, and one per seeded bug. Each takes `(client, prompt)` as a user's loop would."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import openai
from openai import AsyncOpenAI, OpenAI
from pydantic import BaseModel

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


def chains_carefully(client: OpenAI, prompt: str) -> str | None:
    """The chained Responses loop done right: each request chains to the latest response."""
    return _careful_responses(client, prompt)


def chains_without_storing(client: OpenAI, prompt: str) -> str | None:
    """Bug (f): a chained Responses loop that asks the API not to store the responses it chains to (a
    common production failure: the live API answers `previous_response_not_found`)."""
    return _careful_responses(client, prompt, asked=lambda turn: {"store": False})


def _careful_responses(
    client: OpenAI,
    prompt: str,
    *,
    asked: Any = lambda turn: {},
    result: Any = lambda call: weather(call.arguments),
    tools: Any = RESPONSES_TOOLS,
    max_turns: int = 8,
) -> str | None:
    """The careful chained Responses loop (stops at `incomplete`, answers every call, chains to the latest
    response) with hooks: the parameters `asked(turn)` adds to a request (turn 0 is the first), and the
    `result(call)` of each call."""
    response = client.responses.create(model="m", input=prompt, tools=tools, **asked(0))
    for turn in range(1, max_turns + 1):
        if response.status == "incomplete":
            return None
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        outputs: Any = [
            {"type": "function_call_output", "call_id": c.call_id, "output": result(c)} for c in calls
        ]
        response = client.responses.create(
            model="m", previous_response_id=response.id, input=outputs, tools=tools, **asked(turn)
        )
    return None


STRICT_PARAMETERS = {**PARAMETERS, "additionalProperties": False}
STRICT_TOOLS: Any = [
    {"type": "function", "function": {"name": "get_weather", "parameters": STRICT_PARAMETERS, "strict": True}}
]
STRICT_RESPONSES_TOOLS: Any = [  # `strict` left out: the Responses API makes a function strict by default
    {"type": "function", "name": "get_weather", "parameters": STRICT_PARAMETERS}
]
TWO_TOOLS: Any = [
    *TOOLS,
    {"type": "function", "function": {"name": "get_time", "parameters": PARAMETERS}},
]


def _careful_chat(
    client: OpenAI,
    prompt: str,
    *,
    asked: Any = lambda turn: {},
    check: Any = lambda turn, choice: None,
    result: Any = lambda call: weather(call.function.arguments),
    tools: Any = TOOLS,
    max_turns: int = 8,
) -> str | None:
    """The careful Chat loop (stops at `length` and `content_filter`, answers every call) with hooks: the
    parameters `asked(turn)` adds to a request, `check(turn, choice)` that raises where a guarantee did not
    hold, and the `result(call)` of each call (None: the call gets no tool message)."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for turn in range(max_turns):
        choice = client.chat.completions.create(model="m", messages=messages, tools=tools, **asked(turn))
        choice = choice.choices[0]
        if choice.finish_reason in ("length", "content_filter"):
            return None
        check(turn, choice)
        messages.append(choice.message.model_dump(exclude_none=True))
        if not choice.message.tool_calls:
            return choice.message.content
        for call in choice.message.tool_calls:
            if (content := result(call)) is not None:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    return None


UNMEETABLE = {"type": "string", "not": {"type": "string"}}
UNMEETABLE_TOOLS: Any = [{"type": "function", "function": {"name": "get_code", "parameters": {
    "type": "object", "properties": {"code": UNMEETABLE}, "required": ["code"]}}}]  # fmt: skip
"""A tool whose schema no value meets (a string that is not a string)."""


def offers_an_unmeetable_schema(client: OpenAI, prompt: str) -> str | None:
    """The careful loop, offering a tool whose schema no arguments can meet."""
    return _careful_chat(client, prompt, tools=UNMEETABLE_TOOLS, result=lambda call: "ok")


def _first(guarantee: dict[str, Any]) -> Any:
    """`asked` for a guarantee sent on the first request only (as openai-agents resets `tool_choice`)."""
    return lambda turn: guarantee if turn == 0 else {}


def requires_a_tool(client: OpenAI, prompt: str) -> str | None:
    """Relies on `tool_choice: required` (its first reply calls a tool), as openai-agents does before it
    resets the choice."""

    def check(turn: int, choice: Any) -> None:
        if turn == 0 and not choice.message.tool_calls:
            raise AssertionError("tool_choice said a tool must be called")

    return _careful_chat(client, prompt, asked=_first({"tool_choice": "required"}), check=check)


def _calls_only(name: str, why: str) -> Any:
    def check(turn: int, choice: Any) -> None:
        calls = choice.message.tool_calls
        if turn == 0 and (not calls or {c.function.name for c in calls} != {name}):
            raise AssertionError(why)

    return check


def names_its_tool(client: OpenAI, prompt: str) -> str | None:
    """Relies on a named `tool_choice`: its first reply calls that function, and only it."""
    choice = {"type": "function", "function": {"name": "get_time"}}
    check = _calls_only("get_time", "tool_choice named get_time")
    return _careful_chat(client, prompt, asked=_first({"tool_choice": choice}), check=check, tools=TWO_TOOLS)


def allows_one_tool(client: OpenAI, prompt: str) -> str | None:
    """Relies on `allowed_tools` (mode required): its first reply calls only the allowed function."""
    allowed = [{"type": "function", "function": {"name": "get_weather"}}]
    choice = {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": allowed}}
    check = _calls_only("get_weather", "allowed_tools allowed get_weather only")
    return _careful_chat(client, prompt, asked=_first({"tool_choice": choice}), check=check, tools=TWO_TOOLS)


def one_call_at_a_time(client: OpenAI, prompt: str) -> str | None:
    """Relies on `parallel_tool_calls: false`: never more than one call in a reply."""

    def check(turn: int, choice: Any) -> None:
        if len(choice.message.tool_calls or ()) > 1:
            raise AssertionError("parallel_tool_calls was false")

    return _careful_chat(client, prompt, asked=lambda turn: {"parallel_tool_calls": False}, check=check)


ONE_CALL_AT_A_TIME = {"parallel_tool_calls": False}
"""What a loop that trusts strict arguments must send: the API guarantees them only one call at a time
("Structured Outputs is not compatible with parallel function calls. When a parallel function call is
generated, it may not match supplied schemas. Set parallel_tool_calls: false ...")."""


def trusts_strict_arguments(client: OpenAI, prompt: str) -> str | None:
    """Relies on a strict tool (Structured Outputs) with `parallel_tool_calls: false`: the arguments of a
    call that finished are the schema's, read without checks; a cut reply is not read."""

    def unchecked(call: Any) -> str:
        return f"{json.loads(call.function.arguments)['city']}: sunny"  # the schema says so

    return _careful_chat(
        client, prompt, result=unchecked, tools=STRICT_TOOLS, asked=lambda turn: ONE_CALL_AT_A_TIME
    )


def trusts_strict_arguments_in_parallel(client: OpenAI, prompt: str) -> str | None:
    """Bug: relies on a strict tool's arguments while leaving parallel calls on, where the API does not
    guarantee them (`ONE_CALL_AT_A_TIME`)."""

    def unchecked(call: Any) -> str:
        return f"{json.loads(call.function.arguments)['city']}: sunny"

    return _careful_chat(client, prompt, result=unchecked, tools=STRICT_TOOLS)


def _trusting_responses(client: OpenAI, prompt: str, tools: Any, read: Callable[[Any], str]) -> str | None:
    """A Responses loop that reads each finished call's arguments with `read`, unchecked, asking for one call
    at a time (`ONE_CALL_AT_A_TIME`: the API guarantees strict arguments only then)."""
    return _careful_responses(
        client, prompt, tools=tools, result=lambda call: read(json.loads(call.arguments)),
        asked=lambda turn: ONE_CALL_AT_A_TIME,
    )  # fmt: skip


def trusts_strict_responses_arguments(client: OpenAI, prompt: str) -> str | None:
    """The same over the Responses API, whose functions are made strict where they leave `strict` out."""
    return _trusting_responses(client, prompt, STRICT_RESPONSES_TOOLS, lambda arguments: arguments["city"])


OPTIONAL_PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
    "required": ["city"],
}


def trusts_optional_responses_arguments(client: OpenAI, prompt: str) -> str | None:
    """Reads an optional property unchecked: the Responses API, making the function strict by default,
    makes every property required, so the model always sends it."""
    tools = [{"type": "function", "name": "get_weather", "parameters": OPTIONAL_PARAMETERS}]
    return _trusting_responses(client, prompt, tools, lambda given: f"{given['city']} in {given['unit']}")


def trusts_open_responses_arguments(client: OpenAI, prompt: str) -> str | None:
    """Bug: trusts a Responses function whose schema allows additional properties, so cannot be made strict:
    the API calls it best-effort, and its arguments may not be JSON."""
    open_parameters = {**PARAMETERS, "additionalProperties": True}
    tools = [{"type": "function", "name": "get_weather", "parameters": open_parameters}]
    return _trusting_responses(client, prompt, tools, lambda arguments: str(arguments["city"]))


def hands_off(client: OpenAI, prompt: str, max_turns: int = 8) -> str | None:
    """After the first reply, hands off to another agent, as openai-agents does: a new system prompt and
    other tools, the conversation kept whole."""
    triage: Any = [{"role": "system", "content": "You triage."}, {"role": "user", "content": prompt}]
    messages = triage
    tools: Any = TWO_TOOLS
    for turn in range(max_turns):
        choice = client.chat.completions.create(model="m", messages=messages, tools=tools).choices[0]
        if choice.finish_reason in ("length", "content_filter"):
            return None
        messages.append(choice.message.model_dump(exclude_none=True))
        if turn == 0:  # the handoff: the specialist's instructions and tools, the same conversation
            messages = [{"role": "system", "content": "You know the weather."}, *messages[1:]]
            tools = TOOLS
        if not choice.message.tool_calls:
            return choice.message.content
        for call in choice.message.tool_calls:
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": weather(call.function.arguments)}
            )
    return None


def responses_hand_off(client: OpenAI, prompt: str) -> str | None:
    """The same over the Responses API, chained: each request after the first names new `instructions`
    ("not carried over from the previous response", the API says, "to swap out system messages")."""
    return _careful_responses(
        client,
        prompt,
        asked=lambda turn: {"instructions": "Triage." if turn == 0 else f"Specialist {turn - 1}."},
    )


def reads_logprobs(client: OpenAI, prompt: str) -> str | None:
    """Asks for log probabilities and reads them off the answer, as a confidence check does."""

    def check(turn: int, choice: Any) -> None:
        answer = choice.message.content if not choice.message.tool_calls else None
        if answer and not (choice.logprobs and choice.logprobs.content):
            raise AssertionError("logprobs were asked for")

    return _careful_chat(
        client, prompt, asked=lambda turn: {"logprobs": True, "top_logprobs": 2}, check=check
    )


def asks_for_two_choices_later(client: OpenAI, prompt: str) -> str | None:
    """Careful, but its follow-ups ask for two choices (`n: 2`), which the API serves and sim does not: the
    runs that get that far end there, not simulated; a bug after them would go unseen, not be invented."""
    return _careful_chat(client, prompt, asked=lambda turn: {"n": 2} if turn else {})


def careful_but_drops_invalid_json(client: OpenAI, prompt: str) -> str | None:
    """Bug (g): careful about finish reasons, but a call whose arguments are not JSON gets no tool message
    (the function-calling guide warns that a non-strict tool's arguments may not be valid JSON)."""

    def unless_invalid(call: Any) -> str | None:
        try:
            json.loads(call.function.arguments)
        except ValueError:
            return None
        return weather(call.function.arguments)

    return _careful_chat(client, prompt, result=unless_invalid)


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


def chatty(client: OpenAI, prompt: str) -> str | None:
    """Careful, but prints as some libraries do (a banner, through `print` and straight to file 1)."""
    print("Give Feedback / Get Help: a banner on standard output")
    os.write(1, b"and one written to file 1\n")
    return careful(client, prompt)


def ends_the_process(client: OpenAI, prompt: str) -> None:
    """Bug: asks once, then ends the process at once, status 0 (no exception, no cleanup)."""
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}])
    os._exit(0)


def kills_the_process(client: OpenAI, prompt: str) -> None:
    """Bug: asks once, then kills its own process."""
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}])
    os.kill(os.getpid(), signal.SIGKILL)


_misbehaved: list[int] = []


def misbehaves(client: OpenAI, prompt: str) -> str | None:
    """Asks again after the final answer (found in a few runs), and, once per process: leaves a thread running
    that never ends (not a daemon), starts a child that outlives it (its pid written to the file
    `SIM_TEST_CHILD_PID` names), moves to the folder `SIM_TEST_ELSEWHERE` names and closes standard output."""
    if not _misbehaved:
        threading.Thread(target=threading.Event().wait, name="never-ends").start()
        child = subprocess.Popen(["sleep", "600"])
        _misbehaved.append(child.pid)
        with open(os.environ["SIM_TEST_CHILD_PID"], "w") as file:
            file.write(str(child.pid))
        os.chdir(os.environ["SIM_TEST_ELSEWHERE"])
        sys.stdout.close()
    return asks_after_the_answer(client, prompt)


def sleeps(client: OpenAI, prompt: str) -> None:
    """Bug: never returns, and asks nothing first."""
    time.sleep(3600)


WEB_SEARCH_TOOLS: Any = [{"type": "web_search"}, *RESPONSES_TOOLS]
"""A hosted web search offered beside the function."""


def _searching(
    client: OpenAI, prompt: str, read: Callable[[Any], tuple[str | None, list[Any]]], max_turns: int = 8
) -> str | None:
    """A stateless Responses loop offering web search and a function: it sends back every output item
    (hosted ones too) and answers the calls `read(response)` finds, until `read` finds an answer."""
    items: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        response = client.responses.create(
            model="m", input=items, tools=WEB_SEARCH_TOOLS, include=["web_search_call.action.sources"]
        )
        if response.status == "incomplete":
            return None
        items += [item.model_dump(exclude_none=True) for item in response.output]
        answer, calls = read(response)
        if not calls:
            return answer
        items += [{"type": "function_call_output", "call_id": c.call_id, "output": weather(c.arguments)}
                  for c in calls]  # fmt: skip
    return None


def searches_the_web(client: OpenAI, prompt: str) -> str | None:
    """Careful: finds the calls among the output items by their type, reads the text with `output_text`."""
    return _searching(
        client, prompt, lambda r: (r.output_text, [i for i in r.output if i.type == "function_call"])
    )


def _first_item_is_the_message(response: Any) -> tuple[str | None, list[Any]]:
    first = response.output[0]
    if first.type == "message":
        return getattr(first.content[0], "text", None), []
    return None, list(response.output)  # anything else: every item a function call


def trusts_the_first_item(client: OpenAI, prompt: str) -> str | None:
    """Bug: takes `output[0]` for the message, and every item of a reply that does not start with one for a
    function call (a web search's item comes first, before the text or the calls)."""
    return _searching(client, prompt, _first_item_is_the_message)


def asks_an_mcp_server(client: OpenAI, prompt: str) -> str | None:
    """Offers an MCP server: what the API replies (the server's tool list first) sim cannot make up."""
    tools: Any = [{"type": "mcp", "server_label": "wiki", "server_url": "https://mcp.example.com/sse",
                   "require_approval": "never"}, *RESPONSES_TOOLS]  # fmt: skip
    response = client.responses.create(model="m", input=prompt, tools=tools)
    return response.output_text


class WeatherAsked(BaseModel):
    """A strict function's arguments, as `openai.pydantic_function_tool` offers them."""

    city: str


class Forecast(BaseModel):
    """The structured answer the `.parse()` loops ask for."""

    city: str
    summary: str


FORECAST_TEXT: Any = {"type": "json_schema", "json_schema": {"name": "forecast", "schema": {
    "type": "object", "properties": {"city": {"type": "string"}, "summary": {"type": "string"}},
    "required": ["city", "summary"]}}}  # fmt: skip
"""`Forecast` as a format that is not strict: the API does not hold the text to it."""


def parses_chat(client: OpenAI, prompt: str, max_turns: int = 8) -> str | None:
    """Careful `.parse()` loop over Chat: a strict tool and a strict format, so a finished call's arguments
    and a finished text are read without checks; a length cut and a content filter (which `.parse()`
    raises) and a refusal end the run."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    tools = [openai.pydantic_function_tool(WeatherAsked, name="get_weather")]
    for _ in range(max_turns):
        try:
            completion = client.chat.completions.parse(
                model="m", messages=messages, tools=tools, response_format=Forecast
            )
        except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError):
            return None
        message = completion.choices[0].message
        if message.refusal is not None:
            return None
        calls = message.tool_calls or []
        messages.append({"role": "assistant", "content": message.content, "tool_calls": [
            {"id": c.id, "type": "function", "function": {"name": c.function.name,
                                                          "arguments": c.function.arguments}}
            for c in calls]} if calls else {"role": "assistant", "content": message.content})  # fmt: skip
        if not calls:
            return None if message.parsed is None else message.parsed.summary  # trusted: the schema's
        for call in calls:
            asked = call.function.parsed_arguments
            assert isinstance(asked, WeatherAsked)  # trusted: a strict function's finished arguments
            messages.append({"role": "tool", "tool_call_id": call.id, "content": f"{asked.city}: sunny"})
    return None


STRICT_WEATHER: Any = [{"type": "function", "name": "get_weather", "strict": True, "parameters": {
    **PARAMETERS, "additionalProperties": False}}]  # fmt: skip


def parses_responses(client: OpenAI, prompt: str, max_turns: int = 8) -> str | None:
    """Careful `.parse()` loop over the Responses API: a strict function and a strict `text_format`; an
    incomplete response (cut at the token limit: its text or arguments may not parse, so it is looked at
    before it is parsed), a refusal and a reply with neither text nor calls end the run."""
    items: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        raw = client.responses.with_raw_response.parse(
            model="m", input=items, tools=STRICT_WEATHER, text_format=Forecast
        )
        if raw.http_response.json().get("status") == "incomplete":
            return None  # cut at the token limit: its text or arguments may not parse
        response = raw.parse()
        calls = [item for item in response.output if item.type == "function_call"]
        refused = [part for item in response.output if item.type == "message"
                   for part in item.content if part.type == "refusal"]  # fmt: skip
        if refused:
            return None
        if not calls:
            parsed = response.output_parsed
            return None if parsed is None else parsed.summary  # trusted: the schema's
        items += [{"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments}
                  for c in calls]  # fmt: skip
        items += [{"type": "function_call_output", "call_id": c.call_id,
                   "output": f"{json.loads(c.arguments)['city']}: sunny"} for c in calls]  # fmt: skip
    return None


def trusts_a_loose_format(client: OpenAI, prompt: str) -> str | None:
    """Bug: asks for a format that is not strict and reads the text as if the API held it to the schema (the
    model may answer off it, or in plain words)."""
    messages: Any = [{"role": "user", "content": prompt}]
    completion = client.chat.completions.create(model="m", messages=messages, response_format=FORECAST_TEXT)
    choice = completion.choices[0]
    if choice.finish_reason in ("length", "content_filter") or choice.message.refusal is not None:
        return None
    return str(json.loads(choice.message.content or "")["summary"])


FORCED_TIME: Any = {"type": "function", "function": {"name": "get_time"}}
"""A named `tool_choice`: the API answers the call it forces with `finish_reason: "stop"`."""


def forces_its_tool(client: OpenAI, prompt: str) -> str | None:
    """Forces `get_time` on its first request (then lets the model choose, as openai-agents resets the
    choice) and reads a reply's calls whatever its finish reason says: the forced call ends `stop`."""
    return _careful_chat(
        client, prompt, asked=_first({"tool_choice": FORCED_TIME}), tools=TWO_TOOLS,
        check=_calls_only("get_time", "tool_choice named get_time"),
    )  # fmt: skip


def dispatches_on_finish_reason(client: OpenAI, prompt: str, max_turns: int = 8) -> str | None:
    """Bug: forces `get_time` on its first request, but runs tools only when `finish_reason` says
    `tool_calls`; anything else is the final answer, whose text it reads. The forced call ends `stop`: it is
    dropped, and the answer it reads is no text at all."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for turn in range(max_turns):
        asked: Any = {"tool_choice": FORCED_TIME} if turn == 0 else {}
        completion = client.chat.completions.create(model="m", messages=messages, tools=TWO_TOOLS, **asked)
        choice = completion.choices[0]
        if choice.finish_reason in ("length", "content_filter") or choice.message.refusal is not None:
            return None
        messages.append(choice.message.model_dump(exclude_none=True))
        if choice.finish_reason != "tool_calls":
            answer: Any = choice.message.content  # "stop" means text, it believes
            return str(answer.strip())
        for call in choice.message.tool_calls or []:
            result = weather(call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return None


FUNCTIONS: Any = [{"name": "get_weather", "description": "The weather in a city.", "parameters": PARAMETERS}]
"""The deprecated `functions`, which older loops still send."""


def _legacy_chat(
    client: OpenAI, prompt: str, *, answer: Callable[[Any], Any], max_turns: int = 8
) -> str | None:
    """A loop on the deprecated `functions`: reads a reply's `function_call` (one at most), sends what
    `answer(call)` makes of it back, stops at `length`, `content_filter` and a text answer."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        choice = client.chat.completions.create(model="m", messages=messages, functions=FUNCTIONS).choices[0]
        if choice.finish_reason in ("length", "content_filter"):
            return None
        message = choice.message
        messages.append(message.model_dump(exclude_none=True))
        if message.function_call is None:
            return message.content
        messages.append(answer(message.function_call))
    return None


def calls_legacy_functions(client: OpenAI, prompt: str) -> str | None:
    """The careful legacy loop: each `function_call` answered by a `role: "function"` message."""
    return _legacy_chat(
        client, prompt,
        answer=lambda call: {"role": "function", "name": call.name, "content": weather(call.arguments)},
    )  # fmt: skip


def legacy_answers_with_tool_messages(client: OpenAI, prompt: str) -> str | None:
    """Bug: a loop ported halfway from `tools` to `functions`: it answers a function call with a `tool`
    message, which the API refuses while `functions` are offered."""
    return _legacy_chat(
        client, prompt,
        answer=lambda call: {"role": "tool", "tool_call_id": "call_0", "content": weather(call.arguments)},
    )  # fmt: skip


def legacy_reads_tool_calls(client: OpenAI, prompt: str, max_turns: int = 8) -> str | None:
    """Bug: offers the deprecated `functions` but reads only `message.tool_calls`, as a loop written for
    `tools` does: it never sees a function call, and reads the reply that carries one as its text answer."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        choice = client.chat.completions.create(model="m", messages=messages, functions=FUNCTIONS).choices[0]
        if choice.finish_reason in ("length", "content_filter") or choice.message.refusal is not None:
            return None
        message: Any = choice.message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            answer: Any = message.content  # no tool calls: text, it believes
            return str(answer.strip())
        for call in message.tool_calls:
            result = weather(call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return None


# Custom tools: free-form input (`text`), a `regex` grammar, and a `lark` grammar (an apply_patch-like tool).
PATCH_GRAMMAR = r"""
start: "*** Begin Patch\n" hunk+ "*** End Patch"
hunk: "*** Update File: " PATH "\n" LINE+
PATH: /[a-z]{1,8}\.py/
LINE: /[ +-][a-z =0-9]{0,12}\n/
"""
COMMAND_REGEX = r"(ls|cat|pwd)( [a-z]{1,8}){0,2}"
CUSTOM_TOOLS: Any = [
    {"type": "custom", "custom": {"name": "note", "description": "Keeps.", "format": {"type": "text"}}},
    {"type": "custom", "custom": {"name": "run", "format": {
        "type": "grammar", "grammar": {"syntax": "regex", "definition": COMMAND_REGEX}}}},
    {"type": "custom", "custom": {"name": "apply_patch", "format": {
        "type": "grammar", "grammar": {"syntax": "lark", "definition": PATCH_GRAMMAR}}}},
]  # fmt: skip
CUSTOM_RESPONSES_TOOLS: Any = [
    {"type": "custom", "name": "note", "description": "Keeps a note."},
    {"type": "custom", "name": "run",
     "format": {"type": "grammar", "syntax": "regex", "definition": COMMAND_REGEX}},
    {"type": "custom", "name": "apply_patch",
     "format": {"type": "grammar", "syntax": "lark", "definition": PATCH_GRAMMAR}},
]  # fmt: skip


def custom_tool(name: str, text: str) -> str:
    """The custom tools, careful: their input is text (a grammar's when it has one), read as text."""
    if name == "apply_patch":
        headers = [line for line in text.splitlines() if line.startswith("*** Update File: ")]
        return f"patched {', '.join(h.removeprefix('*** Update File: ') for h in headers) or 'nothing'}"
    if name == "run":
        return f"ran {text.split(' ', 1)[0] or 'nothing'}"
    return f"noted {len(text)} characters"


def _custom_chat(client: OpenAI, prompt: str, result: Callable[[Any], str], max_turns: int = 8) -> str | None:
    """A careful Chat loop offering the custom tools (not streamed), each call answered by `result(call)`."""
    messages: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        choice = client.chat.completions.create(model="m", messages=messages, tools=CUSTOM_TOOLS).choices[0]
        if choice.finish_reason in ("length", "content_filter"):
            return None
        messages.append(choice.message.model_dump(exclude_none=True))
        if not choice.message.tool_calls:
            return choice.message.content
        for call in choice.message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result(call)})
    return None


def _answered(call: Any) -> str:
    """A call of either kind answered with care: a custom call's input as text, a function's arguments."""
    if call.type == "custom":
        return custom_tool(call.custom.name, call.custom.input)
    return weather(call.function.arguments)


def uses_custom_tools(client: OpenAI, prompt: str) -> str | None:
    """Careful: offers a free-form, a regex and a lark tool over Chat, and reads each call's input as text."""
    return _custom_chat(client, prompt, _answered)


def parses_custom_input_as_json(client: OpenAI, prompt: str) -> str | None:
    """Bug: reads a custom tool's free-form input as JSON arguments (`json.loads`), as for a function."""
    return _custom_chat(client, prompt, lambda call: str(json.loads(call.custom.input)))


def assumes_function_calls(client: OpenAI, prompt: str) -> str | None:
    """Bug: assumes every tool call is a function call (`tool_calls[i].function`), as loops written before
    custom tools do."""
    return _custom_chat(client, prompt, lambda call: weather(call.function.arguments))


def _custom_responses(
    client: OpenAI, prompt: str, answers: tuple[str, ...], max_turns: int = 8
) -> str | None:
    """A careful stateless Responses loop offering the custom tools: every output item sent back, and the
    calls of each type in `answers` answered."""
    items: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(max_turns):
        response = client.responses.create(model="m", input=items, tools=CUSTOM_RESPONSES_TOOLS, store=False)
        if response.status == "incomplete":
            return None
        items += [item.model_dump(exclude_none=True) for item in response.output]
        calls = [item for item in response.output if item.type in ("custom_tool_call", "function_call")]
        if not calls:
            return response.output_text
        for call in calls:
            if call.type in answers:
                text = call.input if call.type == "custom_tool_call" else call.arguments
                output = custom_tool(call.name, text)
                items.append({"type": "custom_tool_call_output", "call_id": call.call_id, "output": output})
    return None


def uses_custom_tools_responses(client: OpenAI, prompt: str) -> str | None:
    """Careful: the custom tools over the Responses API, every `custom_tool_call` answered with a
    `custom_tool_call_output`."""
    return _custom_responses(client, prompt, ("custom_tool_call",))


def drops_custom_calls(client: OpenAI, prompt: str) -> str | None:
    """Bug: answers only `function_call` items, so a `custom_tool_call` is never answered."""
    return _custom_responses(client, prompt, ("function_call",))


def legacy_never_sees_its_calls(client: OpenAI, prompt: str) -> str | None:
    """Bug, quiet: offers the deprecated `functions` but looks for calls in `message.tool_calls` only, so a
    reply carrying a `function_call` is taken for its (empty) answer; it raises nothing and asks nothing
    more, so no invariant breaks: the campaign can only say that no call was ever answered."""
    completion = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": prompt}], functions=FUNCTIONS
    )
    message = completion.choices[0].message
    return None if message.tool_calls else message.content


def _queries_logged(response: Any) -> tuple[str | None, list[Any]]:
    searched = [item.action.query for item in response.output if item.type == "web_search_call"]
    return response.output_text + "".join(f" [{query}]" for query in searched), [
        item for item in response.output if item.type == "function_call"
    ]


def logs_every_query(client: OpenAI, prompt: str) -> str | None:
    """Bug: takes every web search call for a search (`action.query`); a call may open a page it found, or
    look for words in it, which has no query."""
    return _searching(client, prompt, _queries_logged)
